//! URLs in a text, masked where they stand: the credentials (`http://user:pw@host/v1` →
//! `http://***@host/v1`) and the value of every query or fragment parameter named like a
//! secret (`?api_key=…` → `?api_key=***`).
//!
//! URLs are parsed with the `url` crate (the WHATWG parser reqwest itself uses), so what is
//! masked is exactly what a client would send as credentials. A URL runs to the first
//! whitespace, quote, `<`, `>` or backtick: a password may hold `)`, `'`, `!`, `*`, `$`, `&`,
//! `;`, `=` (all legal there), so those do not end it; trailing punctuation that closes a
//! sentence or a parenthesis (`(http://h/v1): refused`) is left outside. A URL-like token
//! the parser rejects still loses everything between `://` and the last `@` of its authority.

use std::borrow::Cow;

use super::mask::MASK;

/// `text` with the credentials and secret query values of every URL in it masked.
pub(super) fn mask_urls(text: &str) -> Cow<'_, str> {
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
        let end = sep + token_len(&rest[sep..]);
        out.push_str(&rest[..start]);
        let token = &rest[start..end];
        match mask_url(token) {
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

/// The length of the URL that starts at `s` (`://…`): up to whitespace, a quote, `<`, `>` or
/// a backtick, less trailing sentence punctuation after the authority.
fn token_len(s: &str) -> usize {
    let mut end = s
        .find(|c: char| c.is_whitespace() || c.is_control() || matches!(c, '"' | '<' | '>' | '`'))
        .unwrap_or(s.len());
    let authority_end = 3 + authority_len(&s[3..end]);
    while end > authority_end && s[..end].ends_with([')', '\'', '.', ',', ';', ':', ']', '}']) {
        end -= 1;
    }
    // A URL without a path whose authority ends the sentence: `(http://u:p@h)`.
    if end == authority_end
        && !s[3..end].contains('@')
        && s[..end].ends_with([')', '\'', '.', ',', ';', ':'])
    {
        end -= 1;
    }
    end
}

/// The length of the authority at the start of `s` (after `://`): up to `/`, `?`, `#` or `\`.
fn authority_len(s: &str) -> usize {
    s.find(['/', '?', '#', '\\']).unwrap_or(s.len())
}

/// What lies between `://` and the last `@` of the authority of a URL-like `token`.
pub(super) fn unparsed_userinfo(token: &str) -> Option<&str> {
    let sep = token.find("://")? + 3;
    let authority = &token[sep..sep + authority_len(&token[sep..])];
    let at = authority.rfind('@')?;
    Some(&authority[..at])
}

/// The masked form of one URL, `None` when nothing in it is secret.
fn mask_url(token: &str) -> Option<String> {
    let Ok(mut url) = url::Url::parse(token) else {
        return mask_unparsed(token);
    };
    let mut changed = false;
    if !url.username().is_empty() || url.password().is_some() {
        // Fails only for URLs that cannot have credentials, which then have none.
        let _ = url.set_password(None);
        let _ = url.set_username(MASK);
        changed = true;
    }
    if let Some(query) = url.query().and_then(mask_pairs) {
        url.set_query(Some(&query));
        changed = true;
    }
    if let Some(fragment) = url.fragment().and_then(mask_pairs) {
        url.set_fragment(Some(&fragment));
        changed = true;
    }
    changed.then(|| url.into())
}

/// `a=1&api_key=s` → `a=1&api_key=***`, keeping every other pair as written; `None` when no
/// key is secret.
fn mask_pairs(pairs: &str) -> Option<String> {
    let mut changed = false;
    let parts: Vec<Cow<'_, str>> = pairs
        .split('&')
        .map(|part| {
            let raw_key = part.split('=').next().unwrap_or_default();
            let key = url::form_urlencoded::parse(raw_key.as_bytes())
                .next()
                .map_or_else(|| raw_key.to_string(), |(k, _)| k.into_owned());
            if super::names::is_secret_name(&key) && part.len() > raw_key.len() {
                changed = true;
                Cow::Owned(format!("{raw_key}={MASK}"))
            } else {
                Cow::Borrowed(part)
            }
        })
        .collect();
    changed.then(|| parts.join("&"))
}

/// A URL-like token the parser rejects: everything between `://` and the last `@` of what
/// would be its authority goes.
fn mask_unparsed(token: &str) -> Option<String> {
    let userinfo = unparsed_userinfo(token)?;
    let sep = token.find("://")? + 3;
    Some(format!(
        "{}{MASK}{}",
        &token[..sep],
        &token[sep + userinfo.len()..]
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_are_masked() {
        assert_eq!(
            mask_urls("http://user:secret@host:8000/v1"),
            "http://***@host:8000/v1"
        );
        assert_eq!(mask_urls("https://token@host/v1"), "https://***@host/v1");
        // An unencoded `@` in the password: the last one ends the credentials.
        assert_eq!(mask_urls("http://u:p@ss@host/v1"), "http://***@host/v1");
    }

    #[test]
    fn characters_legal_in_a_password_do_not_end_the_url() {
        for pw in [
            "se)cret",
            "se'cret",
            "s!e*c~r$e&t",
            "a;b=c",
            "p(a)ss",
            "pa'ss)",
            "x)'",
        ] {
            let text = format!("url http://user:{pw}@host/v1 here");
            let got = mask_urls(&text);
            assert_eq!(got, "url http://***@host/v1 here", "{pw}");
            let text = format!("error sending request for url (http://user:{pw}@h/v1): refused");
            let got = mask_urls(&text);
            assert!(!got.contains(pw), "{pw}: {got}");
            assert!(got.ends_with("@h/v1): refused"), "{got}");
        }
    }

    #[test]
    fn secret_query_values_are_masked_and_the_rest_kept() {
        assert_eq!(
            mask_urls("http://host/v1?api_key=s3cr3t&mode=fast&Access-Token=t"),
            "http://host/v1?api_key=***&mode=fast&Access-Token=***"
        );
        assert_eq!(
            mask_urls("http://host/v1?X-Amz-Signature=abc&x=1"),
            "http://host/v1?X-Amz-Signature=***&x=1"
        );
        assert_eq!(
            mask_urls("http://host/v1#access_token=t"),
            "http://host/v1#access_token=***"
        );
        assert_eq!(
            mask_urls("http://u:p@host/v1?api-key=K)E'Y!"),
            "http://***@host/v1?api-key=***"
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
            "a :// b",
        ] {
            assert!(matches!(mask_urls(s), Cow::Borrowed(_)), "{s}");
        }
    }

    #[test]
    fn urls_inside_messages_are_masked() {
        assert_eq!(
            mask_urls("error sending request for url (http://u:pw@10.0.0.1:9/v1/models): refused"),
            "error sending request for url (http://***@10.0.0.1:9/v1/models): refused"
        );
        assert_eq!(
            mask_urls("a http://a:b@x/ and \"https://c:d@y/?token=z\" end"),
            "a http://***@x/ and \"https://***@y/?token=***\" end"
        );
    }

    #[test]
    fn unparsable_urls_still_lose_their_credentials() {
        assert_eq!(mask_urls("http://u:p@[bad/v1"), "http://***@[bad/v1");
        assert_eq!(unparsed_userinfo("http://u:p@[bad/v1"), Some("u:p"));
    }
}
