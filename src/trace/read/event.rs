//! The one `Event` view that merge, analyze and compare consume: a borrowed, already validated
//! trace event. The common fields are decoded once (`ph`, `cat`, `name`, `pid`, `tid`, `ts`,
//! `dur`, `id`); `args` stays raw and is searched on demand; every field is still available as
//! raw bytes so a writer can copy what it does not change (escaping raw control bytes first
//! when [`Event::ctl`] says the event holds any). The values it hands out are
//! [`super::value`]'s; the lookups in its `args`, [`super::args`]'s.

use super::args::{find_all_in_args, find_in_args, find_in_object, find_int_in_args, ArgKey};
use super::json::{Field, Kind};
use super::memo::Memo;
use super::object;
use super::stop::Stop;
use super::value::{parse_int, Id, Str, Val};
use crate::trace::time::Ns;

/// One trace event, borrowed from the reader's buffer.
#[derive(Clone, Copy, Debug)]
pub struct Event<'a> {
    /// The event's JSON text, exactly as in the input.
    pub raw: &'a str,
    /// Byte offset of the event in the decompressed input.
    pub offset: u64,
    /// Every top-level field, in input order, as ranges into `raw`.
    pub fields: &'a [Field],
    /// The phase character (`X`, `M`, `i`, `s`, `f`, …).
    pub ph: u8,
    pub name: Str<'a>,
    pub cat: Str<'a>,
    pub pid: Id<'a>,
    pub tid: Id<'a>,
    pub ts: Option<Ns>,
    pub dur: Option<Ns>,
    pub id: Id<'a>,
    /// The raw `args` object, if any.
    pub args: Option<&'a str>,
    /// The members of `args`, as ranges into `raw`, when the reader found them while
    /// validating ([`super::object::ArgMembers`]); `None` otherwise (skimming readers,
    /// [`scan_event`]).
    pub arg_fields: Option<&'a [Field]>,
    /// Some string of the event holds a raw control byte (U+0000–U+001F), which JSON forbids:
    /// `raw` must go through [`super::escape::escape_ctl`] before it is written out.
    pub ctl: bool,
}

/// Why an event was rejected; the offset is relative to the event's start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventError {
    pub at: usize,
    pub msg: String,
}

fn bad(at: usize, msg: impl Into<String>) -> EventError {
    EventError {
        at,
        msg: msg.into(),
    }
}

/// Why one field was refused, before its message is written (see [`Bad::at`]).
#[derive(Clone, Copy, Debug)]
enum Bad {
    NotString,
    IntTooBig,
    NotInt,
    NotIntOrString,
    TimeRange,
    NotNumber,
    ArgsNotObject,
}

impl Bad {
    /// The error for field `f` of the event `b`: built only when an event is refused.
    #[cold]
    #[inline(never)]
    fn at(self, f: &Field, b: &[u8]) -> EventError {
        let what = String::from_utf8_lossy(f.key(b));
        let msg = match self {
            Bad::NotString => format!("\"{what}\" is not a string"),
            Bad::IntTooBig => format!("\"{what}\" is an integer beyond 64 bits"),
            Bad::NotInt => format!("\"{what}\" is not an integer"),
            Bad::NotIntOrString => format!("\"{what}\" is neither an integer nor a string"),
            Bad::TimeRange => format!("\"{what}\" does not fit in 64-bit nanoseconds"),
            Bad::NotNumber => format!("\"{what}\" is not a number"),
            Bad::ArgsNotObject => "\"args\" is not an object".to_string(),
        };
        bad(f.val_start(), msg)
    }
}

