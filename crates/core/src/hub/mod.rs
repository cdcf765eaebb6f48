//! Data set files from the Hugging Face Hub: `hf://datasets/OWNER/NAME[@REVISION]/PATH`
//! references ([`HfFile`]), the local cache they are resolved through ([`HubCache`], the same
//! layout as `huggingface_hub`'s, so a file that `huggingface-cli download` fetched is found
//! too), a resumable, checksummed download into it ([`fetch`]), and the recipes that turn a
//! benchmark's question set into a scored data set's JSONL ([`Recipe`]).
//!
//! Scenarios name a cached file; the plan compiler resolves it with [`HubCache::resolve`] and
//! never downloads: a run reads only what `infermeter dataset fetch` put there.

mod cache;
mod error;
mod fetch;
mod recipe;
mod uri;

pub use cache::{HubCache, HubConfig};
pub use error::{HubError, Received};
pub use fetch::{FetchEvent, Fetched, fetch};
pub use recipe::{Converted, Recipe, RecipeError};
pub use uri::{HfFile, SHAREGPT};
