//! Server configurations: a `server` block's `config "NAME" { args …; env …; }` lines, each a
//! variant of the block's command, and how one is applied to it. Every stage runs once on
//! each configuration (docs/server.md, "Server settings as an axis"); the run restarts the
//! server only where the configuration changes.

use super::spec::ServerSpec;

impl ServerSpec {
    /// The server as configuration `name` starts it: the base command with the
    /// configuration's flags put in, its variables over the base's, and no configurations of
    /// its own. The base itself for `None` or a name it does not have.
    pub fn configured(&self, name: Option<&str>) -> ServerSpec {
        let mut spec = self.clone();
        spec.configs = Vec::new();
        let Some(config) = name.and_then(|n| self.configs.iter().find(|c| c.name == n)) else {
            return spec;
        };
        spec.command = with_flags(&self.command, &config.args);
        for e in &config.env {
            spec.env.retain(|b| b.name != e.name);
            spec.env.push(e.clone());
        }
        spec
    }
}

/// `base` with each flag of `args` (a word starting with `-`, and the words after it up to
/// the next flag) in place of the same flag's in `base` — `--flag=value` counts as `--flag` —
/// or appended when `base` has none. Words of `args` before its first flag are appended.
pub fn with_flags(base: &[String], args: &[String]) -> Vec<String> {
    let mut out = base.to_vec();
    for group in groups(args) {
        let key = flag_key(&group[0]);
        let found = (1..out.len()).find(|&i| is_flag(&out[i]) && flag_key(&out[i]) == key);
        match found.filter(|_| is_flag(&group[0])) {
            Some(at) => {
                let end = (at + 1..out.len())
                    .find(|&i| is_flag(&out[i]))
                    .unwrap_or(out.len());
                let end = if out[at].contains('=') { at + 1 } else { end };
                out.splice(at..end, group.iter().cloned());
            }
            None => out.extend(group.iter().cloned()),
        }
    }
    out
}

/// `args` cut into a flag and its values each (leading values form a group of their own).
fn groups(args: &[String]) -> Vec<&[String]> {
    let mut starts: Vec<usize> = (0..args.len())
        .filter(|&i| i == 0 || is_flag(&args[i]))
        .collect();
    starts.push(args.len());
    starts
        .windows(2)
        .map(|w| &args[w[0]..w[1]])
        .filter(|g| !g.is_empty())
        .collect()
}

/// A flag, not a value: starts with `-` and is not a number (`-1` is a value).
fn is_flag(word: &str) -> bool {
    word.starts_with('-') && word.len() > 1 && word.parse::<f64>().is_err()
}

/// `--flag` of `--flag=value`.
fn flag_key(word: &str) -> &str {
    word.split_once('=').map_or(word, |(k, _)| k)
}

#[cfg(test)]
mod tests {
    use super::with_flags;

    fn words(text: &str) -> Vec<String> {
        text.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn server_config_flags_replace_the_base_s_or_are_appended() {
        let base = words("vllm serve M --port 8000 --max-num-seqs 256 --enable-prefix-caching");
        assert_eq!(
            with_flags(&base, &words("--max-num-seqs 64")),
            words("vllm serve M --port 8000 --max-num-seqs 64 --enable-prefix-caching")
        );
        assert_eq!(
            with_flags(
                &base,
                &words("--no-enable-prefix-caching --gpu-memory-utilization 0.8")
            ),
            words(
                "vllm serve M --port 8000 --max-num-seqs 256 --enable-prefix-caching \
                 --no-enable-prefix-caching --gpu-memory-utilization 0.8"
            )
        );
        let eq = words("sim --max-running=16 --port 1");
        assert_eq!(
            with_flags(&eq, &words("--max-running 1")),
            words("sim --max-running 1 --port 1")
        );
        assert_eq!(
            with_flags(&words("x --delta -1 --y"), &words("--delta -2")),
            words("x --delta -2 --y")
        );
    }
}
