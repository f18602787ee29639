//! One rank's pass through the merge: read its file event by event, relabel and de-collide,
//! shift its clock, filter, and stream the result into its own compressed piece.
//!
//! How each event is rewritten is [`super::rewrite`]'s.
//!
//! With `--steps A:B` and the rank's window not yet known, the window is found while the rank
//! is read: events are held back, formatted, until it is ([`super::steps`]).

use rustc_hash::FxHashMap;
use std::fmt;
use std::io;
use std::path::PathBuf;

use crate::trace::read::escape;
use crate::trace::read::event::Event;
use crate::trace::read::value::Id;
use crate::trace::write::writer::{Piece, PieceWriter};
use crate::trace::{read_trace, Ns, ReadReport};

use super::filter::{Filter, Verdict};
use super::perfetto::{RankEncoder, Stats};
use super::rewrite::{format_event, Ctx};
use super::steps::{overlaps, SpecWindow, Steps, PENDING_CAP};

/// Everything one rank's write pass needs.
#[derive(Clone, Debug)]
pub(crate) struct RankJob {
    pub(crate) index: usize,
    pub(crate) nranks: usize,
    pub(crate) label: String,
    pub(crate) sort_base: i64,
    pub(crate) path: PathBuf,
    pub(crate) shift: Ns,
    /// `filter.window` is the whole time window when known; with `find_steps` only the
    /// `--window` part.
    pub(crate) filter: Filter,
    /// `--steps A:B` whose window is not known yet: found while reading.
    pub(crate) find_steps: Option<(u64, u64)>,
    pub(crate) level: u32,
    pub(crate) piece_path: PathBuf,
    /// Encode the rank as Perfetto packets ([`super::perfetto`]) rather than as JSON; the
    /// `--steps` window is then known before (`find_steps` is `None`).
    pub(crate) perfetto: bool,
    /// Write the piece uncompressed (a `.pftrace`, which is not gzipped).
    pub(crate) raw: bool,
}

/// What one rank's write pass did.
pub(crate) struct RankOut {
    pub(crate) report: ReadReport,
    /// Input events written to the output.
    pub(crate) written: u64,
    /// Input events the filters dropped.
    pub(crate) dropped: u64,
    /// Metadata events added (`process_sort_index` for processes without one).
    pub(crate) added: u64,
    pub(crate) piece: Piece,
    pub(crate) shift: Ns,
    /// The earliest input `ts` (before the shift).
    pub(crate) min_ts: Option<Ns>,
    /// The latest input event end, `ts + dur` (before the shift).
    pub(crate) max_ts: Option<Ns>,
    /// The rank's steps (finished), collected with `find_steps`.
    pub(crate) steps: Steps,
    /// False when, with `find_steps`, an event was decided against a window that turned out
    /// different: the piece is wrong and the rank must be written again, window known.
    pub(crate) window_held: bool,
    /// With [`RankJob::perfetto`]: the rank's track descriptors and what its encoding did.
    pub(crate) perfetto: Option<PerfettoOut>,
}

/// A Perfetto rank's share besides its events' piece.
pub(crate) struct PerfettoOut {
    /// The rank's `TrackDescriptor` packets, written in front of its events.
    pub(crate) head: Vec<u8>,
    pub(crate) stats: Stats,
}

#[derive(Default)]
struct PidMeta {
    has_sort: bool,
    int: Option<i64>,
}

/// Why a rank's write pass failed.
#[derive(Debug)]
pub(crate) enum RankError {
    /// The input could not be opened (missing, a dangling symlink, not a regular file, no
    /// permission): the rank is unreadable, the others can still be merged.
    Read(io::Error),
    /// Writing the rank's piece of the output failed: the merge as a whole fails.
    Write(io::Error),
}

impl fmt::Display for RankError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RankError::Read(e) => write!(f, "reading {e}"),
            RankError::Write(e) => write!(f, "writing {e}"),
        }
    }
}

impl std::error::Error for RankError {}

/// The rank's piece as it is written: the writer, what went in, and the processes seen.
struct Out {
    w: PieceWriter,
    written: u64,
    pids: FxHashMap<String, PidMeta>,
    last_pid: Option<(Option<i64>, String)>,
    err: Option<io::Error>,
    /// Perfetto packets instead of JSON.
    pf: Option<RankEncoder>,
}

