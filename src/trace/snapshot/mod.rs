//! PyTorch CUDA memory snapshots (`torch.cuda.memory._dump_snapshot`: a pickled dict of
//! `segments` and `device_traces`; SGLang writes one per rank, `…-TP-<tp>-memory.pickle`),
//! read in one streaming pass into a few figures per device ([`SnapshotDevice`]).
//!
//! The files, bottom up: [`input`](self) (the byte window and offsets), `frames.rs` (the frame
//! table and the top-user-frame rule, [`is_internal`]), `replay.rs` (a device's trace replayed),
//! `words.rs` (the keys and actions recognised once, when a string is read), `fold.rs` (the
//! stack's values, each piece folded as it is put in place), `machine.rs` (the pickle
//! opcodes). No object tree is built: memory is a read window, the kept memo entries
//! (strings, frames, blocks' stacks), the allocations live at one time and the frame groups.
//!
//! Damage (a truncated file, an opcode the reader does not know, a broken gzip member) stops
//! the read at that byte; what was folded before is kept and the report says where
//! ([`SnapshotRead::damage`]).

mod fold;
mod frames;
mod input;
mod machine;
mod replay;
mod words;

use std::io::{BufReader, Read};
use std::path::Path;

use serde::{Deserialize, Serialize};

use fold::DeviceAcc;
pub use frames::is_internal;
use frames::FrameTable;
use input::Input;
use machine::Machine;
use replay::Groups;

/// How many groups (top user frames) a device lists.
pub const TOP_FRAMES: usize = 5;

/// One group of allocations: the top user frame they come from, their bytes and number.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TopFrame {
    /// `path:line function`, or `(no user frame)`, `(no frames)`.
    pub frame: String,
    pub bytes: i64,
    pub count: u64,
}

/// One device of a snapshot.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SnapshotDevice {
    /// `cuda:N`.
    pub device: String,
    /// Segments (`cudaMalloc`s the caching allocator holds) at the snapshot.
    pub segments: u64,
    /// Allocated at the snapshot: the `active_allocated` blocks (a segment without blocks: its
    /// `allocated_size`).
    pub allocated_bytes: i64,
    /// Reserved at the snapshot: the segments' `total_size`.
    pub reserved_bytes: i64,
    /// Entries of the device's allocator trace (`_record_memory_history`); 0 without one.
    pub trace_entries: u64,
    /// The largest allocated over the trace: what was live before its first entry plus the
    /// largest running sum of `alloc` − `free_completed`.
    pub peak_allocated_bytes: Option<i64>,
    /// The entry (0-based, in the device's trace) at which the peak was reached; `None` when
    /// it was before the first entry.
    pub peak_entry: Option<u64>,
    /// That entry's `time_us`.
    pub peak_time_us: Option<i64>,
    /// Live before the trace's first entry (allocated before recording began, or dropped from
    /// the trace's ring buffer): the active blocks at the snapshot minus the replay's end.
    pub before_trace_bytes: Option<i64>,
    /// `oom` entries of the trace.
    pub oom_entries: u64,
    /// `peak` (the trace's allocations live at the peak) or `snapshot` (the allocated blocks
    /// at the snapshot, when there is no trace).
    pub top_frames_at: String,
    /// The largest groups, by bytes, at most [`TOP_FRAMES`].
    pub top_frames: Vec<TopFrame>,
}

/// What reading one snapshot file gave.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct SnapshotRead {
    /// Devices with a segment or a trace entry, by index.
    pub devices: Vec<SnapshotDevice>,
    /// Bytes of pickle read (decompressed).
    pub bytes: u64,
    pub gzip: bool,
    /// Why reading stopped early, with the byte offset (`truncated at byte 1048576`): the
    /// figures cover what came before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub damage: Option<String>,
    /// Memo strings not kept for want of budget (a later reference to one reads as unknown).
    #[serde(default)]
    pub memo_strings_dropped: u64,
}

/// Whether a file name is a snapshot's: `*.pickle`, `*.pickle.gz`, `*.pkl`, `*.pkl.gz`.
pub fn is_snapshot_name(name: &str) -> bool {
    let n = name.strip_suffix(".gz").unwrap_or(name);
    n.ends_with(".pickle") || n.ends_with(".pkl")
}

/// The stem a snapshot's name shares with its rank's trace: the name without `.gz`, the
/// extension and a `-memory` / `_memory` / `.memory` suffix (SGLang's
/// `…-TP-0-memory.pickle` → `…-TP-0`).
pub fn snapshot_stem(name: &str) -> &str {
    let n = name.strip_suffix(".gz").unwrap_or(name);
    let n = n
        .strip_suffix(".pickle")
        .or_else(|| n.strip_suffix(".pkl"))
        .unwrap_or(n);
    [
        "-memory",
        "_memory",
        ".memory",
        "-memory_snapshot",
        "_memory_snapshot",
    ]
    .iter()
    .find_map(|s| n.strip_suffix(s))
    .unwrap_or(n)
}

