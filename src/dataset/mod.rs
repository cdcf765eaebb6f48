//! Request content: token-length distributions, tokenizers, and synthetic prompts of exact
//! token length. The plan decides *how long* each request is; this module turns a
//! [`RequestRecipe`](crate::plan::RequestRecipe) into text at send time.

mod error;
mod length;
mod prompt;
mod tokenizer;
mod words;

pub use error::DatasetError;
pub use length::validate_length;
pub use prompt::{Prompt, PromptFactory};
pub use tokenizer::Tokenizer;
