//! The per-run token every call to a coordinator carries (`Authorization: Bearer …`): whoever
//! lacks it can neither post a result, nor join the barrier, nor read the clock or the verdict.
//! Generated once per run (`coordinate`, `k8s`), handed to the shards by environment variable
//! ([`TOKEN_ENV`]) or a file, never as an argument, so it is in no command line, result,
//! report or log. Compared in constant time, over SHA-256 digests so that its length does not
//! show either.

use std::fmt;

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// The environment variable a shard (and a coordinator) reads the token from.
pub const TOKEN_ENV: &str = "INFERMETER_COORDINATOR_TOKEN";

/// Bytes of randomness in a generated token (written as hex: 64 characters).
const GENERATED_BYTES: usize = 32;
/// A token given by the user is at least this long: a guessable one protects nothing.
pub const MIN_TOKEN_LEN: usize = 16;
const MAX_TOKEN_LEN: usize = 1024;

/// A coordinator token. Its `Debug` shows `***`: the secret never reaches a log by accident.
#[derive(Clone, PartialEq, Eq)]
pub struct Token(String);

/// Why a text is not a usable token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    #[error("the coordinator token is empty")]
    Empty,
    #[error("the coordinator token is {len} characters long; it needs {MIN_TOKEN_LEN} at least")]
    TooShort { len: usize },
    #[error("the coordinator token is {len} characters long; at most {MAX_TOKEN_LEN}")]
    TooLong { len: usize },
    #[error("the coordinator token may hold only visible ASCII characters (no spaces or controls)")]
    BadCharacter,
}

impl Token {
    /// A new random token: 32 bytes from the operating system's generator, as hex.
    pub fn generate() -> Token {
        let bytes: [u8; GENERATED_BYTES] = rand::random();
        Token(bytes.iter().map(|b| format!("{b:02x}")).collect())
    }

    /// A token as the user gave it (a file's text: surrounding whitespace, a final newline,
    /// is not part of it).
    pub fn parse(text: &str) -> Result<Token, TokenError> {
        let t = text.trim();
        match t.len() {
            0 => Err(TokenError::Empty),
            len if len < MIN_TOKEN_LEN => Err(TokenError::TooShort { len }),
            len if len > MAX_TOKEN_LEN => Err(TokenError::TooLong { len }),
            _ if !t.bytes().all(|b| b.is_ascii_graphic()) => Err(TokenError::BadCharacter),
            _ => Ok(Token(t.to_string())),
        }
    }

    /// The secret itself, for the one place that must write it: a token file or a
    /// Kubernetes Secret.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// The `Authorization` header's value.
    pub(crate) fn bearer(&self) -> String {
        format!("Bearer {}", self.0)
    }

    /// Whether an `Authorization` header's value carries this token, in constant time.
    pub(crate) fn admits(&self, header: Option<&[u8]>) -> bool {
        let presented = header
            .and_then(|h| h.strip_prefix(b"Bearer "))
            .unwrap_or_default();
        let (a, b) = (Sha256::digest(presented), Sha256::digest(self.0.as_bytes()));
        // An empty header compares too, so a missing token costs the same as a wrong one.
        bool::from(a.ct_eq(&b)) && header.is_some()
    }
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Token(***)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_admits_only_itself_and_never_shows() {
        let t = Token::generate();
        assert_eq!(t.expose().len(), 64);
        assert_ne!(t, Token::generate());
        assert!(t.admits(Some(t.bearer().as_bytes())));
        assert!(!t.admits(None));
        assert!(!t.admits(Some(b"Bearer ")));
        assert!(
            !t.admits(Some(t.expose().as_bytes())),
            "the scheme is required"
        );
        let mut wrong = t.bearer().into_bytes();
        *wrong.last_mut().unwrap() ^= 1;
        assert!(!t.admits(Some(&wrong)));
        assert_eq!(format!("{t:?}"), "Token(***)");
    }

    #[test]
    fn a_given_token_is_trimmed_and_must_be_long_and_visible() {
        let t = Token::parse("  0123456789abcdef0123\n").unwrap();
        assert_eq!(t.expose(), "0123456789abcdef0123");
        assert_eq!(Token::parse("\n"), Err(TokenError::Empty));
        assert_eq!(Token::parse("short"), Err(TokenError::TooShort { len: 5 }));
        assert_eq!(
            Token::parse("0123456789 abcdef0123"),
            Err(TokenError::BadCharacter)
        );
    }
}
