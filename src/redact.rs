//! Secrets out of everything infermeter shows: [`secrets`] replaces the credentials of every
//! URL in a text (`http://user:secret@host/v1` → `http://***@host/v1`) and the value of every
//! query parameter named like a key or a token (`?api_key=…` → `?api_key=***`). The one
//! redaction of the crate: results' `target.endpoint`, `infermeter plan`'s output, error
//! messages and warnings all pass through it, so a secret in a target URL reaches no file and
//! no log. A vocabulary module like `units.rs`: any stage may use it, it uses none.
//!
//! URLs are parsed with the `url` crate (the WHATWG parser reqwest itself uses), so what is
//! redacted is exactly what a client would send as credentials; a URL-like token it cannot
//! parse still loses everything between `://` and the last `@` of its authority.

use std::borrow::Cow;

/// What a secret is replaced with.
pub const MASK: &str = "***";

/// `text` with the credentials and secret query values of every URL in it masked. Text
/// without a URL comes back unchanged (and unallocated); so does a URL with nothing secret
/// in it, byte for byte.
pub fn secrets(text: &str) -> Cow<'_, str> {
    if !text.contains("://") {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    let mut changed = false;
    while let Some(sep) = rest.find("://") {
        let start = rest[..sep]
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
            .map_or(0, |i| i + 1);
        let end = rest[sep..]
            .find(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '<' | '>' | '`' | ')'))
            .map_or(rest.len(), |i| sep + i);
        out.push_str(&rest[..start]);
        let token = &rest[start..end];
        match redact_url(token) {
            Some(r) => {
                out.push_str(&r);
                changed = true;
            }
            None => out.push_str(token),
        }
        rest = &rest[end..];
    }
    if !changed {
        return Cow::Borrowed(text);
    }
    out.push_str(rest);
    Cow::Owned(out)
}

/// The redacted form of one URL, `None` when nothing in it is secret.
fn redact_url(token: &str) -> Option<String> {
    let Ok(mut url) = url::Url::parse(token) else {
        return redact_unparsed(token);
    };
    let mut changed = false;
    if !url.username().is_empty() || url.password().is_some() {
        // Fails only for URLs that cannot have credentials, which then have none.
        let _ = url.set_password(None);
        let _ = url.set_username(MASK);
        changed = true;
    }
    if let Some(query) = url.query().and_then(redact_pairs) {
        url.set_query(Some(&query));
        changed = true;
    }
    if let Some(fragment) = url.fragment().and_then(redact_pairs) {
        url.set_fragment(Some(&fragment));
        changed = true;
    }
    changed.then(|| url.into())
}

/// `a=1&api_key=s` → `a=1&api_key=***`, keeping every other pair as written; `None` when no
/// key is secret.
fn redact_pairs(pairs: &str) -> Option<String> {
    let mut changed = false;
    let parts: Vec<Cow<'_, str>> = pairs
        .split('&')
        .map(|part| {
            let raw_key = part.split('=').next().unwrap_or_default();
            let key = url::form_urlencoded::parse(raw_key.as_bytes())
                .next()
                .map_or_else(|| raw_key.to_string(), |(k, _)| k.into_owned());
            if is_secret_name(&key) && part.len() > raw_key.len() {
                changed = true;
                Cow::Owned(format!("{raw_key}={MASK}"))
            } else {
                Cow::Borrowed(part)
            }
        })
        .collect();
    changed.then(|| parts.join("&"))
}

/// Whether a parameter (or header) name is one a secret goes in: `api_key`, `apiKey`,
/// `access_token`, `X-Amz-Signature`, `password`, `auth`…
pub fn is_secret_name(name: &str) -> bool {
    let n: String = name
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .map(|c| c.to_ascii_lowercase())
        .collect();
    const PARTS: &[&str] = &[
        "key",
        "token",
        "secret",
        "passw",
        "auth",
        "credential",
        "signature",
        "session",
        "cookie",
    ];
    PARTS.iter().any(|p| n.contains(p)) || matches!(n.as_str(), "sig" | "pwd" | "pass")
}

/// A URL-like token the parser rejects: everything between `://` and the last `@` of what
/// would be its authority goes.
fn redact_unparsed(token: &str) -> Option<String> {
    let sep = token.find("://")? + 3;
    let authority_len = token[sep..]
        .find(['/', '?', '#', '\\'])
        .unwrap_or(token.len() - sep);
    let at = token[sep..sep + authority_len].rfind('@')?;
    Some(format!("{}{MASK}{}", &token[..sep], &token[sep + at..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_are_masked() {
        assert_eq!(
            secrets("http://user:secret@host:8000/v1"),
            "http://***@host:8000/v1"
        );
        assert_eq!(secrets("https://token@host/v1"), "https://***@host/v1");
        // An unencoded `@` in the password: the last one ends the credentials.
        assert_eq!(secrets("http://u:p@ss@host/v1"), "http://***@host/v1");
    }

    #[test]
    fn secret_query_values_are_masked_and_the_rest_kept() {
        assert_eq!(
            secrets("http://host/v1?api_key=s3cr3t&mode=fast&Access-Token=t"),
            "http://host/v1?api_key=***&mode=fast&Access-Token=***"
        );
        assert_eq!(
            secrets("http://host/v1?X-Amz-Signature=abc&x=1"),
            "http://host/v1?X-Amz-Signature=***&x=1"
        );
        assert_eq!(
            secrets("http://host/v1#access_token=t"),
            "http://host/v1#access_token=***"
        );
    }

    #[test]
    fn text_without_secrets_is_unchanged_byte_for_byte() {
        for s in [
            "sim",
            "http://127.0.0.1:8000/v1",
            "http://host",
            "http://host/v1?model=x&n=2",
            "no url here: user:secret@host",
        ] {
            assert!(matches!(secrets(s), Cow::Borrowed(_)), "{s}");
            assert_eq!(secrets(s), s);
        }
    }

    #[test]
    fn urls_inside_messages_are_masked() {
        assert_eq!(
            secrets("error sending request for url (http://u:pw@10.0.0.1:9/v1/models): refused"),
            "error sending request for url (http://***@10.0.0.1:9/v1/models): refused"
        );
        assert_eq!(
            secrets("a http://a:b@x/ and \"https://c:d@y/?token=z\" end"),
            "a http://***@x/ and \"https://***@y/?token=***\" end"
        );
    }

    #[test]
    fn unparsable_urls_still_lose_their_credentials() {
        assert_eq!(secrets("http://u:p@[bad/v1"), "http://***@[bad/v1");
    }

    #[test]
    fn secret_names() {
        for n in [
            "api_key",
            "apiKey",
            "KEY",
            "access_token",
            "password",
            "Authorization",
            "sig",
        ] {
            assert!(is_secret_name(n), "{n}");
        }
        for n in ["model", "n", "mode", "stream", "signal"] {
            assert!(!is_secret_name(n), "{n}");
        }
    }
}