impl Out {
    /// The rank's piece, created: compressed JSON or Perfetto packets, or raw Perfetto
    /// packets.
    fn new(job: &RankJob) -> io::Result<Out> {
        let w = match job.raw {
            true => PieceWriter::create_raw(&job.piece_path)?,
            false => PieceWriter::create(&job.piece_path, job.level)?,
        };
        Ok(Out {
            w,
            written: 0,
            pids: FxHashMap::default(),
            last_pid: None,
            err: None,
            pf: job
                .perfetto
                .then(|| RankEncoder::new(job.index, job.nranks, &job.label, job.shift)),
        })
    }

    /// Writes one input event.
    fn event(&mut self, ev: &Event<'_>, ctx: &Ctx<'_>) {
        if let Some(pf) = self.pf.as_mut() {
            self.written += u64::from(pf.event(ev, self.w.buf()));
            self.flush();
            return;
        }
        track_pid(ev, &mut self.pids, &mut self.last_pid);
        let buf = self.w.buf();
        if self.written > 0 {
            buf.extend_from_slice(b",\n");
        }
        self.written += format_event(ev, ctx, buf);
        self.flush();
    }

    /// Writes `n` events formatted earlier.
    fn formatted(&mut self, bytes: &[u8], n: u64) {
        let buf = self.w.buf();
        if self.written > 0 {
            buf.extend_from_slice(b",\n");
        }
        buf.extend_from_slice(bytes);
        self.written += n;
        self.flush();
    }

    fn flush(&mut self) {
        if let Err(e) = self.w.maybe_flush() {
            self.err = Some(e);
        }
    }
}

/// A process id as [`track_pid`] keys it: the integer, if any, and the text.
type PidKey = (Option<i64>, String);

/// A held event the window decides: its span and its process.
type Undecided = (Ns, Ns, Option<PidKey>);

/// Events held back, formatted, until the `--steps` window is known.
#[derive(Default)]
struct Held {
    buf: Vec<u8>,
    /// Each event's end in `buf`, how many output events its bytes are, and its span with its
    /// pid when the window decides it (`None`: kept whatever the window, its pid already
    /// noted).
    items: Vec<(usize, u64, Option<Undecided>)>,
}

impl Held {
    fn push(&mut self, ev: &Event<'_>, ctx: &Ctx<'_>, verdict: Verdict, out: &mut Out) {
        let n = format_event(ev, ctx, &mut self.buf);
        let decide = match verdict {
            Verdict::Window(ts, end) => Some((ts, end, pid_key(&ev.pid))),
            _ => {
                track_pid(ev, &mut out.pids, &mut out.last_pid);
                None
            }
        };
        self.items.push((self.buf.len(), n, decide));
    }

    /// Writes the held events `keep` keeps, in order; returns how many it dropped.
    fn release(&mut self, out: &mut Out, mut keep: impl FnMut(Ns, Ns) -> bool) -> u64 {
        let mut dropped = 0;
        let mut start = 0;
        for (end_at, n, decide) in self.items.drain(..) {
            let bytes = &self.buf[start..end_at];
            start = end_at;
            if let Some((ts, end, pid)) = decide {
                if !keep(ts, end) {
                    dropped += 1;
                    continue;
                }
                if let Some((int, key)) = pid {
                    out.pids.entry(key).or_insert(PidMeta {
                        has_sort: false,
                        int,
                    });
                }
            }
            out.formatted(bytes, n);
        }
        self.buf.clear();
        dropped
    }
}

