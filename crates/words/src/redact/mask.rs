//! What a secret is replaced with, and how short a value may be and still be masked wherever
//! it appears: the two constants every part of `redact/` shares.

/// What a secret is replaced with.
pub const MASK: &str = "***";

/// The fewest characters a value must have to be masked by value wherever it appears.
pub const MIN_SECRET_LEN: usize = 4;
