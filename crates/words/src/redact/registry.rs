//! The process's secrets: every value known to be secret, registered as soon as it is known,
//! and the names the user marked secret. One registry for the process, so that a writer
//! anywhere masks what any other part learned, without the value being passed around.
//!
//! Values shorter than [`MIN_SECRET_LEN`] characters are not masked by value (they would
//! mask ordinary words and numbers); they are still masked where they stand (a URL's
//! password, a secret-named param's or header's value).

use std::borrow::Cow;
use std::collections::BTreeSet;
use std::sync::{PoisonError, RwLock};

use aho_corasick::{AhoCorasick, MatchKind};

use super::mask::{MASK, MIN_SECRET_LEN};
use super::names::is_secret_name;

/// A URL's user name is masked by value only from this length: shorter ones are words
/// (`admin`, `user`) that would be masked everywhere else too.
const MIN_USER_LEN: usize = 8;

/// An environment variable's value is registered from this length (shorter ones are flags
/// and counts, not keys).
const MIN_ENV_LEN: usize = 8;

struct Registry {
    values: BTreeSet<String>,
    forms: BTreeSet<String>,
    matcher: Option<AhoCorasick>,
}

static REGISTRY: RwLock<Registry> = RwLock::new(Registry {
    values: BTreeSet::new(),
    forms: BTreeSet::new(),
    matcher: None,
});

/// Registers `value` as secret: from now on it is masked, in every form it may take, in
/// everything [`super::secrets`] scrubs. Too short a value (or a mask) is ignored.
pub fn register(value: &str) {
    for v in [value, value.trim()] {
        if v.chars().count() < MIN_SECRET_LEN || v.chars().all(|c| c == '*') {
            continue;
        }
        let mut r = REGISTRY.write().unwrap_or_else(PoisonError::into_inner);
        if !r.values.insert(v.to_string()) {
            continue;
        }
        r.forms.extend(super::forms::of(v));
        r.matcher = AhoCorasick::builder()
            .match_kind(MatchKind::LeftmostLongest)
            .build(&r.forms)
            .ok();
    }
}

/// Registers the value of environment variable `name`, when set (`api-key env="NAME"`).
pub fn register_env(name: &str) {
    if let Some(v) = std::env::var_os(name) {
        register(&v.to_string_lossy());
    }
}

/// Registers the value of every environment variable named like a key, token, secret or
/// password (`OPENAI_API_KEY`, `HF_TOKEN`, `GITHUB_TOKEN`, `AWS_SECRET_ACCESS_KEY`), so that
/// a credential the process was given reaches no output even where nothing names it.
pub fn register_env_secrets() {
    for (name, value) in std::env::vars_os() {
        let (name, value) = (name.to_string_lossy(), value.to_string_lossy());
        if value.chars().count() >= MIN_ENV_LEN && is_secret_env_name(&name) {
            register(&value);
        }
    }
}

/// `OPENAI_API_KEY`, `HF_TOKEN`, `DB_PASSWORD`: a word of the name (split at `_`) is one a
/// credential goes in. Stricter than [`super::is_secret_name`]: the environment is full of
/// `SESSION`, `AUTH` and `PWD` variables that hold no secret (`XDG_SESSION_TYPE`,
/// `SSH_AUTH_SOCK`, the working directory).
fn is_secret_env_name(name: &str) -> bool {
    name.split(|c: char| !c.is_ascii_alphanumeric()).any(|w| {
        matches!(
            w.to_ascii_uppercase().as_str(),
            "KEY" | "APIKEY" | "TOKEN" | "SECRET" | "PASSWORD" | "PASSWD" | "CREDENTIALS"
        )
    })
}

/// Registers the secrets of a URL: its password, its user name (when long enough to be
/// told from a word), the values of its secret-named query and fragment parameters.
pub fn register_url(text: &str) {
    let Ok(url) = url::Url::parse(text.trim()) else {
        // What the parser rejects: everything between `://` and the last `@` of its authority.
        if let Some(userinfo) = super::url::unparsed_userinfo(text) {
            let (user, password) = userinfo.split_once(':').unwrap_or((userinfo, ""));
            register(password);
            register_user(user);
        }
        return;
    };
    register_user(url.username());
    if let Some(p) = url.password() {
        register(p);
    }
    for part in [url.query(), url.fragment()].into_iter().flatten() {
        for pair in part.split('&') {
            if let Some((k, v)) = pair.split_once('=')
                && is_secret_name(&percent(k))
            {
                register(v);
            }
        }
    }
}