/// Runs the write pass of one rank.
pub(crate) fn write_rank(job: &RankJob) -> Result<RankOut, RankError> {
    let piece = job.piece_path.display();
    let write_err =
        |e: io::Error| RankError::Write(io::Error::new(e.kind(), format!("{piece}: {e}")));
    // A Perfetto rank's `--steps` window is known before (the scan pass): its packets
    // cannot be held back, formatted, as JSON is.
    debug_assert!(!(job.perfetto && job.find_steps.is_some()));
    let mut out = Out::new(job).map_err(write_err)?;
    let mut dropped = 0u64;
    let ctx = Ctx::new(
        job.index as i64,
        job.nranks.max(1) as i64,
        &job.label,
        job.sort_base,
        job.shift,
    );
    let filter_noop = job.filter.is_noop() && job.find_steps.is_none();
    let mut min_ts: Option<Ns> = None;
    let mut max_ts: Option<Ns> = None;
    let mut steps = Steps::default();
    let mut spec = job
        .find_steps
        .map(|(a, b)| SpecWindow::new(a, b, job.filter.window));
    let mut held = Held::default();
    let report = read_trace(&job.path, |ev| {
        if out.err.is_some() {
            return;
        }
        if let Some(ts) = ev.ts {
            min_ts = Some(min_ts.map_or(ts, |m| m.min(ts)));
            let end = Ns::new(
                ts.get()
                    .saturating_add(ev.dur.map_or(0, |d| d.get().max(0))),
            );
            max_ts = Some(max_ts.map_or(end, |m| m.max(end)));
        }
        if filter_noop {
            out.event(ev, &ctx);
            return;
        }
        let verdict = job.filter.classify(ev);
        let Some(sp) = spec.as_mut() else {
            match verdict {
                Verdict::Window(ts, end) if !overlaps(job.filter.window, ts, end) => dropped += 1,
                Verdict::Drop => dropped += 1,
                _ => out.event(ev, &ctx),
            }
            return;
        };
        if let Some(s) = steps.add(ev) {
            sp.add_step(s);
        }
        if !sp.holding && !held.items.is_empty() {
            // The window is settled: what was held is decided first (file order).
            dropped += held.release(&mut out, |ts, end| sp.decide(ts, end));
        }
        match verdict {
            Verdict::Drop => dropped += 1,
            _ if sp.holding => {
                held.push(ev, &ctx, verdict, &mut out);
                if held.buf.len() >= PENDING_CAP {
                    // Full: what it holds is decided with the window as known so far (checked
                    // at the end); holding goes on until the window is settled.
                    dropped += held.release(&mut out, |ts, end| sp.decide(ts, end));
                }
            }
            Verdict::Window(ts, end) if !sp.decide(ts, end) => dropped += 1,
            _ => out.event(ev, &ctx),
        }
    })
    .map_err(RankError::Read)?;
    let mut window_held = true;
    if let Some(sp) = &spec {
        steps.finish();
        let fin = sp.final_window(&steps);
        dropped += held.release(&mut out, |ts, end| overlaps(fin, ts, end));
        window_held = sp.holds(fin);
    }
    if let Some(e) = out.err {
        return Err(write_err(e));
    }
    if let Some(pf) = out.pf.take() {
        let read = ReadDone {
            report,
            dropped,
            min_ts,
            max_ts,
            steps,
        };
        return perfetto_out(job, &ctx, pf, out, read).map_err(write_err);
    }
    let written = out.written;
    let mut w = out.w;
    let mut missing: Vec<_> = out.pids.into_iter().filter(|(_, m)| !m.has_sort).collect();
    missing.sort_by(|a, b| a.0.cmp(&b.0));
    let added = add_sort_indexes(w.buf(), written, &missing, &job.label, &ctx);
    Ok(RankOut {
        report,
        written,
        dropped,
        added,
        piece: w.finish().map_err(write_err)?,
        shift: job.shift,
        min_ts,
        max_ts,
        steps,
        window_held,
        perfetto: None,
    })
}

/// A `process_sort_index` metadata event for each process (`missing`: pid and what the rank
/// saw of it) whose trace has none, after the `written` events already in `buf`, so the
/// viewer keeps the ranks in order. Returns how many were added.
fn add_sort_indexes(
    buf: &mut Vec<u8>,
    written: u64,
    missing: &[(String, PidMeta)],
    label: &str,
    ctx: &Ctx,
) -> u64 {
    let mut added = 0u64;
    for (pid, meta) in missing {
        if written + added > 0 {
            buf.extend_from_slice(b",\n");
        }
        buf.extend_from_slice(b"{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":");
        escape::write_string(buf, &format!("{label} {pid}"));
        buf.extend_from_slice(b",\"tid\":0,\"args\":{\"sort_index\":");
        buf.extend_from_slice(ctx.sort_index(meta.int).to_string().as_bytes());
        buf.extend_from_slice(b"}}");
        added += 1;
    }
    added
}

/// What a rank's read found, besides its output.
struct ReadDone {
    report: ReadReport,
    dropped: u64,
    min_ts: Option<Ns>,
    max_ts: Option<Ns>,
    steps: Steps,
}

/// Ends a Perfetto rank: what its encoder holds back written, its track descriptors made.
fn perfetto_out(
    job: &RankJob,
    ctx: &Ctx<'_>,
    mut pf: RankEncoder,
    mut out: Out,
    read: ReadDone,
) -> io::Result<RankOut> {
    pf.finish(out.w.buf());
    // Ranks in the order their labels give (DP, EP, PP, TP: the JSON's `process_sort_index`).
    let head = pf.descriptors(job.sort_base / 100, |pid| ctx.sort_index(pid));
    Ok(RankOut {
        report: read.report,
        written: out.written,
        dropped: read.dropped,
        added: 0,
        piece: out.w.finish()?,
        shift: job.shift,
        min_ts: read.min_ts,
        max_ts: read.max_ts,
        steps: read.steps,
        window_held: true,
        perfetto: Some(PerfettoOut {
            head,
            stats: pf.stats,
        }),
    })
}

fn pid_key(pid: &Id<'_>) -> Option<PidKey> {
    let mut digits = itoa::Buffer::new();
    pid_text(pid, &mut digits).map(|(int, key)| (int, key.to_string()))
}

/// A process id's integer, if any, and its text (an integer written as `to_string` writes it,
/// into `digits`): the key [`pid_key`] and [`track_pid`] note a process under.
fn pid_text<'a>(pid: &'a Id<'_>, digits: &'a mut itoa::Buffer) -> Option<(Option<i64>, &'a str)> {
    match pid {
        Id::Int(v) => Some((Some(*v), digits.format(*v))),
        Id::Str(s) => Some((None, s.raw())),
        Id::None => None,
    }
}

