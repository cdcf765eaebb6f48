//! `infermeter dataset fetch sharegpt|hf REPO PATH`: downloads a Hub data set file into the
//! local cache (see [`crate::app::fetch_dataset`]) with progress lines, and prints the `hf://` reference a
//! scenario names it by. `dataset fetch gsm8k|mmlu` fetches a benchmark's question set the
//! same way and converts it into a scored data set's JSONL ([`crate::app::fetch_recipe`]).

mod printer;

use clap::{Args, Subcommand};

use std::path::PathBuf;

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
    /// GSM8K's test split (openai/gsm8k), converted into JSONL with each answer's final
    /// number as the reference (score it with `score "number"`).
    Gsm8k(RecipeArgs),
    /// MMLU's test split, every subject (cais/mmlu), converted into JSONL with the choices
    /// and the right letter as the reference (score it with `score "choice"`).
    Mmlu(RecipeArgs),
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

#[derive(Debug, Args)]
pub struct RecipeArgs {
    /// The JSONL file to write.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Convert this local copy of the split (the Hub's Parquet file, or JSONL with its
    /// fields) instead of downloading it.
    #[arg(long, value_name = "FILE")]
    pub from: Option<PathBuf>,
    /// Overwrite the output file.
    #[arg(long)]
    pub force: bool,
    /// Branch, tag or commit.
    #[arg(long, default_value = "main")]
    pub revision: String,
}

pub fn run(args: DatasetArgs) -> Result<(), Error> {
    let DatasetCommand::Fetch(fetch) = args.command;
    let (recipe, r) = match fetch.source {
        FetchSource::Gsm8k(r) => (app::Recipe::Gsm8k, r),
        FetchSource::Mmlu(r) => (app::Recipe::Mmlu, r),
        other => return fetch_file(other, fetch.retries),
    };
    let out = r
        .out
        .unwrap_or_else(|| PathBuf::from(format!("{}.jsonl", recipe.name())));
    let mut printer = Printer::new();
    let (fetched, done) = app::fetch_recipe(
        recipe,
        &r.revision,
        r.from.as_deref(),
        (&out, r.force),
        fetch.retries,
        &mut |e| printer.event(e),
    )?;
    if let Some(f) = fetched {
        outln!("{}  ({}, sha256 {})", f.uri, mb(f.file.size), f.file.sha256);
    }
    outln!(
        "wrote {} records to {} ({} source rows skipped: no usable answer)",
        done.records,
        done.path.display(),
        done.skipped
    );
    outln!(
        "name it in a scenario as: jsonl \"{}\" max-tokens=512, with quality {{ score \"{}\" }}",
        done.path.display(),
        recipe.scorer()
    );
    Ok(())
}

/// `sharegpt` and `hf`: one Hub file into the cache.
fn fetch_file(source: FetchSource, retries: u32) -> Result<(), Error> {
    let source = match source {
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
        FetchSource::Gsm8k(_) | FetchSource::Mmlu(_) => {
            return Err(Error::usage(
                "a recipe is not one file",
                "run `infermeter dataset fetch gsm8k` or `mmlu`",
            ));
        }
    };
    let mut printer = Printer::new();
    let FetchedDataset { uri, file: fetched } =
        app::fetch_dataset(&source, retries, &mut |e| printer.event(e))?;
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
