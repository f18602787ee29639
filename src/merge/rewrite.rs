//! What the merge changes in an event as it writes it (everything else is copied byte for
//! byte, fields written compact):
//! - `pid` → `"[TP01-DP01] <pid>"` (SGLang's convention), so every process belongs to one rank;
//! - `id` (flows `s`/`t`/`f`, async events) and `args.correlation` / `args["External id"]`:
//!   integer `n` → `n * R + r` (R ranks in the group, r this rank's index), which is one-to-one,
//!   so no flow arrow or correlation joins two ranks; string ids get the rank label in front;
//! - `ts` moves by the rank's clock shift (see [`super::align`]);
//! - `process_name` gets the rank label in front; `process_sort_index` becomes SGLang's
//!   `dp*1e8 + ep*1e6 + pp*1e4 + tp*100 + pid` (pids ≥ 1000, i.e. CPU processes, take 99);
//!   a process without a `process_sort_index` gets one, added at the end of the rank;
//! - a Kineto `[memory]` instant is followed by a `"ph":"C"` point of its rank's "memory
//!   allocated" counter ([`super::memory`]).
//!
//! Raw control bytes inside the input's strings (invalid JSON that the reader lets through and
//! flags) are written escaped as `\u00XX`, so the output is always valid JSON.

use super::args::{each_arg, parse_i64, Arg, ArgKind};
use super::emit::{Emit, WIDE};
use super::memory;
use crate::trace::read::escape;
use crate::trace::read::event::Event;
use crate::trace::read::json::Kind;
use crate::trace::read::value::Id;
use crate::trace::Ns;

/// Writes `ev` as output JSON at the end of `buf`; returns how many events that is (2 for a
/// `[memory]` instant, with its counter point).
pub(super) fn format_event(ev: &Event<'_>, ctx: &Ctx<'_>, buf: &mut Vec<u8>) -> u64 {
    let start = buf.len();
    write_event(ev, ctx, &mut Emit::new(buf, ev.raw.as_bytes()));
    if ev.ctl {
        // Raw control bytes in the input's strings: the output must be valid JSON.
        escape::escape_ctl_from(buf, start);
    }
    if let Some(s) = memory::sample(ev) {
        buf.extend_from_slice(b",\n");
        write_memory(ev, &s, ctx, &mut Emit::new(buf, ev.raw.as_bytes()));
        return 2;
    }
    1
}

/// The memory counter's point after a `[memory]` instant ([`memory`]): `{"ph":"C",
/// "name":"memory allocated","pid":…,"ts":…,"args":{"<device>":<Total Allocated>}}`, on the
/// instant's process and time.
fn write_memory(ev: &Event<'_>, s: &memory::Sample<'_>, ctx: &Ctx<'_>, out: &mut Emit<'_, '_>) {
    out.piece(b"{\"ph\":\"C\",\"cat\":\"rankprof\",\"name\":\"");
    out.piece(memory::COUNTER.as_bytes());
    out.piece(b"\",\"pid\":");
    match ev.pid {
        Id::Int(v) => ctx.write_labelled_int(v, out),
        Id::Str(p) => ctx.write_labelled(p.raw().as_bytes(), out),
        Id::None => out.piece(b"0"),
    }
    out.piece(b",\"ts\":");
    let ts = ev.ts.unwrap_or(Ns::ZERO) + ctx.shift;
    out.with_vec(|o| ts.write_us(o));
    out.piece(b",\"args\":{\"");
    out.piece(s.series.as_bytes());
    out.piece(b"\":");
    out.piece(s.raw.as_bytes());
    out.piece(b"}}");
}

/// One rank's rewriting: its index among R ranks, its label, its sort base and clock shift.
pub(super) struct Ctx<'a> {
    r: i64,
    n: i64,
    label: &'a str,
    /// `"<label> ` as JSON (the opening quote, the escaped label and a space), followed by
    /// [`WIDE`] bytes to spare for [`Emit::padded`].
    label_open: Vec<u8>,
    sort_base: i64,
    shift: Ns,
}

