//! Which names hold secrets: a param, header, query parameter, flag, environment variable or
//! JSON field called `api_key`, `X-Api-Key`, `access_token`, `Authorization`, `password`…,
//! and any name the user marked (`param "x" secret=#true`, `--secret x`).

use std::collections::BTreeSet;
use std::sync::{PoisonError, RwLock};

/// Words that make a name a secret's (`api_key` → `api`, `key`).
const WORDS: &[&str] = &[
    "key",
    "token",
    "secret",
    "secrets",
    "password",
    "passwd",
    "pwd",
    "pass",
    "passphrase",
    "auth",
    "authorization",
    "credential",
    "credentials",
    "signature",
    "sig",
    "cookie",
    "session",
    "bearer",
    "jwt",
];

/// Runs of letters that make a name a secret's wherever they stand (`APIKEY`,
/// `x-amz-credential`, `db_passwordhash`).
const PARTS: &[&str] = &[
    "apikey",
    "accesskey",
    "privatekey",
    "secretkey",
    "accesstoken",
    "authtoken",
    "refreshtoken",
    "sessiontoken",
    "idtoken",
    "password",
    "passwd",
    "secret",
    "credential",
    "authoriz",
];

/// Whether a name is one a secret goes in: `api_key`, `apiKey`, `X-Api-Key`, `access_token`,
/// `X-Amz-Signature`, `password`, `Authorization`, `hf_token`, or a name the user marked
/// ([`mark_secret_name`]). Plural counts are not (`max_tokens`, `sessions`), nor
/// `author` or `tokenizer`.
pub fn is_secret_name(name: &str) -> bool {
    let joined: String = name
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect();
    words(name)
        .iter()
        .any(|w| WORDS.contains(&w.trim_end_matches(|c: char| c.is_ascii_digit())))
        || PARTS.iter().any(|p| joined.contains(p))
        || is_marked(name)
}

/// The names the user marked secret (`param "x" secret=#true`, `--secret x`, a
/// `--param-env` param), lower-cased.
static MARKED: RwLock<BTreeSet<String>> = RwLock::new(BTreeSet::new());

/// Marks a name as a secret's: [`is_secret_name`] is true for it from now on, so its value is
/// masked wherever names are looked at (params, headers, query parameters, the command line).
pub fn mark_secret_name(name: &str) {
    let n = name.trim().to_ascii_lowercase();
    if !n.is_empty() {
        MARKED
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(n);
    }
}

fn is_marked(name: &str) -> bool {
    let marked = MARKED.read().unwrap_or_else(PoisonError::into_inner);
    !marked.is_empty() && marked.contains(&name.trim().to_ascii_lowercase())
}

/// `X-Api-Key` → `x`, `api`, `key`; `apiKey` → `api`, `key`; `APIKey` → `apikey`.
fn words(name: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut prev_lower = false;
    for c in name.chars() {
        if !c.is_ascii_alphanumeric() {
            prev_lower = false;
            if !word.is_empty() {
                out.push(std::mem::take(&mut word));
            }
            continue;
        }
        if c.is_ascii_uppercase() && prev_lower && !word.is_empty() {
            out.push(std::mem::take(&mut word));
        }
        prev_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
        word.push(c.to_ascii_lowercase());
    }
    if !word.is_empty() {
        out.push(word);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_names() {
        for n in [
            "api_key",
            "apiKey",
            "APIKEY",
            "KEY",
            "X-Api-Key",
            "access_token",
            "hf_token",
            "password",
            "db_password",
            "Authorization",
            "Proxy-Authorization",
            "client_secret",
            "X-Amz-Signature",
            "X-Amz-Credential",
            "sig",
            "Cookie",
            "OPENAI_API_KEY",
        ] {
            assert!(is_secret_name(n), "{n}");
        }
        for n in [
            "model",
            "n",
            "mode",
            "stream",
            "signal",
            "max_tokens",
            "input_tokens",
            "tokenizer",
            "author",
            "sessions",
            "monkey",
            "keep_alive",
        ] {
            assert!(!is_secret_name(n), "{n}");
        }
    }

    #[test]
    fn words_split_at_separators_and_case() {
        assert_eq!(words("X-Api-Key"), ["x", "api", "key"]);
        assert_eq!(words("apiKey"), ["api", "key"]);
        assert_eq!(words("hf_token2"), ["hf", "token2"]);
    }
}
