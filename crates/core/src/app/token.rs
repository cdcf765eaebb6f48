//! Where a distributed run's token comes from (see `coordinate::Token`): a file named on the
//! command line, else the `INFERMETER_COORDINATOR_TOKEN` environment variable — never an
//! argument, so it is in no command line, process list or recorded provenance. A coordinator
//! given a file that does not exist yet draws a new token and writes it there, readable by
//! its owner only, for the shards to read.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use crate::coordinate::{TOKEN_ENV, Token};
use crate::error::Error;

/// A token file holds one token: a few dozen bytes; anything longer is not one.
const MAX_TOKEN_FILE: u64 = 4096;

/// A coordinator's token, and the file it was just written to when it was drawn here.
#[derive(Debug)]
pub struct CoordinatorToken {
    pub token: Token,
    /// `Some` when the token was drawn now and written to this new file.
    pub created: Option<PathBuf>,
}

/// The token a shard presents: from `file` when given, else from the environment.
pub fn shard_token(file: Option<&Path>) -> Result<Token, Error> {
    match file {
        Some(f) => read(f),
        None => from_env()?.ok_or_else(|| {
            Error::usage(
                "a coordinated shard needs the run's token",
                format!(
                    "set {TOKEN_ENV} (as the coordinator's) or pass --coordinator-token-file FILE"
                ),
            )
        }),
    }
}

/// The token a coordinator requires: from `file` when it exists (drawn and written there
/// when it does not), else from the environment.
pub fn coordinator_token(file: Option<&Path>) -> Result<CoordinatorToken, Error> {
    if let Some(f) = file {
        return match std::fs::symlink_metadata(f) {
            Ok(_) => read(f).map(|token| CoordinatorToken {
                token,
                created: None,
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let token = Token::generate();
                write_new(f, &token)?;
                Ok(CoordinatorToken {
                    token,
                    created: Some(f.to_path_buf()),
                })
            }
            Err(source) => Err(Error::Io {
                action: "read the token file",
                path: f.to_path_buf(),
                source,
            }),
        };
    }
    match from_env()? {
        Some(token) => Ok(CoordinatorToken {
            token,
            created: None,
        }),
        None => Err(Error::usage(
            "the coordinator needs a token that every shard will present",
            format!(
                "pass --token-file FILE (a new token is written there when FILE does not \
                 exist; give it to the shards with --coordinator-token-file) or set {TOKEN_ENV}"
            ),
        )),
    }
}

fn from_env() -> Result<Option<Token>, Error> {
    match std::env::var(TOKEN_ENV) {
        Ok(v) if v.is_empty() => Ok(None),
        Ok(v) => Token::parse(&v).map(Some).map_err(|e| {
            Error::usage(format!("{TOKEN_ENV}: {e}"), "use a token `coordinate` drew")
        }),
        Err(std::env::VarError::NotPresent) => Ok(None),
        Err(std::env::VarError::NotUnicode(_)) => Err(Error::usage(
            format!("{TOKEN_ENV} is not text"),
            "use a token `coordinate` drew",
        )),
    }
}

fn read(path: &Path) -> Result<Token, Error> {
    let text = crate::files::read_text(path, MAX_TOKEN_FILE).map_err(|source| Error::Io {
        action: "read the token file",
        path: path.to_path_buf(),
        source,
    })?;
    Token::parse(&text).map_err(|e| {
        Error::usage(
            format!("{}: {e}", path.display()),
            "use the file `coordinate --token-file` wrote",
        )
    })
}

/// Writes `token` to a new file at `path`, readable by its owner only.
fn write_new(path: &Path, token: &Token) -> Result<(), Error> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let io = |source| Error::Io {
        action: "write the token file",
        path: path.to_path_buf(),
        source,
    };
    let mut f = options.open(path).map_err(io)?;
    f.write_all(format!("{}\n", token.expose()).as_bytes())
        .map_err(io)?;
    f.sync_all().map_err(io)
}
