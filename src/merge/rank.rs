//! One rank's pass through the merge: read its file event by event, relabel and de-collide,
//! shift its clock, filter, and stream the result into its own compressed piece.
//!
//! What changes in an event (everything else is copied byte for byte):
//! - `pid` → `"[TP01-DP01] <pid>"` (SGLang's convention), so every process belongs to one rank;
//! - `id` (flows `s`/`t`/`f`, async events) and `args.correlation` / `args["External id"]`:
//!   integer `n` → `n * R + r` (R ranks in the group, r this rank's index), which is one-to-one,
//!   so no flow arrow or correlation joins two ranks; string ids get the rank label in front;
//! - `ts` moves by the rank's clock shift (see [`super::align`]);
//! - `process_name` gets the rank label in front; `process_sort_index` becomes SGLang's
//!   `dp*1e8 + ep*1e6 + pp*1e4 + tp*100 + pid` (pids ≥ 1000, i.e. CPU processes, take 99);
//!   a process without a `process_sort_index` gets one, added at the end of the rank.
//!
//! Raw control bytes inside the input's strings (invalid JSON that the reader lets through and
//! flags) are written escaped as `\u00XX`, so the output is always valid JSON.

use std::collections::HashMap;
use std::fmt;
use std::io;
use std::path::PathBuf;

use crate::trace::event::{each_field, Event, Id};
use crate::trace::json::{self, Kind};
use crate::trace::steps::{step_mark, StepMark};
use crate::trace::writer::{Piece, PieceWriter};
use crate::trace::{read_trace, Ns, RankFile, ReadReport};

use super::filter::Filter;

/// What the scan pass learns of a rank (for `--align first-step` and `--steps`).
#[derive(Clone, Debug, Default)]
pub struct ScanInfo {
    pub report: Option<ReadReport>,
    /// The earliest `ts`.
    pub min_ts: Option<Ns>,
    /// `(ProfilerStep number or None, start, end)` in the rank's own `ts`, sorted by start.
    pub steps: Vec<(Option<u64>, Ns, Ns)>,
}

impl ScanInfo {
    pub fn first_step(&self) -> Option<Ns> {
        self.steps.first().map(|s| s.1)
    }

    /// The time span of steps `[a, b)`: by ProfilerStep number when the rank has them, else by
    /// the order of its SGLang step annotations.
    pub fn window_of_steps(&self, a: u64, b: u64) -> Option<(Ns, Ns)> {
        let numbered = self.steps.iter().any(|s| s.0.is_some());
        let chosen: Vec<_> = self
            .steps
            .iter()
            .filter(|s| s.0.is_some() == numbered)
            .enumerate()
            .filter(|(i, s)| {
                let n = if numbered {
                    s.0.unwrap_or(0)
                } else {
                    *i as u64
                };
                (a..b).contains(&n)
            })
            .map(|(_, s)| (s.1, s.2))
            .collect();
        let lo = chosen.iter().map(|s| s.0).min()?;
        let hi = chosen.iter().map(|s| s.1).max()?;
        Some((lo, hi))
    }
}

/// Reads a rank once to find its steps (and its header).
pub fn scan(file: &RankFile) -> io::Result<ScanInfo> {
    let mut info = ScanInfo::default();
    let report = read_trace(&file.path, |ev| {
        if let Some(ts) = ev.ts {
            info.min_ts = Some(info.min_ts.map_or(ts, |m| m.min(ts)));
        }
        if let (Some(mark), Some(ts)) = (step_mark(ev), ev.ts) {
            let n = match mark {
                StepMark::Profiler(n) => n,
                StepMark::Forward => None,
            };
            info.steps.push((n, ts, ts + ev.dur.unwrap_or(Ns::ZERO)));
        }
    })?;
    // With both kinds present, ProfilerStep#N define the steps.
    if info.steps.iter().any(|s| s.0.is_some()) {
        info.steps.retain(|s| s.0.is_some());
    }
    info.steps.sort_by_key(|s| s.1);
    info.report = Some(report);
    Ok(info)
}

