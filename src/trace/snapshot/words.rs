//! The strings the reader acts on — the keys of a snapshot's pieces and the trace actions it
//! replays — recognised once, when the string is read, and carried as a one-byte [`Word`]
//! after: a memo `GET` of a key pushes a byte, not a reference-counted string, and a
//! `SETITEMS` compares bytes, not strings (a 1 GB snapshot has about 100 M keys).

/// A string the reader knows (8 bytes wide, like every payload of a stack value: see
/// [`super::fold::Value`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u64)]
pub(crate) enum Word {
    Action,
    State,
    Addr,
    Address,
    Size,
    TimeUs,
    Device,
    TotalSize,
    AllocatedSize,
    Filename,
    Name,
    Line,
    Frames,
    Blocks,
    /// The `action`s the replay tells apart.
    Alloc,
    FreeCompleted,
    Oom,
}

/// Every word and its text.
const WORDS: [(Word, &str); 17] = [
    (Word::Action, "action"),
    (Word::State, "state"),
    (Word::Addr, "addr"),
    (Word::Address, "address"),
    (Word::Size, "size"),
    (Word::TimeUs, "time_us"),
    (Word::Device, "device"),
    (Word::TotalSize, "total_size"),
    (Word::AllocatedSize, "allocated_size"),
    (Word::Filename, "filename"),
    (Word::Name, "name"),
    (Word::Line, "line"),
    (Word::Frames, "frames"),
    (Word::Blocks, "blocks"),
    (Word::Alloc, "alloc"),
    (Word::FreeCompleted, "free_completed"),
    (Word::Oom, "oom"),
];

impl Word {
    /// The word a string is, if any.
    pub(crate) fn of(s: &[u8]) -> Option<Word> {
        if s.len() > 14 {
            return None;
        }
        WORDS
            .iter()
            .find(|(_, t)| t.as_bytes() == s)
            .map(|&(w, _)| w)
    }

    /// Its text.
    pub(crate) fn text(self) -> &'static str {
        WORDS[self as usize].1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_word_reads_back_as_itself() {
        for (w, t) in WORDS {
            assert_eq!(Word::of(t.as_bytes()), Some(w));
            assert_eq!(w.text(), t);
        }
        assert_eq!(Word::of(b"sizes"), None);
        assert_eq!(Word::of(b""), None);
    }
}