impl<'a> Event<'a> {
    /// Builds the view over a scanned object. `raw` must be the object's bytes and `fields` its
    /// fields as found by [`object::scan_object`].
    ///
    /// Inlined into the reader (#14, tenth round): returned from a call, the 232-byte view was
    /// copied (`memcpy`) out of the `Result` into the reader's frame, and the reader's next
    /// read of one of its bytes (`ctl`) waited on that copy's stores: the line after the copy
    /// held ~5 % of the reader loop's own samples (`perf annotate`). Inlined, the view is built
    /// where it is used: −0.6 to −1 % CPU on analyze and merge (`task-clock`, best of 7).
    #[inline(always)]
    pub fn from_fields(
        raw: &'a [u8],
        offset: u64,
        fields: &'a [Field],
    ) -> Result<Self, EventError> {
        let raw = match utf8(raw) {
            Ok(s) => s,
            Err(e) => return Err(bad(e.valid_up_to(), "invalid UTF-8")),
        };
        let b = raw.as_bytes();
        let mut ev = Event {
            raw,
            offset,
            fields,
            ph: 0,
            name: Str::default(),
            cat: Str::default(),
            pid: Id::None,
            tid: Id::None,
            ts: None,
            dur: None,
            id: Id::None,
            args: None,
            arg_fields: None,
            ctl: false,
        };
        let text = |f: &Field| &raw[f.val.0 as usize..f.val.1 as usize];
        // The decoders answer a one-byte `Bad`; the message is only built on the cold path.
        let string = |f: &Field| match f.kind {
            Kind::Str { escaped } => Ok(Str::new(text(f), escaped)),
            _ => Err(Bad::NotString),
        };
        let id = |f: &Field| match f.kind {
            Kind::Str { escaped } => Ok(Id::Str(Str::new(text(f), escaped))),
            Kind::Num => match parse_int(text(f).as_bytes()) {
                Some(v) => Ok(Id::Int(v)),
                None if text(f).bytes().all(|c| c.is_ascii_digit() || c == b'-') => {
                    Err(Bad::IntTooBig)
                }
                None => Err(Bad::NotInt),
            },
            Kind::Null => Ok(Id::None),
            _ => Err(Bad::NotIntOrString),
        };
        let time = |f: &Field| match f.kind {
            Kind::Num => Ns::parse_us(text(f).as_bytes())
                .map(Some)
                .ok_or(Bad::TimeRange),
            Kind::Null => Ok(None),
            _ => Err(Bad::NotNumber),
        };
        let mut have_ph = false;
        for f in fields {
            ev.ctl |= f.ctl;
            // Byte patterns, not string literals: a length test and a few byte compares,
            // no call to memcmp per key.
            let done = match *f.key(b) {
                [b'p', b'h'] => string(f).map(|s| {
                    ev.ph = s.raw().as_bytes().first().copied().unwrap_or(0);
                    have_ph = true;
                }),
                [b'n', b'a', b'm', b'e'] => string(f).map(|s| ev.name = s),
                [b'c', b'a', b't'] => string(f).map(|s| ev.cat = s),
                [b'p', b'i', b'd'] => id(f).map(|v| ev.pid = v),
                [b't', b'i', b'd'] => id(f).map(|v| ev.tid = v),
                [b't', b's'] => time(f).map(|v| ev.ts = v),
                [b'd', b'u', b'r'] => time(f).map(|v| ev.dur = v),
                [b'i', b'd'] => id(f).map(|v| ev.id = v),
                [b'a', b'r', b'g', b's'] => match f.kind {
                    Kind::Obj => {
                        ev.args = Some(text(f));
                        Ok(())
                    }
                    _ => Err(Bad::ArgsNotObject),
                },
                _ => Ok(()),
            };
            if let Err(e) = done {
                return Err(e.at(f, b));
            }
        }
        if !have_ph {
            return Err(bad(0, "event has no \"ph\""));
        }
        if ev.ph != b'M' && ev.ts.is_none() {
            return Err(bad(0, "event has no \"ts\""));
        }
        if ev.ph == b'X' && ev.dur.is_none() {
            return Err(bad(0, "complete event (ph \"X\") has no \"dur\""));
        }
        Ok(ev)
    }

    /// End time (`ts + dur`), for events that have both.
    pub fn end(&self) -> Option<Ns> {
        Some(self.ts? + self.dur.unwrap_or(Ns::ZERO))
    }

    /// Looks up one key of `args`.
    pub fn arg(&self, key: &str) -> Option<Val<'a>> {
        find_in_object(self.args?, key)
    }

    /// [`Event::arg`] searching `args` for the key first ([`find_in_args`]), the walk it falls
    /// back on taking the stretches between values from a memo of `args` layouts, by the last
    /// byte of `cat` (`kernel`, `cuda_runtime`, `cpu_op` fall in different slots).
    #[inline]
    pub fn arg_found(&self, key: &ArgKey, memo: &mut Memo) -> Option<Val<'a>> {
        find_in_args(self.args?, key, memo, self.args_kind())
    }

    /// [`Event::arg_found`] read as an integer ([`Val::as_i64`]; [`find_int_in_args`]).
    #[inline]
    pub fn arg_i64(&self, key: &ArgKey, memo: &mut Memo) -> Option<i64> {
        find_int_in_args(self.args?, key, memo, self.args_kind())
    }

    /// [`Event::arg_found`] for several keys ([`find_all_in_args`]): `out[n]` is what
    /// `arg_found(&keys[n], memo)` answers.
    pub fn arg_found_all(&self, keys: &[ArgKey], memo: &mut Memo, out: &mut [Option<Val<'a>>]) {
        match self.args {
            Some(args) => find_all_in_args(args, keys, memo, self.args_kind(), out),
            None => out.fill(None),
        }
    }

    /// The memo slot of this event's `args` layouts: the last byte of `cat`.
    fn args_kind(&self) -> u8 {
        self.cat.raw().as_bytes().last().copied().unwrap_or(0)
    }
}