/// Everything one rank's write pass needs.
#[derive(Clone, Debug)]
pub struct RankJob {
    pub index: usize,
    pub nranks: usize,
    pub label: String,
    pub sort_base: i64,
    pub path: PathBuf,
    pub shift: Ns,
    pub filter: Filter,
    pub level: u32,
    pub piece_path: PathBuf,
}

/// What one rank's write pass did.
pub struct RankOut {
    pub report: ReadReport,
    /// Input events written to the output.
    pub written: u64,
    /// Input events the filters dropped.
    pub dropped: u64,
    /// Metadata events added (`process_sort_index` for processes without one).
    pub added: u64,
    pub piece: Piece,
    pub shift: Ns,
    /// The earliest input `ts` (before the shift).
    pub min_ts: Option<Ns>,
    /// The latest input event end, `ts + dur` (before the shift).
    pub max_ts: Option<Ns>,
}

#[derive(Default)]
struct PidMeta {
    has_sort: bool,
    int: Option<i64>,
}

/// Why a rank's write pass failed.
#[derive(Debug)]
pub enum RankError {
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

/// Runs the write pass of one rank.
pub fn write_rank(job: &RankJob) -> Result<RankOut, RankError> {
    let piece = job.piece_path.display();
    let write_err =
        |e: io::Error| RankError::Write(io::Error::new(e.kind(), format!("{piece}: {e}")));
    let mut w = PieceWriter::create(&job.piece_path, job.level).map_err(write_err)?;
    let mut written = 0u64;
    let mut dropped = 0u64;
    let mut pids: HashMap<String, PidMeta> = HashMap::new();
    let mut last_pid: Option<(Option<i64>, String)> = None;
    let mut err: Option<io::Error> = None;
    let ctx = Ctx::new(
        job.index as i64,
        job.nranks.max(1) as i64,
        &job.label,
        job.sort_base,
        job.shift,
    );
    let filter_noop = job.filter.is_noop();
    let mut min_ts: Option<Ns> = None;
    let mut max_ts: Option<Ns> = None;
    let report = read_trace(&job.path, |ev| {
        if err.is_some() {
            return;
        }
        if let Some(ts) = ev.ts {
            min_ts = Some(min_ts.map_or(ts, |m| m.min(ts)));
            let end = Ns(ts.0.saturating_add(ev.dur.map_or(0, |d| d.0.max(0))));
            max_ts = Some(max_ts.map_or(end, |m| m.max(end)));
        }
        if !filter_noop && !job.filter.keep(ev) {
            dropped += 1;
            return;
        }
        track_pid(ev, &mut pids, &mut last_pid);
        let buf = w.buf();
        if written > 0 {
            buf.extend_from_slice(b",\n");
        }
        let start = buf.len();
        write_event(ev, &ctx, buf);
        if ev.ctl {
            // Raw control bytes in the input's strings: the output must be valid JSON.
            json::escape_ctl_from(buf, start);
        }
        written += 1;
        if let Err(e) = w.maybe_flush() {
            err = Some(e);
        }
    })
    .map_err(RankError::Read)?;
    if let Some(e) = err {
        return Err(write_err(e));
    }
    let mut added = 0u64;
    let mut missing: Vec<_> = pids.into_iter().filter(|(_, m)| !m.has_sort).collect();
    missing.sort_by(|a, b| a.0.cmp(&b.0));
    for (pid, meta) in missing {
        let buf = w.buf();
        if written + added > 0 {
            buf.extend_from_slice(b",\n");
        }
        buf.extend_from_slice(b"{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":");
        json::write_string(buf, &format!("{} {pid}", job.label));
        buf.extend_from_slice(b",\"tid\":0,\"args\":{\"sort_index\":");
        buf.extend_from_slice(ctx.sort_index(meta.int).to_string().as_bytes());
        buf.extend_from_slice(b"}}");
        added += 1;
    }
    Ok(RankOut {
        report,
        written,
        dropped,
        added,
        piece: w.finish().map_err(write_err)?,
        shift: job.shift,
        min_ts,
        max_ts,
    })
}

fn track_pid(
    ev: &Event<'_>,
    pids: &mut HashMap<String, PidMeta>,
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
    let (int, key) = match ev.pid {
        Id::Int(v) => (Some(v), v.to_string()),
        Id::Str(s) => (None, s.raw().to_string()),
        Id::None => return,
    };
    let meta = pids.entry(key.clone()).or_insert_with(|| PidMeta {
        has_sort: false,
        int,
    });
    meta.has_sort |= is_sort;
    *last = Some((int, key));
}

struct Ctx<'a> {
    r: i64,
    n: i64,
    label: &'a str,
    /// `"<label> ` as JSON: the opening quote, the escaped label and a space.
    label_open: Vec<u8>,
    sort_base: i64,
    shift: Ns,
}

impl<'a> Ctx<'a> {
    fn new(r: i64, n: i64, label: &'a str, sort_base: i64, shift: Ns) -> Self {
        let mut label_open = Vec::new();
        json::write_string(&mut label_open, label);
        label_open.pop();
        label_open.push(b' ');
        Ctx {
            r,
            n,
            label,
            label_open,
            sort_base,
            shift,
        }
    }
}

impl Ctx<'_> {
    fn sort_index(&self, pid: Option<i64>) -> i64 {
        match pid {
            Some(p) if (0..1000).contains(&p) => self.sort_base + p,
            _ => self.sort_base + 99,
        }
    }