impl<'a> Ctx<'a> {
    pub(super) fn new(r: i64, n: i64, label: &'a str, sort_base: i64, shift: Ns) -> Self {
        let mut label_open = Vec::new();
        escape::write_string(&mut label_open, label);
        label_open.pop();
        label_open.push(b' ');
        label_open.resize(label_open.len() + WIDE, 0);
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
    /// A process's `process_sort_index`: the rank's base plus a device pid (Kineto's GPU pids
    /// are device indices), else 99, last in the rank. SGLang's merger takes any pid below
    /// 1000 as a device: a container's CPU process (pid 150) then sorts among the next rank's
    /// (its base is 100 higher); here the offset stays inside the rank's 100.
    pub(super) fn sort_index(&self, pid: Option<i64>) -> i64 {
        match pid {
            Some(p) if (0..99).contains(&p) => self.sort_base + p,
            _ => self.sort_base + 99,
        }
    }

    /// Writes an integer id made unique across ranks.
    fn write_int_id(&self, v: i64, out: &mut Emit<'_, '_>) {
        match v.checked_mul(self.n).and_then(|x| x.checked_add(self.r)) {
            Some(x) => out.int(x),
            None => out.with_vec(|o| escape::write_string(o, &format!("{} {v}", self.label))),
        }
    }

    /// Writes `"<label> <raw_str>"`; `raw_str` is JSON string content, escapes as written.
    fn write_labelled(&self, raw_str: &[u8], out: &mut Emit<'_, '_>) {
        out.padded(&self.label_open);
        out.piece(raw_str);
        out.byte(b'"');
    }

    fn write_labelled_int(&self, v: i64, out: &mut Emit<'_, '_>) {
        out.padded(&self.label_open);
        out.int(v);
        out.byte(b'"');
    }
}

fn write_event(ev: &Event<'_>, ctx: &Ctx<'_>, out: &mut Emit<'_, '_>) {
    let raw = ev.raw.as_bytes();
    out.byte(b'{');
    for (k, f) in ev.fields.iter().enumerate() {
        if k > 0 {
            out.byte(b',');
        }
        let key = f.key(raw);
        // `"key"` in one piece: the key range is the text between its quotes.
        match raw.get(f.key.0.wrapping_sub(1) as usize..f.key.1 as usize + 1) {
            Some(quoted) => out.piece(quoted),
            None => {
                out.byte(b'"');
                out.piece(key);
                out.byte(b'"');
            }
        }
        out.byte(b':');
        match key {
            b"pid" => match ev.pid {
                // Written as itoa would write it: copied.
                Id::Int(_) if canonical_uint(f.val(raw)) => ctx.write_labelled(f.val(raw), out),
                Id::Int(v) => ctx.write_labelled_int(v, out),
                Id::Str(s) => ctx.write_labelled(s.raw().as_bytes(), out),
                Id::None => out.piece(f.raw_val(raw)),
            },
            b"ts" if ctx.shift != Ns::ZERO => match ev.ts {
                Some(ts) => out.with_vec(|o| (ts + ctx.shift).write_us(o)),
                None => out.piece(f.raw_val(raw)),
            },
            b"id" => match ev.id {
                Id::Int(v) => ctx.write_int_id(v, out),
                Id::Str(s) => ctx.write_labelled(s.raw().as_bytes(), out),
                Id::None => out.piece(f.raw_val(raw)),
            },
            b"args" if f.kind == Kind::Obj => write_args(ev, f.val(raw), ctx, out),
            _ => out.piece(f.raw_val(raw)),
        }
    }
    out.byte(b'}');
}

/// Whether `b` is a non-negative integer as itoa writes it: digits, no leading zero.
fn canonical_uint(b: &[u8]) -> bool {
    !b.is_empty() && b.iter().all(u8::is_ascii_digit) && (b.len() == 1 || b[0] != b'0')
}

/// Writes `args` with its ids made unique and, in process metadata, its name labelled and
/// sort index set, member by member (those the reader found as it validated them,
/// [`crate::trace::read::object`]; else [`each_arg`]'s walk), writing it compact as it goes; an
/// object without an id key (nor metadata) is copied as it was written instead (the input's
/// bytes, spaces kept).
fn write_args(ev: &Event<'_>, text: &[u8], ctx: &Ctx<'_>, out: &mut Emit<'_, '_>) {
    let start = out.len();
    let changed = match ev.arg_fields {
        Some(fields) => {
            let raw = ev.raw.as_bytes();
            write_members(ev, fields.iter().map(|f| Arg::of_field(f, raw)), ctx, out)
        }
        // An event scanned on its own (tests): walked here.
        None => {
            let mut found = Vec::new();
            each_arg(text, |a| found.push(a));
            write_members(ev, found.into_iter(), ctx, out)
        }
    };
    if !changed {
        out.truncate(start);
        out.piece(text);
    }
}

/// Writes `members` compact as an object; whether any was rewritten (metadata always is).
#[inline]
fn write_members<'a>(
    ev: &Event<'_>,
    members: impl Iterator<Item = Arg<'a>>,
    ctx: &Ctx<'_>,
    out: &mut Emit<'_, '_>,
) -> bool {
    let meta = ev.ph == b'M';
    let process_name = meta && ev.name.eq_str("process_name");
    let sort_index = meta && ev.name.eq_str("process_sort_index");
    // Metadata objects are always written compact, others only when they hold an id key.
    let mut changed = meta;
    out.byte(b'{');
    for (n, a) in members.enumerate() {
        if n > 0 {
            out.byte(b',');
        }
        out.piece(a.quoted_key);
        out.byte(b':');
        let key = a.key();
        let id = match key {
            b"correlation" | b"External id" => {
                changed = true;
                (a.kind == ArgKind::Num)
                    .then(|| parse_i64(a.raw_val))
                    .flatten()
            }
            _ => None,
        };
        match (key, id) {
            (_, Some(id)) => ctx.write_int_id(id, out),
            (b"name", None) if process_name && a.kind == ArgKind::Str => {
                ctx.write_labelled(a.val(), out);
            }
            (b"sort_index", None) if sort_index => {
                let pid = match ev.pid {
                    Id::Int(v) => Some(v),
                    _ => None,
                };
                out.int(ctx.sort_index(pid));
            }
            _ => out.piece(a.raw_val),
        }
    }
    out.byte(b'}');
    changed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_uint_is_what_itoa_writes() {
        for v in [0u64, 7, 10, 14789, u64::MAX] {
            assert!(canonical_uint(itoa::Buffer::new().format(v).as_bytes()));
        }
        for b in ["", "-1", "007", "00", "1.5", "1e3", "+1"] {
            assert!(!canonical_uint(b.as_bytes()), "{b}");
        }
    }
    use crate::trace::read::event::scan_event;

    fn rewrite(src: &str, r: i64, n: i64, shift: i64) -> serde_json::Value {
        let mut f = Vec::new();
        let ev = scan_event(src.as_bytes(), &mut f).unwrap();
        let ctx = Ctx::new(r, n, "[TP01]", 100, Ns::new(shift));
        let mut out = Vec::new();
        format_event(&ev, &ctx, &mut out);
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

    /// Events of many layouts and value lengths (pieces shorter and longer than a wide
    /// copy, at the text's end or not), labels short and long, `args` rewritten or not: each
    /// is written as built here, compact at the top level and in a rewritten `args`, nested
    /// values as written.
    #[test]
    fn copies_every_layout() {
        let long_label = "[TP07-DP03-PP01-EP15 long-prefix-of-a-label]";
        for (label, sep, colon) in [
            ("[TP01]", ",", ":"),
            ("[TP01]", ", ", ": "),
            (long_label, ",\n    ", ":"),
            (long_label, " ,", " : "),
        ] {
            for n in 0..80 {
                let v = "x".repeat(n);
                let k = "k".repeat(n % 40 + 1);
                let arr = format!("[1{sep}2]");
                let corr = n % 2 == 0;
                let args = format!(
                    "{{\"a\"{colon}{arr}{sep}\"{k}\"{colon}\"{v}\"{}}}",
                    if corr {
                        format!("{sep}\"correlation\"{colon}{n}")
                    } else {
                        String::new()
                    }
                );
                let src = format!(
                    "{{\"ph\"{colon}\"X\"{sep}\"name\"{colon}\"{v}\"{sep}\"pid\"{colon}\"p{v}\"\
                     {sep}\"ts\"{colon}1{n}.25{sep}\"dur\"{colon}{n}{sep}\"{k}\"{colon}{n}{sep}\
                     \"args\"{colon}{args}{sep}\"z\"{colon}\"{v}\"}}"
                );
                let args_out = match corr {
                    true => format!("{{\"a\":{arr},\"{k}\":\"{v}\",\"correlation\":{n}}}"),
                    false => args,
                };
                let want = format!(
                    "prefix{{\"ph\":\"X\",\"name\":\"{v}\",\"pid\":\"{label} p{v}\",\
                     \"ts\":1{n}.25,\"dur\":{n},\"{k}\":{n},\"args\":{args_out},\"z\":\"{v}\"}}"
                );
                let mut f = Vec::new();
                let ev = scan_event(src.as_bytes(), &mut f).unwrap();
                let ctx = Ctx::new(0, 1, label, 0, Ns::new(0));
                let mut out = b"prefix".to_vec();
                format_event(&ev, &ctx, &mut out);
                assert_eq!(String::from_utf8(out).unwrap(), want, "{n}");
            }
        }
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
