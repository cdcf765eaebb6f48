//! The one scrub: registered values (in all their forms), then URL credentials and secret
//! query values, then secret-shaped strings, in one function every writer calls.

use std::borrow::Cow;

use super::{registry, shapes, url};

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
    use crate::redact::register;

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
