//! Strings shaped like a credential, masked whatever name they stand under (a param called
//! `x` holding an OpenAI key is still a key). Each shape is a vendor's documented token
//! prefix followed by enough token characters that ordinary text does not match it:
//!
//! | shape | what |
//! | --- | --- |
//! | `sk-…`, `sk-proj-…`, `sk-ant-…` (8+ more) | OpenAI, Anthropic and compatible API keys |
//! | `hf_…` (8+) | Hugging Face tokens |
//! | `ghp_`, `gho_`, `ghu_`, `ghs_`, `ghr_…` (8+), `github_pat_…` | GitHub tokens |
//! | `glpat-…` (8+) | GitLab tokens |
//! | `xoxb-`, `xoxp-`, `xoxa-`, `xoxr-`, `xoxs-…` (8+) | Slack tokens |
//! | `AKIA…`, `ASIA…` (16 upper-case letters or digits) | AWS access key ids |
//! | `AIza…` (35) | Google API keys |
//! | `eyJ….….…` | a JWT (three dot-separated base64url parts, the first a JSON object) |
//! | `Bearer …`, `Basic …` (8+) | an `Authorization` header's credential (the scheme kept) |
//!
//! A shape starts at a word boundary (`task-1234abcd…` is not `sk-…`; nor is a run inside
//! base64, after a `+` or `/`, so a stored histogram is never cut). Prompts, which may
//! hold anything, are not written to any output, so these rarely meet ordinary text.

use std::borrow::Cow;
use std::sync::OnceLock;

use regex::{Captures, Regex};

use super::mask::MASK;

fn pattern() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        // `pre` keeps the boundary character, `scheme` an auth scheme; the rest is masked.
        Regex::new(
            r"(?x)
            (?P<pre>^|[^A-Za-z0-9_+/-])
            (?:
                sk-[A-Za-z0-9_-]{8,}
              | hf_[A-Za-z0-9]{8,}
              | gh[pousr]_[A-Za-z0-9]{8,}
              | github_pat_[A-Za-z0-9_]{8,}
              | glpat-[A-Za-z0-9_-]{8,}
              | xox[abposr]-[A-Za-z0-9-]{8,}
              | (?:AKIA|ASIA)[A-Z0-9]{16}
              | AIza[A-Za-z0-9_-]{35}
              | eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*
              | (?P<scheme>(?i:bearer|basic)[\ \t]+)[A-Za-z0-9._~+/=-]{8,}
            )",
        )
        .expect("the secret shapes are a valid pattern")
    })
}

/// `text` with every secret-shaped string masked.
pub(super) fn mask_shapes(text: &str) -> Cow<'_, str> {
    if !pattern().captures_iter(text).any(|c| is_credential(&c)) {
        return Cow::Borrowed(text);
    }
    pattern().replace_all(text, |c: &Captures<'_>| {
        let pre = c.name("pre").map_or("", |m| m.as_str());
        match c.name("scheme") {
            _ if !is_credential(c) => c[0].to_string(),
            Some(scheme) => format!("{pre}{}{MASK}", scheme.as_str()),
            None => format!("{pre}{MASK}"),
        }
    })
}

/// Whether a match is a credential: `Basic statistics` and `Bearer authentication` are not
/// (a credential after a scheme is not one word of letters).
fn is_credential(c: &Captures<'_>) -> bool {
    let (Some(pre), Some(scheme)) = (c.name("pre"), c.name("scheme")) else {
        return true;
    };
    let credential = &c[0][pre.len() + scheme.len()..];
    !credential.chars().all(|ch| ch.is_ascii_alphabetic())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_are_masked() {
        for (text, want) in [
            ("key sk-abcdef123456", "key ***"),
            ("sk-proj-AbCdEf_123-456xyz", "***"),
            ("(hf_abcdefghijklmnop)", "(***)"),
            ("ghp_0123456789abcdefABCDEF", "***"),
            ("github_pat_11ABCDEFG_abcdef", "***"),
            ("xoxb-1234-5678-abcdef", "***"),
            ("AKIAIOSFODNN7EXAMPLE", "***"),
            ("a eyJhbGciOi.eyJzdWIiOi.sig-part_1 b", "a *** b"),
            (
                "Authorization: Bearer abc.def-123_456",
                "Authorization: Bearer ***",
            ),
            ("basic dXNlcjpwYXNzd29yZA==", "basic ***"),
            ("\"sk-0123456789\"", "\"***\""),
        ] {
            assert_eq!(mask_shapes(text), want, "{text}");
        }
    }

    #[test]
    fn ordinary_text_is_left_alone() {
        for text in [
            "task-1234567890 risk-assessment-stage",
            "sk-learn",
            "hf_x",
            "Bearer x",
            "1024 tokens, p99 12.5 ms",
            "the bearer of news",
            "ASIA pacific",
            "HISTFAAAAJx4nO2aeyJhbGci",
            "basic statistics",
            "Bearer authentication",
            "HISTFAAA/AKIAIOSFODNN7EXAMPLE+sk-abcdefghijk",
        ] {
            assert!(matches!(mask_shapes(text), Cow::Borrowed(_)), "{text}");
        }
    }
}