fn track_pid(
    ev: &Event<'_>,
    pids: &mut FxHashMap<String, PidMeta>,
    last: &mut Option<(Option<i64>, String)>,
) {
    let is_sort = ev.ph == b'M' && ev.name.eq_str("process_sort_index");
    let same = match (&ev.pid, last.as_ref()) {
        (Id::Int(v), Some((Some(l), _))) => v == l,
        (Id::Str(s), Some((None, l))) => s.raw() == l,
        _ => false,
    };
    if same && !is_sort {
        return;
    }
    // The key without allocating unless the process is new: Kineto interleaves the GPU's and
    // the CPU process's events, so the last process differs on a fifth of a real rank's
    // events (#14, tenth round).
    let mut digits = itoa::Buffer::new();
    let Some((int, key)) = pid_text(&ev.pid, &mut digits) else {
        return;
    };
    match pids.get_mut(key) {
        Some(meta) => meta.has_sort |= is_sort,
        None => {
            pids.insert(
                key.to_string(),
                PidMeta {
                    has_sort: is_sort,
                    int,
                },
            );
        }
    }
    match last {
        Some((last_int, last_key)) => {
            *last_int = int;
            last_key.clear();
            last_key.push_str(key);
        }
        None => *last = Some((int, key.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::{track_pid, FxHashMap, PidMeta};
    use crate::trace::read::event::scan_event;
    use crate::trace::read::value::Id;

    /// Over events whose process alternates, repeats, comes back, is an integer or a string
    /// (`"5"` and `5` share a key) or absent, with `process_sort_index` metadata now and
    /// then, the processes noted (and whether each had a sort index, and its integer) are those
    /// of the plain rule: every event's key (an integer's `to_string`) entered, first integer
    /// kept, sort flag or-ed.
    #[test]
    fn track_pid_notes_what_the_plain_rule_notes() {
        let pids = ["0", "7", "2910249", "\"5\"", "5", "\"Spans\"", "-3"];
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut sorts = 0;
        for _ in 0..200 {
            let (mut got, mut last) = (FxHashMap::<String, PidMeta>::default(), None);
            let mut want = FxHashMap::<String, (bool, Option<i64>)>::default();
            for _ in 0..60 {
                let r = crate::testrng::xorshift(&mut x);
                let sort = r.is_multiple_of(7);
                let pid = match (r >> 8) % 9 {
                    8 => String::new(),
                    k => format!(", \"pid\": {}", pids[k as usize % pids.len()]),
                };
                let text = if sort {
                    format!(r#"{{"ph": "M", "name": "process_sort_index"{pid}, "args": {{}}}}"#)
                } else {
                    format!(r#"{{"ph": "X", "name": "k"{pid}, "ts": 1, "dur": 2}}"#)
                };
                let mut f = Vec::new();
                let ev = scan_event(text.as_bytes(), &mut f).unwrap();
                track_pid(&ev, &mut got, &mut last);
                let noted = match ev.pid {
                    Id::Int(v) => Some((Some(v), v.to_string())),
                    Id::Str(s) => Some((None, s.raw().to_string())),
                    Id::None => None,
                };
                if let Some((int, key)) = noted {
                    let w = want.entry(key).or_insert((false, int));
                    w.0 |= sort;
                    sorts += usize::from(sort);
                }
            }
            let got: FxHashMap<_, _> = got
                .into_iter()
                .map(|(k, m)| (k, (m.has_sort, m.int)))
                .collect();
            assert_eq!(got, want);
        }
        assert!(sorts > 1_000, "{sorts}");
    }
}
