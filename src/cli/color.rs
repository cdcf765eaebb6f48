//! `--color`: whether the summary's outcome words are coloured, with `NO_COLOR` respected.

/// `--color`: whether the summary's outcome words are coloured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorChoice {
    /// On a terminal, unless `NO_COLOR` is set (to anything but empty).
    Auto,
    Always,
    Never,
}

impl ColorChoice {
    /// Whether to colour output going to a terminal (`tty`) or not.
    pub fn enabled(self, tty: bool) -> bool {
        match self {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => tty && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colour_is_off_unless_asked_for_or_on_a_terminal() {
        assert!(ColorChoice::Always.enabled(false));
        assert!(!ColorChoice::Never.enabled(true));
        assert!(!ColorChoice::Auto.enabled(false));
    }
}
