//! Why a scan stopped ([`Stop`]) and what every scan answers ([`Scan`]): the vocabulary the
//! JSON scanner ([`super::json`], [`super::object`]) and the block skim ([`super::skim`])
//! share, at the bottom of the reader.

/// Why a scan stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// The window ended inside a value.
    Incomplete,
    /// The bytes at this index are not valid JSON.
    Invalid(usize, &'static str),
}

pub(crate) type Scan<T> = Result<T, Stop>;
