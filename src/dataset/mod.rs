//! Request content: token-length distributions, tokenizers, and synthetic prompts of exact
//! token length. The plan decides *how long* each request is; this module turns a
//! [`RequestRecipe`](crate::plan::RequestRecipe) into text at send time.

mod compose;
mod error;
mod jsonl;
mod length;
mod prompt;
mod session;
mod sharegpt;
mod source;
mod tokenizer;
mod trace;
mod words;

pub use error::DatasetError;
pub use jsonl::load_jsonl;
pub use length::validate_length;
pub use prompt::{Prompt, PromptFactory};
pub use sharegpt::{Loaded, load_sharegpt};
pub use tokenizer::Tokenizer;
pub use trace::load_trace;