    /// Writes an integer id made unique across ranks.
    fn write_int_id(&self, v: i64, out: &mut Vec<u8>) {
        match v.checked_mul(self.n).and_then(|x| x.checked_add(self.r)) {
            Some(x) => out.extend_from_slice(itoa::Buffer::new().format(x).as_bytes()),
            None => json::write_string(out, &format!("{} {v}", self.label)),
        }
    }

    /// Writes `"<label> <raw_str>"`; `raw_str` is JSON string content, escapes as written.
    fn write_labelled(&self, raw_str: &str, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.label_open);
        out.extend_from_slice(raw_str.as_bytes());
        out.push(b'"');
    }

    fn write_labelled_int(&self, v: i64, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.label_open);
        out.extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
        out.push(b'"');
    }
}

fn write_event(ev: &Event<'_>, ctx: &Ctx<'_>, out: &mut Vec<u8>) {
    let raw = ev.raw.as_bytes();
    out.push(b'{');
    for (k, f) in ev.fields.iter().enumerate() {
        if k > 0 {
            out.push(b',');
        }
        let key = f.key(raw);
        out.push(b'"');
        out.extend_from_slice(key);
        out.extend_from_slice(b"\":");
        match key {
            b"pid" => match ev.pid {
                Id::Int(v) => ctx.write_labelled_int(v, out),
                Id::Str(s) => ctx.write_labelled(s.raw(), out),
                Id::None => out.extend_from_slice(f.raw_val(raw)),
            },
            b"ts" if ctx.shift != Ns::ZERO => match ev.ts {
                Some(ts) => (ts + ctx.shift).write_us(out),
                None => out.extend_from_slice(f.raw_val(raw)),
            },
            b"id" => match ev.id {
                Id::Int(v) => ctx.write_int_id(v, out),
                Id::Str(s) => ctx.write_labelled(s.raw(), out),
                Id::None => out.extend_from_slice(f.raw_val(raw)),
            },
            b"args" if f.kind == Kind::Obj => write_args(ev, f.val(raw), ctx, out),
            _ => out.extend_from_slice(f.raw_val(raw)),
        }
    }
    out.push(b'}');
}

