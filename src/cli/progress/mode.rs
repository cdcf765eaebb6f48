//! How much progress `run` shows (`--progress`), in a file of its own: the observer and each
//! stage's bar read it.

/// What progress looks like on stderr.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProgressMode {
    /// A bar when stderr is a terminal, periodic lines otherwise.
    Auto,
    Lines,
    Quiet,
}
