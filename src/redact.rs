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
mod names;
mod registry;
mod shapes;
mod url;

use std::borrow::Cow;

pub use args::{command_line, register_args};
pub use json::{json, json_strings};
pub use names::is_secret_name;
pub use registry::{
    MIN_SECRET_LEN, mark_secret_name, register, register_env, register_env_secrets,
    register_header, register_url,
};

/// What a secret is replaced with.
pub const MASK: &str = "***";

/// `text` with every secret in it masked: registered values (in all their forms), URL
/// credentials and secret query values, secret-shaped strings. Text with nothing secret in
/// it comes back unchanged and unallocated.
pub fn secrets(text: &str) -> Cow<'_, str> {
    let by_value = registry::mask_values(text);
    let by_url = match url::mask_urls(&by_value) {
        Cow::Borrowed(_) => by_value,
        Cow::Owned(s) => Cow::Owned(s),
    };
    match shapes::mask_shapes(&by_url) {
        Cow::Borrowed(_) => by_url,
        Cow::Owned(s) => Cow::Owned(s),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_of_secret_goes_in_one_pass() {
        register("v4lue-only-known-by-value");
        let text = "a v4lue-only-known-by-value, http://u:p@h/v1?token=t and Bearer abcdefgh1234";
        assert_eq!(
            secrets(text),
            "a ***, http://***@h/v1?token=*** and Bearer ***"
        );
    }

    #[test]
    fn text_without_secrets_is_borrowed() {
        for s in [
            "sim",
            "http://127.0.0.1:8000/v1",
            "1024 tokens, p99 12.5 ms",
        ] {
            assert!(matches!(secrets(s), Cow::Borrowed(_)), "{s}");
        }
    }
}