fn write_args(ev: &Event<'_>, args: &[u8], ctx: &Ctx<'_>, out: &mut Vec<u8>) {
    let meta = ev.ph == b'M';
    let Ok(text) = std::str::from_utf8(args) else {
        out.extend_from_slice(args);
        return;
    };
    if !meta && !text.contains("\"correlation\"") && !text.contains("\"External id\"") {
        out.extend_from_slice(args);
        return;
    }
    let process_name = meta && ev.name.eq_str("process_name");
    let sort_index = meta && ev.name.eq_str("process_sort_index");
    out.push(b'{');
    let mut first = true;
    each_field(text, |key, kind, val| {
        if !first {
            out.push(b',');
        }
        first = false;
        out.push(b'"');
        out.extend_from_slice(key.as_bytes());
        out.extend_from_slice(b"\":");
        let int = || {
            (kind == Kind::Num)
                .then(|| val.parse::<i64>().ok())
                .flatten()
        };
        match key {
            "correlation" | "External id" if int().is_some() => {
                ctx.write_int_id(int().unwrap_or(0), out);
            }
            "name" if process_name && matches!(kind, Kind::Str { .. }) => {
                ctx.write_labelled(val, out);
            }
            "sort_index" if sort_index => {
                let pid = match ev.pid {
                    Id::Int(v) => Some(v),
                    _ => None,
                };
                out.extend_from_slice(ctx.sort_index(pid).to_string().as_bytes());
            }
            _ => match kind {
                Kind::Str { .. } => {
                    out.push(b'"');
                    out.extend_from_slice(val.as_bytes());
                    out.push(b'"');
                }
                _ => out.extend_from_slice(val.as_bytes()),
            },
        }
        true
    });
    out.push(b'}');
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::event::scan_event;

    fn rewrite(src: &str, r: i64, n: i64, shift: i64) -> serde_json::Value {
        let mut f = Vec::new();
        let ev = scan_event(src.as_bytes(), &mut f).unwrap();
        let ctx = Ctx::new(r, n, "[TP01]", 100, Ns(shift));
        let mut out = Vec::new();
        write_event(&ev, &ctx, &mut out);
        serde_json::from_slice(&out).unwrap()
    }

    #[test]
    fn relabels_and_decollides() {
        let v = rewrite(
            r#"{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":10.5,"dur":1,"args":{"correlation":5,"External id":9,"stream":7}}"#,
            1,
            4,
            2_000,
        );
        assert_eq!(v["pid"], "[TP01] 0");
        assert_eq!(v["tid"], 7);
        assert_eq!(v["ts"], 12.5);
        assert_eq!(v["args"]["correlation"], 5 * 4 + 1);
        assert_eq!(v["args"]["External id"], 9 * 4 + 1);
        assert_eq!(v["args"]["stream"], 7);
        let v = rewrite(
            r#"{"ph":"s","id":5,"pid":"Spans","tid":"x","ts":1,"cat":"ac2g","name":"ac2g"}"#,
            3,
            4,
            0,
        );
        assert_eq!(v["id"], 23);
        assert_eq!(v["pid"], "[TP01] Spans");
    }

    #[test]
    fn rewrites_process_metadata() {
        let v = rewrite(
            r#"{"ph":"M","name":"process_name","pid":3,"tid":0,"args":{"name":"python3"}}"#,
            1,
            2,
            0,
        );
        assert_eq!(v["args"]["name"], "[TP01] python3");
        let v = rewrite(
            r#"{"ph":"M","name":"process_sort_index","pid":3,"tid":0,"args":{"sort_index":3}}"#,
            1,
            2,
            0,
        );
        assert_eq!(v["args"]["sort_index"], 103);
        let v = rewrite(
            r#"{"ph":"M","name":"process_sort_index","pid":31337,"tid":0,"args":{"sort_index":5}}"#,
            1,
            2,
            0,
        );
        assert_eq!(v["args"]["sort_index"], 199);
    }
}
