//! `infermeter dataset fetch sharegpt|hf REPO PATH`: downloads a Hub data set file into the
//! local cache (see [`crate::hub`]) with progress lines, and prints the `hf://` reference a
//! scenario names it by.

use std::time::Instant;

use clap::{Args, Subcommand};

use crate::error::Error;
use crate::hub::{FetchEvent, HfFile, HubConfig};

#[derive(Debug, Args)]
pub struct DatasetArgs {
    #[command(subcommand)]
    pub command: DatasetCommand,
}

#[derive(Debug, Subcommand)]
pub enum DatasetCommand {
    /// Download a data set file from the Hugging Face Hub into the local cache (resumable,
    /// checksummed). Honours HF_ENDPOINT, HF_HOME, HF_HUB_CACHE, HF_TOKEN and HF_HUB_OFFLINE.
    Fetch(FetchArgs),
}

#[derive(Debug, Args)]
pub struct FetchArgs {
    #[command(subcommand)]
    pub source: FetchSource,

    /// How often a broken download is resumed before giving up.
    #[arg(long, global = true, default_value_t = 3, value_name = "N")]
    pub retries: u32,
}

#[derive(Debug, Subcommand)]
pub enum FetchSource {
    /// ShareGPT_V3_unfiltered_cleaned_split.json from anon8231489123/ShareGPT_Vicuna_unfiltered,
    /// the file vLLM's serving benchmark uses.
    Sharegpt {
        /// Branch, tag or commit.
        #[arg(long, default_value = "main")]
        revision: String,
    },
    /// Any file of a Hub data set repository.
    Hf {
        /// The repository, OWNER/NAME.
        repo: String,
        /// The file's path in the repository.
        path: String,
        /// Branch, tag or commit.
        #[arg(long, default_value = "main")]
        revision: String,
    },
}

pub fn run(args: DatasetArgs) -> Result<(), Error> {
    let DatasetCommand::Fetch(fetch) = args.command;
    let file = match &fetch.source {
        FetchSource::Sharegpt { revision } => HfFile::new(
            crate::hub::SHAREGPT.0,
            crate::hub::SHAREGPT.1,
            Some(revision),
        ),
        FetchSource::Hf {
            repo,
            path,
            revision,
        } => HfFile::new(repo, path, Some(revision)),
    }?;
    let config = HubConfig::from_env();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(Error::Runtime)?;
    let mut printer = Printer::new();
    let fetched = runtime.block_on(crate::hub::fetch(&config, &file, fetch.retries, &mut |e| {
        printer.event(e)
    }))?;
    println!("{}", file.uri());
    println!("  path    {}", fetched.path.display());
    println!("  size    {}", mb(fetched.size));
    println!(
        "  sha256  {} ({})",
        fetched.sha256,
        if fetched.verified {
            "matches the Hub's"
        } else {
            "recorded: the Hub gives no sha256 for this file"
        }
    );
    println!("  commit  {}", fetched.commit);
    if fetched.cached {
        println!("  (already in the cache; nothing downloaded)");
    }
    println!("name it in a scenario as: \"{}\"", file.uri());
    Ok(())
}

/// Progress on stderr: a line when the download starts, every few seconds, on a retry.
struct Printer {
    last: Option<Instant>,
    started: Instant,
}

impl Printer {
    fn new() -> Self {
        Printer {
            last: None,
            started: Instant::now(),
        }
    }

    fn event(&mut self, e: FetchEvent) {
        match e {
            FetchEvent::Start { url, size, from } => {
                if from > 0 {
                    eprintln!("resuming {url} at {} of {}", mb(from), mb(size));
                } else {
                    eprintln!("downloading {url} ({})", mb(size));
                }
            }
            FetchEvent::Progress { done, total } => {
                let now = Instant::now();
                if self
                    .last
                    .is_none_or(|t| now.duration_since(t).as_secs() >= 2)
                    || done == total
                {
                    self.last = Some(now);
                    let pct = if total == 0 {
                        100.0
                    } else {
                        done as f64 * 100.0 / total as f64
                    };
                    eprintln!(
                        "  {} of {} ({pct:.0}%, {:.0}s)",
                        mb(done),
                        mb(total),
                        self.started.elapsed().as_secs_f64()
                    );
                }
            }
            FetchEvent::Retry {
                from,
                attempt,
                reason,
            } => eprintln!(
                "  connection broke ({reason}); retry {attempt} from {}",
                mb(from)
            ),
            FetchEvent::Verifying => eprintln!("  computing sha256…"),
        }
    }
}

fn mb(bytes: u64) -> String {
    if bytes < 1 << 20 {
        format!("{bytes} bytes")
    } else {
        format!("{:.1} MB", bytes as f64 / 1e6)
    }
}