fn register_user(user: &str) {
    if percent(user).chars().count() >= MIN_USER_LEN {
        register(user);
    }
}

fn percent(s: &str) -> Cow<'_, str> {
    percent_encoding::percent_decode_str(s).decode_utf8_lossy()
}

/// Registers a header's value when its name is a secret's: `Authorization: Bearer KEY`
/// registers `Bearer KEY` and `KEY`.
pub fn register_header(name: &str, value: &str) {
    if !is_secret_name(name) {
        return;
    }
    register(value);
    if let Some((_, credential)) = value.trim().split_once(char::is_whitespace) {
        register(credential.trim());
    }
}

/// `text` with every registered value masked. A match inside a longer digest or encoded
/// blob (a plan hash, a stored histogram) that is not the whole of it is left: a short hex
/// password must not corrupt a hash.
pub(super) fn mask_values(text: &str) -> Cow<'_, str> {
    let r = REGISTRY.read().unwrap_or_else(PoisonError::into_inner);
    let Some(m) = &r.matcher else {
        return Cow::Borrowed(text);
    };
    let mut out = String::new();
    let mut last = 0;
    for found in m.find_iter(text) {
        let (s, e) = (found.start(), found.end());
        if inside_blob(text.as_bytes(), s, e) {
            continue;
        }
        out.push_str(&text[last..s]);
        out.push_str(MASK);
        last = e;
    }
    if last == 0 && out.is_empty() {
        return Cow::Borrowed(text);
    }
    out.push_str(&text[last..]);
    Cow::Owned(out)
}

/// Whether `s..e` lies strictly inside a run of at least 32 lowercase hex digits or 64
/// base64 characters (and is made of them).
fn inside_blob(b: &[u8], s: usize, e: usize) -> bool {
    let hex = |c: u8| c.is_ascii_digit() || (b'a'..=b'f').contains(&c);
    let b64 = |c: u8| c.is_ascii_alphanumeric() || matches!(c, b'+' | b'/' | b'=');
    [(&hex as &dyn Fn(u8) -> bool, 32), (&b64, 64)]
        .into_iter()
        .any(|(class, min)| {
            if !b[s..e].iter().all(|&c| class(c)) {
                return false;
            }
            let l = s - b[..s].iter().rev().take_while(|&&c| class(c)).count();
            let r = e + b[e..].iter().take_while(|&&c| class(c)).count();
            r - l >= min && (l, r) != (s, e)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_registered_value_is_masked_in_its_forms() {
        register("pa)ss'w!rd*~$&;=");
        for text in [
            "pa)ss'w!rd*~$&;=",
            "pa%29ss%27w%21rd%2A%7E%24%26%3B%3D",
            "pa)ss&#x27;w!rd*~$&amp;;=",
        ] {
            let got = super::super::secrets(text);
            assert_eq!(got, MASK, "{text}");
        }
    }

    #[test]
    fn short_values_and_masks_are_not_registered() {
        register("abc");
        register("****");
        assert_eq!(mask_values("abc ****"), "abc ****");
    }

    #[test]
    fn a_hash_is_not_corrupted_by_a_short_hex_secret() {
        register("beefcafe");
        let hash = "0123456789abcdefbeefcafe0123456789abcdef";
        assert_eq!(mask_values(hash), hash);
        assert_eq!(mask_values("key beefcafe."), "key ***.");
    }

    #[test]
    fn marked_names_are_secret_names() {
        assert!(!super::is_secret_name("deployment_name_x"));
        crate::redact::mark_secret_name("deployment_name_x");
        assert!(super::is_secret_name("deployment_name_x"));
    }

    #[test]
    fn env_names() {
        for n in [
            "OPENAI_API_KEY",
            "HF_TOKEN",
            "DB_PASSWORD",
            "AWS_SECRET_ACCESS_KEY",
        ] {
            assert!(is_secret_env_name(n), "{n}");
        }
        for n in [
            "XDG_SESSION_TYPE",
            "SSH_AUTH_SOCK",
            "PWD",
            "OLDPWD",
            "MAX_TOKENS",
        ] {
            assert!(!is_secret_env_name(n), "{n}");
        }
    }

    #[test]
    fn url_secrets_are_registered() {
        register_url("http://longusername:p%40ss)word@host/v1?api-key=k3y-v4lue&x=1");
        let text = "p@ss)word k3y-v4lue longusername";
        assert_eq!(super::super::secrets(text), "*** *** ***");
    }
}