/// Reads the snapshot at `path` (gzip or not). An error only when the file cannot be opened;
/// damage inside it is in [`SnapshotRead::damage`].
pub fn read_snapshot(path: &Path) -> std::io::Result<SnapshotRead> {
    let (file, len) = crate::trace::read::open::open_regular(path)?;
    let mut buf = BufReader::with_capacity(1 << 16, file);
    let gzip = {
        use std::io::BufRead;
        buf.fill_buf()?.starts_with(&[0x1f, 0x8b])
    };
    let src: Box<dyn Read> = if gzip {
        Box::new(crate::trace::read::gz::Members::new(buf, Some(len)).0)
    } else {
        Box::new(buf)
    };
    Ok(read_from(src, gzip))
}

/// Reads a snapshot from any byte stream.
pub fn read_from<R: Read>(src: R, gzip: bool) -> SnapshotRead {
    let mut inp = Input::new(src);
    let mut m = Machine::new();
    let damage = match m.run(&mut inp) {
        Ok(()) => None,
        Err(stop) => {
            m.salvage();
            Some(stop.describe())
        }
    };
    let bytes = inp.offset();
    let mut devices: Vec<SnapshotDevice> = m
        .sink
        .devices
        .iter_mut()
        .map(|d| device_row(d, &m.sink.frames))
        .collect();
    devices.sort_by_key(|d| device_index(&d.device));
    SnapshotRead {
        devices,
        bytes,
        gzip,
        damage,
        memo_strings_dropped: m.memo.dropped_strs,
    }
}

fn device_index(name: &str) -> i64 {
    name.rsplit(':')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(i64::MAX)
}

/// The figures of one device.
fn device_row(d: &mut DeviceAcc, frames: &FrameTable) -> SnapshotDevice {
    let trace = d.trace.take();
    let (at, groups): (&str, Vec<(u32, i64, u64)>) = match &trace {
        Some(t) => ("peak", t.at_peak.clone()),
        None => ("snapshot", flat(&d.groups)),
    };
    let before = trace.as_ref().map(|t| t.before_trace(d.active));
    SnapshotDevice {
        device: format!("cuda:{}", d.device),
        segments: d.segments,
        allocated_bytes: d.allocated,
        reserved_bytes: d.reserved,
        trace_entries: trace.as_ref().map_or(0, |t| t.entries),
        peak_allocated_bytes: trace.as_ref().map(|t| before.unwrap_or(0) + t.max),
        peak_entry: trace.as_ref().and_then(|t| t.peak_entry),
        peak_time_us: trace.as_ref().and_then(|t| t.peak_time_us),
        before_trace_bytes: before,
        oom_entries: trace.as_ref().map_or(0, |t| t.oom),
        top_frames_at: at.into(),
        top_frames: top(groups, frames),
    }
}

fn flat(g: &Groups) -> Vec<(u32, i64, u64)> {
    g.iter().map(|(&k, &(b, n))| (k, b, n)).collect()
}

/// The [`TOP_FRAMES`] largest groups by bytes (ties: more allocations, then the label).
fn top(groups: Vec<(u32, i64, u64)>, frames: &FrameTable) -> Vec<TopFrame> {
    let mut rows: Vec<TopFrame> = groups
        .into_iter()
        .filter(|g| g.1 > 0)
        .map(|(g, bytes, count)| TopFrame {
            frame: frames.label(g),
            bytes,
            count,
        })
        .collect();
    rows.sort_by(|a, b| {
        b.bytes
            .cmp(&a.bytes)
            .then(b.count.cmp(&a.count))
            .then_with(|| a.frame.cmp(&b.frame))
    });
    rows.truncate(TOP_FRAMES);
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stems_and_names() {
        assert_eq!(snapshot_stem("1758-TP-0-memory.pickle"), "1758-TP-0");
        assert_eq!(snapshot_stem("rank3.pickle.gz"), "rank3");
        assert!(is_snapshot_name("a-TP-1-memory.pickle"));
        assert!(!is_snapshot_name("a.trace.json.gz"));
    }

    #[test]
    fn an_empty_input_is_damage_not_a_panic() {
        let r = read_from(&b""[..], false);
        assert_eq!(r.damage.as_deref(), Some("truncated at byte 0"));
        let r = read_from(&b"\x80\x04\xff"[..], false);
        assert_eq!(
            r.damage.as_deref(),
            Some("unknown pickle opcode 0xff at byte 2")
        );
    }
}
