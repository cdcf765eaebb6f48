//! Secrets out of every byte infermeter writes. [`secrets`] is the one scrub of the crate: it
//! masks, in any text,
//!
//! - every value the process knows to be secret, by value, wherever it stands and in every
//!   form it may take there (raw, percent-encoded or decoded, JSON-, HTML- or XML-escaped):
//!   the registry ([`register`] and its kin) is filled as soon as a value is known — the
//!   command line ([`register_args`]), the environment ([`register_env_secrets`]), the
//!   scenario's secret params, headers and URLs as they are parsed;
//! - the credentials of every URL (`http://user:pw@host/v1` → `http://***@host/v1`) and the
//!   value of every query parameter named like a secret (`?api_key=…` → `?api_key=***`);
//! - strings shaped like a credential whatever their name (`sk-…`, `hf_…`, `ghp_…`,
//!   `Bearer …`, AWS key ids, JWTs: see `shapes.rs`).
//!
//! Every file a run writes and every line of the console pass through it (the file writers in
//! `files.rs`, the console in `cli/console.rs`, the escapers of `escape.rs`, which scrub
//! before they escape), so a secret reaches no output whichever path carried it there. JSON
//! is scrubbed string by string ([`json`], [`json_strings`]), so that masking never breaks it.
//!
//! A vocabulary module like `units.rs`: any stage may use it; it uses none.

mod args;
mod forms;
mod json;
mod mask;
mod names;
mod registry;
mod scrub;
mod shapes;
mod url;

pub use args::{command_line, register_args};
pub use json::{json, json_strings};
pub use mask::{MASK, MIN_SECRET_LEN};
pub use names::{is_secret_name, mark_secret_name};
pub use registry::{register, register_env, register_env_secrets, register_header, register_url};
pub use scrub::secrets;
