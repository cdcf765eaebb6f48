//! `infermeter dataset fetch sharegpt|hf REPO PATH`: downloads a Hub data set file into the
//! local cache (see [`crate::app::fetch_dataset`]) with progress lines, and prints the `hf://` reference a
//! scenario names it by.

mod printer;

use clap::{Args, Subcommand};

use crate::app::{self, DatasetSource, FetchedDataset};
use crate::error::Error;
use printer::{Printer, mb};

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
    let source = match fetch.source {
        FetchSource::Sharegpt { revision } => DatasetSource::ShareGpt { revision },
        FetchSource::Hf {
            repo,
            path,
            revision,
        } => DatasetSource::Hub {
            repo,
            path,
            revision,
        },
    };
    let mut printer = Printer::new();
    let FetchedDataset { uri, file: fetched } =
        app::fetch_dataset(&source, fetch.retries, &mut |e| printer.event(e))?;
    outln!("{uri}");
    outln!("  path    {}", fetched.path.display());
    outln!("  size    {}", mb(fetched.size));
    outln!(
        "  sha256  {} ({})",
        fetched.sha256,
        if fetched.verified {
            "matches the Hub's"
        } else {
            "recorded: the Hub gives no sha256 for this file"
        }
    );
    outln!("  commit  {}", fetched.commit);
    if fetched.cached {
        outln!("  (already in the cache; nothing downloaded)");
    }
    outln!("name it in a scenario as: \"{uri}\"");
    Ok(())
}