/// `std::str::from_utf8`, answering at once for the common event that is all ASCII: an OR
/// of 16-byte words (one vector OR each) has no per-byte branch, and its high bits
/// are tested once at the end.
#[inline]
fn utf8(b: &[u8]) -> Result<&str, std::str::Utf8Error> {
    let mut words = b.chunks_exact(16);
    let mut acc = words.by_ref().fold(0u128, |a, w| {
        let mut x = [0u8; 16];
        x.copy_from_slice(w);
        a | u128::from_le_bytes(x)
    });
    for &x in words.remainder() {
        acc |= u128::from(x);
    }
    if acc & 0x8080_8080_8080_8080_8080_8080_8080_8080 == 0 {
        // SAFETY: every byte is below 0x80, and ASCII is valid UTF-8.
        Ok(unsafe { std::str::from_utf8_unchecked(b) })
    } else {
        std::str::from_utf8(b)
    }
}

/// Scans `b` as an event object (it must start with `{`): convenience for tests and small
/// inputs.
pub fn scan_event<'a>(b: &'a [u8], fields: &'a mut Vec<Field>) -> Result<Event<'a>, EventError> {
    // `scan_object` trusts its caller to have seen the opening brace (the reader has).
    if b.first() != Some(&b'{') {
        return Err(bad(0, "an event is a JSON object: expected '{'"));
    }
    let end = match object::scan_object(b, 0, fields) {
        Ok(e) => e,
        Err(Stop::Incomplete) => return Err(bad(b.len(), "truncated")),
        Err(Stop::Invalid(at, m)) => return Err(bad(at, m)),
    };
    Event::from_fields(&b[..end], 0, fields)
}

/// The device as torch names it: `Device Type` 0 is the CPU, 1 CUDA; others by number.
pub fn torch_device_name(kind: i64, id: i64) -> String {
    match kind {
        0 => "cpu".to_string(),
        1 => format!("cuda:{id}"),
        _ => format!("device{kind}:{id}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_kineto_kernel() {
        let b = br#"{"ph": "X", "cat": "kernel", "name": "ncclKernel_AllReduce", "pid": 0, "tid": "stream 7", "ts": 1000.5, "dur": 20.25, "args": {"device": 0, "stream": 7, "correlation": 99, "Collective name": "allreduce"}}"#;
        let mut f = Vec::new();
        let ev = scan_event(b, &mut f).unwrap();
        assert_eq!(ev.ph, b'X');
        assert!(ev.cat.eq_str("kernel"));
        assert_eq!(ev.pid, Id::Int(0));
        assert_eq!(ev.tid.to_string(), "stream 7");
        assert_eq!(ev.ts, Some(Ns::new(1_000_500)));
        assert_eq!(ev.end(), Some(Ns::new(1_020_750)));
        assert_eq!(ev.arg("correlation").and_then(|v| v.as_i64()), Some(99));
        assert_eq!(
            ev.arg("Collective name")
                .and_then(|v| v.as_str())
                .map(|s| s.to_string()),
            Some("allreduce".to_string())
        );
        assert!(ev.arg("missing").is_none());
    }

    #[test]
    fn utf8_answers_as_the_standard_check() {
        let mut s = 0x9e37_79b9_7f4a_7c15u64;
        let alphabet: &[&[u8]] = &[
            b"a",
            b"{",
            b"\x7f",
            "é".as_bytes(),
            "€".as_bytes(),
            b"\xc3",
            b"\xff",
            b"\x80",
        ];
        for _ in 0..20_000 {
            crate::testrng::xorshift(&mut s);
            let n = (s % 40) as usize;
            let b: Vec<u8> = (0..n)
                .flat_map(|k| {
                    alphabet[((s >> (k % 60)) as usize + k) % alphabet.len()]
                        .iter()
                        .copied()
                })
                .collect();
            match (utf8(&b), std::str::from_utf8(&b)) {
                (Ok(x), Ok(y)) => assert_eq!(x, y),
                (Err(x), Err(y)) => assert_eq!(x.valid_up_to(), y.valid_up_to()),
                (x, y) => panic!("{b:?}: {x:?} vs {y:?}"),
            }
        }
    }

    #[test]
    fn rejects_bad_fields_with_position() {
        let mut f = Vec::new();
        let e = scan_event(
            br#"{"ph": "X", "ts": 1, "dur": 1, "pid": 123456789012345678901234}"#,
            &mut f,
        )
        .unwrap_err();
        assert!(e.msg.contains("beyond 64 bits"), "{e:?}");
        assert_eq!(e.at, 38);
        let e = scan_event(br#"{"ph": "X", "ts": "1", "dur": 1}"#, &mut f).unwrap_err();
        assert!(e.msg.contains("\"ts\" is not a number"), "{e:?}");
        let e = scan_event(br#"{"ts": 1}"#, &mut f).unwrap_err();
        assert!(e.msg.contains("no \"ph\""), "{e:?}");
        let e = scan_event(br#"{"ph": "X", "ts": 1}"#, &mut f).unwrap_err();
        assert!(e.msg.contains("no \"dur\""), "{e:?}");
        let e = scan_event(b"{\"ph\": \"X\", \"name\": \"a\xff\"}", &mut f).unwrap_err();
        assert_eq!((e.at, e.msg.as_str()), (22, "invalid UTF-8"));
    }
}
