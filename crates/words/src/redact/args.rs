//! A command line's secrets: [`register_args`] registers them before anything is parsed (so
//! that even the argument parser's errors are scrubbed), [`command_line`] masks them where
//! they stand for the record (`results.json`'s `provenance.command_line`, the "imported from"
//! line of `import vllm`).
//!
//! Secret on a command line: the value after a flag named like a secret (`--api-key VALUE`,
//! `--api-key=VALUE`; a `…-env` flag names a variable, whose value is registered instead), the
//! value of a `NAME=VALUE` or `NAME: VALUE` argument (a param, a header) whose name is a
//! secret's or was marked with `--secret NAME`, and the credentials and secret query values
//! of any URL.

use super::mask::MASK;
use super::names::{is_secret_name, mark_secret_name};
use super::registry::{register, register_env, register_header, register_url};
use super::scrub::secrets;

/// Registers every secret of `args` (the process's arguments, program name first or not):
/// marks the names given to `--secret` first, then registers what [`command_line`] masks.
pub fn register_args(args: &[String]) {
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--secret" => {
                if let Some(name) = it.next() {
                    mark_secret_name(name);
                }
            }
            a => {
                if let Some(name) = a.strip_prefix("--secret=") {
                    mark_secret_name(name);
                }
            }
        }
    }
    let mut env_next = false;
    let mut secret_next = false;
    let mut param_env_next = false;
    for a in args {
        if std::mem::take(&mut env_next) {
            register_env(a);
            continue;
        }
        // `--param-env NAME=VARIABLE`: the run registers the variable's value itself.
        if std::mem::take(&mut param_env_next) || a.starts_with("--param-env=") {
            continue;
        }
        if a == "--param-env" {
            param_env_next = true;
            continue;
        }
        if std::mem::take(&mut secret_next) {
            register(a);
            register_parts(a);
            continue;
        }
        if let Some(flag) = a.strip_prefix("--") {
            let (name, value) = match flag.split_once('=') {
                Some((n, v)) => (n, Some(v)),
                None => (flag, None),
            };
            match (secret_flag(name), value) {
                (Some(true), Some(v)) => register_env(v),
                (Some(false), Some(v)) => register(v),
                (Some(true), None) => env_next = true,
                (Some(false), None) => secret_next = true,
                (None, Some(v)) => register_parts(v),
                (None, None) => {}
            }
            continue;
        }
        register_parts(a);
    }
}

/// `Some(true)` for a secret-named flag whose value names an environment variable
/// (`--api-key-env`), `Some(false)` for one whose value is the secret, `None` otherwise.
fn secret_flag(name: &str) -> Option<bool> {
    if name == "secret" || !is_secret_name(name) {
        return None;
    }
    Some(name.ends_with("-env"))
}

/// The secrets inside one argument: a secret-named `NAME=VALUE` or `NAME: VALUE` pair's value
/// (a header's credential too), and the secrets of URLs.
fn register_parts(arg: &str) {
    for sep in ['=', ':'] {
        if let Some((name, value)) = pair(arg, sep) {
            register_header(name, value);
            register(value);
        }
    }
    if arg.contains("://") {
        for word in arg.split(char::is_whitespace) {
            let url = word
                .find(|c: char| c.is_ascii_alphabetic())
                .map_or(word, |i| &word[i..]);
            if url.contains("://") {
                register_url(url);
            }
        }
    }
}

/// `NAME=VALUE` (or `NAME: VALUE`) when the name is a secret's (a URL's scheme is no name).
fn pair(arg: &str, sep: char) -> Option<(&str, &str)> {
    let (name, value) = arg.split_once(sep)?;
    let name = name.trim_start_matches('-').trim();
    if name.is_empty() || value.starts_with("//") || !is_secret_name(name) {
        return None;
    }
    Some((name, value.trim()))
}

/// The command line with every secret masked where it stands (see the module's doc), and
/// then by value.
pub fn command_line(args: &[String]) -> Vec<String> {
    let mut out = Vec::with_capacity(args.len());
    let mut mask_next = false;
    let mut names_next = false;
    for a in args {
        if std::mem::take(&mut mask_next) {
            out.push(MASK.to_string());
            continue;
        }
        // `--param-env NAME=VARIABLE` names a variable: nothing secret to mask where it stands.
        if std::mem::take(&mut names_next) || a.starts_with("--param-env=") {
            out.push(secrets(a).into_owned());
            continue;
        }
        names_next = a == "--param-env";
        let masked = match a.strip_prefix("--") {
            Some(flag) => match flag.split_once('=') {
                Some((name, _)) if secret_flag(name) == Some(false) => format!("--{name}={MASK}"),
                // `--param=api_key=…`: the value is what may hold a secret.
                Some((name, value)) => format!("--{name}={}", mask_value(value)),
                None => {
                    mask_next = secret_flag(flag) == Some(false);
                    a.clone()
                }
            },
            None => mask_value(a),
        };
        out.push(secrets(&masked).into_owned());
    }
    out
}

/// One argument (or a flag's value) with a secret-named pair's value masked.
fn mask_value(arg: &str) -> String {
    for sep in ['=', ':'] {
        if pair(arg, sep).is_some() {
            let at = arg.find(sep).unwrap_or(arg.len());
            let space = if sep == ':' { " " } else { "" };
            return format!("{}{sep}{space}{MASK}", &arg[..at]);
        }
    }
    arg.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn secrets_on_the_command_line_are_masked() {
        let got = command_line(&args(&[
            "infermeter",
            "run",
            "s.kdl",
            "--api-key",
            "sk-1",
            "--api-key=sk-2",
            "--param",
            "rate=5",
            "--param",
            "api_key=sk-3",
            "--header",
            "Authorization: Bearer sk-4",
            "--param",
            "url=http://user:pw@host/v1",
            "--param=hf_token=hf-5",
            "--url=http://u:pw2@h/v1",
            "--api-key-env",
            "MY_KEY",
            "--param-env",
            "api_key=MY_KEY",
            "--out",
            "dir",
        ]));
        let text = got.join(" ");
        for s in ["sk-1", "sk-2", "sk-3", "sk-4", "pw", "hf-5", "pw2"] {
            assert!(!text.contains(s), "{s} in {text}");
        }
        assert!(text.contains("--api-key *** --api-key=***"), "{text}");
        assert!(text.contains("rate=5"), "{text}");
        assert!(text.contains("api_key=***"), "{text}");
        assert!(text.contains("Authorization: ***"), "{text}");
        assert!(text.contains("--out dir"), "{text}");
        assert!(text.contains("--param=hf_token=***"), "{text}");
        assert!(text.contains("--api-key-env MY_KEY"), "{text}");
        assert!(text.contains("--param-env api_key=MY_KEY"), "{text}");
    }

    #[test]
    fn registered_arguments_are_masked_by_value_anywhere() {
        register_args(&args(&[
            "run",
            "--secret",
            "deploy_target_zz",
            "--param",
            "deploy_target_zz=v4lue-of-a-marked-param",
            "--param=api_key=k3y-given-with-equals",
            "--url",
            "http://bench:p4ss)w'rd@host/v1?api-key=qu3ry-k3y",
            "--header",
            "Authorization=Bearer t0ken-in-a-header",
        ]));
        let text =
            "v4lue-of-a-marked-param k3y-given-with-equals p4ss)w'rd qu3ry-k3y t0ken-in-a-header";
        assert_eq!(super::super::secrets(text), "*** *** *** *** ***");
    }
}
