//! Every form a secret value may take in something infermeter writes: as given, percent-
//! decoded (a password written `p%29ss` in a URL is `p)ss` once sent), percent-encoded the
//! ways URLs encode (strictly, as the URL parser writes a user name, password, query or path,
//! as a form), JSON-, HTML- and XML-escaped.

use std::collections::BTreeSet;

use super::mask::MIN_SECRET_LEN;
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, percent_decode_str, utf8_percent_encode};

/// Everything but RFC 3986's unreserved characters.
const STRICT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// The forms of `value`, each at least [`MIN_SECRET_LEN`] characters.
pub(super) fn of(value: &str) -> BTreeSet<String> {
    let mut bases = vec![value.to_string()];
    if let Ok(decoded) = percent_decode_str(value).decode_utf8()
        && decoded != value
    {
        bases.push(decoded.into_owned());
    }
    let mut out = BTreeSet::new();
    for b in &bases {
        out.insert(b.clone());
        let strict = utf8_percent_encode(b, STRICT).to_string();
        out.insert(lower_hex(&strict));
        out.insert(strict);
        // Some writers encode every character but letters and digits (`~` as `%7E`).
        let all = utf8_percent_encode(b, NON_ALPHANUMERIC).to_string();
        out.insert(lower_hex(&all));
        out.insert(all);
        out.insert(url::form_urlencoded::byte_serialize(b.as_bytes()).collect());
        out.extend(as_in_url(b));
        if let Ok(json) = serde_json::to_string(b) {
            out.insert(json[1..json.len() - 1].to_string());
        }
        out.insert(markup(b, "&#x27;", Some("&#x2f;")));
        out.insert(markup(b, "&apos;", None));
        out.insert(markup(b, "&#39;", None));
    }
    out.retain(|f| f.chars().count() >= MIN_SECRET_LEN);
    out
}

/// `%2A` → `%2a`: some writers encode in lower case.
fn lower_hex(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('%') {
        out.push_str(&rest[..i]);
        let hex = rest.get(i..i + 3).unwrap_or(&rest[i..]);
        out.push_str(&hex.to_ascii_lowercase());
        rest = &rest[i + hex.len()..];
    }
    out.push_str(rest);
    out
}

/// `value` as the URL parser writes it as a user name, a password, a query and a path
/// segment (each encodes its own set of characters).
fn as_in_url(value: &str) -> Vec<String> {
    let Ok(mut u) = url::Url::parse("http://h/") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    if u.set_username(value).is_ok() {
        out.push(u.username().to_string());
    }
    if u.set_password(Some(value)).is_ok()
        && let Some(p) = u.password()
    {
        out.push(p.to_string());
    }
    u.set_query(Some(value));
    out.extend(u.query().map(str::to_string));
    if let Ok(mut segments) = u.path_segments_mut() {
        segments.clear().push(value);
    }
    out.push(u.path().trim_start_matches('/').to_string());
    out
}

/// `value` HTML- or XML-escaped: `&`, `<`, `>`, `"`, the apostrophe as `apos`, and `/` when
/// `slash` says how (minijinja escapes it).
fn markup(value: &str, apos: &str, slash: Option<&str>) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str(apos),
            '/' if slash.is_some() => out.push_str(slash.unwrap_or("/")),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_forms_of_a_password() {
        let f = of("a b)c'd\"e/f");
        for form in [
            "a b)c'd\"e/f",
            "a%20b%29c%27d%22e%2Ff",
            "a%20b%29c%27d%22e%2ff",
            "a+b%29c%27d%22e%2Ff",
            "a b)c'd\\\"e/f",
            "a b)c&#x27;d&quot;e&#x2f;f",
            "a b)c&apos;d&quot;e/f",
        ] {
            assert!(f.contains(form), "{form} not in {f:?}");
        }
    }

    #[test]
    fn an_encoded_value_is_also_known_decoded() {
        let f = of("p%29ss%40word");
        assert!(f.contains("p)ss@word"), "{f:?}");
        assert!(f.contains("p%29ss%40word"), "{f:?}");
    }
}
