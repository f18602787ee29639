//! The streaming reader: gzip (found by magic bytes, multi-member) or plain JSON, object form
//! `{"traceEvents": [...], ...}` or bare-array form `[...]`, header keys before and/or after
//! `traceEvents`. Events are handed to a callback one at a time from a bounded buffer, so memory
//! does not grow with the file.
//!
//! Damage never loses what came before it: every complete event before the damage is delivered,
//! an invalid event is skipped and counted, and the [`ReadReport`] names the file and the
//! decompressed byte offset of each problem.
//!
//! Integrity: only regular files are opened ([`open`] refuses FIFOs, sockets, devices and
//! directories, checked on the open descriptor, so a file swapped after discovery cannot make
//! it block). gzip input is read member by member to its very end ([`super::gz`]), so every
//! member's CRC-32 and ISIZE trailer is checked: a mismatch is [`Damage::Gzip`] (the events
//! before it are kept), bytes after the last member that are not one are noted
//! ([`ReadReport::trailing_garbage`]), not damage. Raw control bytes inside strings, which JSON
//! forbids, are read as written and counted ([`ReadReport::raw_control`]); header values holding
//! them are stored escaped, and events are flagged ([`Event::ctl`]) for writers to escape.
//!
//! (Over ~500 lines: the tokenizer state machine; its tests are in `reader_tests.rs`.)

use std::cell::RefCell;
use std::io::{self, BufRead, Read};
use std::path::Path;
use std::rc::Rc;

use super::damage::{key_value, Damage, Header, ReadReport};
use super::event::Event;
use super::gz::{GzStatus, Members};
use super::json::{self, Field};
use super::memo::Memo;
use super::object::{self, ArgMembers};
use super::open::open_regular;
use super::pickmemo::PickMemo;
use super::stop::Stop;
use super::want::{Pick, Want};
use super::window::CHUNK;

/// Opens `path` and calls `on_event` for every valid event, in file order (an Nsight Systems
/// export, `*.sqlite`, through [`super::nsys`]: table by table; a report, `*.nsys-rep`, through
/// its export, [`super::nsys::export`]).
///
/// The only `Err` is failing to open or start reading the file (it is missing, not a regular
/// file, not readable); damage inside it is reported in the [`ReadReport`].
pub fn read_trace(path: &Path, on_event: impl FnMut(&Event<'_>)) -> io::Result<ReadReport> {
    read_trace_with(path, Nested::Validate, on_event)
}

/// How the reader treats the values nested inside an event (`args`, arrays).
#[derive(Clone, Copy, Debug, Default)]
pub enum Nested {
    /// Every byte validated: what a writer that copies `args` out needs (merge, `ls`).
    #[default]
    Validate,
    /// Skimmed a block at a time ([`super::skim`]): strings closed, brackets paired, no raw
    /// control bytes, but the tokens between the brackets not checked. For readers that only
    /// look values up ([`Event::arg`], which gives `None` for what it cannot read): analyze.
    /// The top-level fields are validated as with `Validate`, and an event that `Validate`
    /// accepts gives the same [`Event`].
    Skim,
    /// As `Skim`, and only the events [`Want`] names are handed over: the others are counted
    /// in [`ReadReport::events`] and skimmed whole when their leading `ph`/`cat`/`name` show
    /// them unwanted ([`super::want`]), decoded in full and dropped otherwise.
    SkimOnly(Want),
}

/// [`read_trace`] with the treatment of nested values chosen.
pub fn read_trace_with(
    path: &Path,
    nested: Nested,
    on_event: impl FnMut(&Event<'_>),
) -> io::Result<ReadReport> {
    if super::nsys::export::is_rep_path(path) {
        let want = match nested {
            Nested::SkimOnly(w) => Some(w),
            _ => None,
        };
        return super::nsys::export::read_rep(path, want, on_event);
    }
    if super::nsys::is_nsys_path(path) {
        let want = match nested {
            Nested::SkimOnly(w) => Some(w),
            _ => None,
        };
        return super::nsys::read_nsys(path, want, on_event);
    }
    let src = open_source(path)?;
    let mut report = read_from_with(path, src.reader, src.gzip, CHUNK, nested, on_event);
    if let Some(st) = src.status {
        report.trailing_garbage = st.borrow().trailing;
    }
    Ok(report)
}

/// Opens a file as a byte stream, decompressing it when it starts with the gzip magic bytes.
/// Returns the stream and whether it was gzip. Only regular files are opened (see
/// [`open_regular`]); gzip members are checked as [`super::gz`] says.
#[doc(hidden)] // not API: for the fuzz targets/benches
pub fn open(path: &Path) -> io::Result<(Box<dyn Read>, bool)> {
    let src = open_source(path)?;
    Ok((src.reader, src.gzip))
}

/// An opened input.
struct Source {
    reader: Box<dyn Read>,
    gzip: bool,
    status: Option<Rc<RefCell<GzStatus>>>,
}

fn open_source(path: &Path) -> io::Result<Source> {
    let (file, len) = open_regular(path)?;
    let named = |e: io::Error| io::Error::new(e.kind(), format!("{}: {e}", path.display()));
    let mut input = super::window::Input::new(file);
    let gzip = input.fill_buf().map_err(named)?.starts_with(&[0x1f, 0x8b]);
    Ok(if gzip {
        let (m, status) = Members::new(input, Some(len));
        Source {
            reader: Box::new(m),
            gzip: true,
            status: Some(status),
        }
    } else {
        Source {
            reader: Box::new(input),
            gzip: false,
            status: None,
        }
    })
}

/// Reads only the header keys that come before the events. `None` when the file is not a
/// trace (JSON without `traceEvents`, or not JSON at all).
pub fn read_head(path: &Path) -> io::Result<Option<Header>> {
    if super::nsys::export::is_rep_path(path) {
        return super::nsys::export::read_head(path);
    }
    if super::nsys::is_nsys_path(path) {
        return super::nsys::read_head(path);
    }
    let (src, gzip) = open(path)?;
    // The header keys before the events are small: a small window, grown if need be.
    let mut s = Scanner::new(src, 1 << 16);
    s.head_only = true;
    let mut report = ReadReport::new(path, gzip);
    s.run(&mut report, &mut |_| {});
    if !s.reached_events {
        return Ok(None);
    }
    report.header.no_events = s.next_byte() != Some(b'{');
    Ok(Some(report.header))
}

/// Reads a trace from any byte stream (`gzip` only labels the report).
pub fn read_from(
    path: &Path,
    src: Box<dyn Read>,
    gzip: bool,
    on_event: impl FnMut(&Event<'_>),
) -> ReadReport {
    read_from_with_window(path, src, gzip, CHUNK, on_event)
}

/// [`read_from`] with the read window (the buffer's initial size and the minimum it grows
/// by) set to `window` bytes instead of the default 1 MiB; values below 16 are raised to 16.
/// The events and the report do not depend on the window: this exists so that tests and fuzz
/// targets can check that with tiny windows, where every value straddles a refill.
#[doc(hidden)] // not API: for the fuzz targets/benches
pub fn read_from_with_window(
    path: &Path,
    src: Box<dyn Read>,
    gzip: bool,
    window: usize,
    on_event: impl FnMut(&Event<'_>),
) -> ReadReport {
    read_from_with(path, src, gzip, window, Nested::Validate, on_event)
}

/// [`read_from_with_window`] with the treatment of nested values chosen.
#[doc(hidden)] // not API: for the fuzz targets/benches
pub fn read_from_with(
    path: &Path,
    src: Box<dyn Read>,
    gzip: bool,
    window: usize,
    nested: Nested,
    on_event: impl FnMut(&Event<'_>),
) -> ReadReport {
    let mut s = Scanner::new(src, window);
    s.skim = !matches!(nested, Nested::Validate);
    if let Nested::SkimOnly(w) = nested {
        s.want = Some(w);
    }
    s.read(path, gzip, on_event)
}

struct Scanner {
    src: Box<dyn Read>,
    /// The read window: initial buffer size and minimum growth ([`CHUNK`] by default).
    chunk: usize,
    data: Vec<u8>,
    /// Everything before `pos` is consumed.
    pos: usize,
    /// `data[..end]` holds read bytes.
    end: usize,
    /// Stream offset of `data[0]`.
    base: u64,
    eof: bool,
    read_err: Option<io::Error>,
    /// Stop as soon as the event array starts (for [`read_head`]).
    head_only: bool,
    reached_events: bool,
    /// Nested values are skimmed ([`Nested::Skim`]).
    skim: bool,
    /// Only these events are handed over ([`Nested::SkimOnly`]).
    want: Option<Want>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    Start,
    FirstKey,
    Key,
    AfterValue,
    FirstEvent,
    Event,
    AfterEvent,
    Done,
}

impl Scanner {
    /// `window`: the buffer's initial size and the minimum it grows by (at least 16).
    fn new(src: Box<dyn Read>, window: usize) -> Self {
        let window = window.max(16);
        Scanner {
            src,
            chunk: window,
            data: super::window::take(window),
            pos: 0,
            end: 0,
            base: 0,
            eof: false,
            read_err: None,
            head_only: false,
            reached_events: false,
            skim: false,
            want: None,
        }
    }

    /// Reads the whole input, calling `on_event` for every valid event.
    fn read(mut self, path: &Path, gzip: bool, mut on_event: impl FnMut(&Event<'_>)) -> ReadReport {
        let mut report = ReadReport::new(path, gzip);
        self.run(&mut report, &mut on_event);
        report.bytes = self.base + self.end as u64;
        if gzip {
            self.blame_gzip(&mut report);
        }
        // A whole JSON document without `traceEvents` (a config, a summary named like a rank)
        // holds no trace at all: damage, not a rank with nothing in it.
        if report.damage.is_none() && !self.reached_events {
            report.damage = Some(Damage::NotATrace);
        }
        report
    }

    /// The next byte that is not white space, without taking it (`None` at the end).
    fn next_byte(&mut self) -> Option<u8> {
        loop {
            let rest = &self.data[self.pos..self.end];
            match rest.iter().position(|c| !c.is_ascii_whitespace()) {
                Some(k) => return Some(rest[k]),
                None => {
                    self.pos = self.end;
                    if !self.fill() {
                        return None;
                    }
                }
            }
        }
    }

    /// Moves unconsumed bytes to the front and reads more. False when no byte was added.
    fn fill(&mut self) -> bool {
        if self.eof {
            return false;
        }
        if self.pos > 0 {
            self.data.copy_within(self.pos..self.end, 0);
            self.base += self.pos as u64;
            self.end -= self.pos;
            self.pos = 0;
        }
        if self.end + self.chunk / 4 > self.data.len() {
            let n = (self.data.len() * 2).max(self.chunk);
            self.data.resize(n, 0);
        }
        loop {
            match self.src.read(&mut self.data[self.end..]) {
                Ok(0) => {
                    self.eof = true;
                    return false;
                }
                Ok(n) => {
                    self.end += n;
                    return true;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    self.eof = true;
                    self.read_err = Some(e);
                    return false;
                }
            }
        }
    }

    /// Invalid JSON in a gzip file may be what a corrupt deflate stream inflated to: the rest
    /// of the stream is read (and its trailers checked, as `gzip -t` would) and, if it is
    /// broken, the damage is the broken stream, at the same offset, naming both.
    fn blame_gzip(&mut self, report: &mut ReadReport) {
        let Some(Damage::InvalidJson { at, msg }) = &report.damage else {
            return;
        };
        let err = match self.read_err.take() {
            Some(e) => Some(e),
            None if self.eof => None,
            None => loop {
                let mut buf = [0u8; 1 << 16];
                match self.src.read(&mut buf) {
                    Ok(0) => break None,
                    Ok(_) => {}
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => break Some(e),
                }
            },
        };
        if let Some(e) = err.filter(|e| e.kind() != io::ErrorKind::UnexpectedEof) {
            report.damage = Some(Damage::Gzip {
                at: *at,
                msg: format!("{e} (what it inflated is already invalid JSON at byte {at}: {msg})"),
            });
        }
    }

    /// The damage to report when the data ran out inside the document.
    fn ran_out(&mut self) -> Damage {
        let at = self.base + self.end as u64;
        match self.read_err.take() {
            Some(e) if e.kind() != io::ErrorKind::UnexpectedEof => Damage::Gzip {
                at,
                msg: e.to_string(),
            },
            _ => Damage::Truncated { at },
        }
    }

    // Long on purpose: the tokenizer state machine over the window (Perfetto's style); one
    // match per state.
    fn run(&mut self, report: &mut ReadReport, on_event: &mut dyn FnMut(&Event<'_>)) {
        let mut fields: Vec<Field> = Vec::with_capacity(16);
        let mut memo = Memo::default();
        let mut picks = PickMemo::default();
        // Validating: each event's `args` members, found by the same scan.
        let mut members = ArgMembers::default();
        let mut state = State::Start;
        loop {
            let b = &self.data[..self.end];
            let i = json::skip_ws(b, self.pos);
            if i == b.len() {
                self.pos = i;
                if self.fill() {
                    continue;
                }
                if state == State::Done {
                    // The document is complete, but the stream after it is not sound (e.g. a
                    // gzip trailer that does not match): what was read may be corrupt.
                    if let Some(e) = self.read_err.take() {
                        report.damage = Some(Damage::Gzip {
                            at: self.base + self.end as u64,
                            msg: e.to_string(),
                        });
                    }
                    return;
                }
                // A bare array may legally end without its closing bracket.
                let open_array = !report.header.object_form
                    && matches!(state, State::Event | State::AfterEvent | State::FirstEvent);
                if !(open_array && self.read_err.is_none()) {
                    report.damage = Some(self.ran_out());
                }
                return;
            }
            let abs = |x: usize| self.base + x as u64;
            let invalid = |at: usize, msg: &str| {
                Some(Damage::InvalidJson {
                    at: abs(at),
                    msg: msg.to_string(),
                })
            };
            let c = b[i];
            let step: Result<(usize, State), Stop> = match state {
                State::Start => {
                    if b[i..].starts_with(&[0xEF, 0xBB, 0xBF]) {
                        Ok((i + 3, State::Start))
                    } else if b.len() - i < 3 && [0xEF, 0xBB, 0xBF].starts_with(&b[i..]) {
                        Err(Stop::Incomplete)
                    } else {
                        match c {
                            b'{' => {
                                report.header.object_form = true;
                                Ok((i + 1, State::FirstKey))
                            }
                            b'[' => Ok((i + 1, State::FirstEvent)),
                            _ => Err(Stop::Invalid(
                                i,
                                "expected '{' or '[' at the start of a trace",
                            )),
                        }
                    }
                }
                State::FirstKey if c == b'}' => Ok((i + 1, State::Done)),
                State::FirstKey | State::Key => {
                    if c != b'"' {
                        Err(Stop::Invalid(i, "expected a string key"))
                    } else {
                        key_value(b, i, report).map(|(end, events, ctl)| {
                            if ctl {
                                report.raw_control(abs(i), &b[i..end]);
                            }
                            let st = if events {
                                State::FirstEvent
                            } else {
                                State::AfterValue
                            };
                            (end, st)
                        })
                    }
                }
                State::AfterValue => match c {
                    b',' => Ok((i + 1, State::Key)),
                    b'}' => Ok((i + 1, State::Done)),
                    _ => Err(Stop::Invalid(i, "expected ',' or '}'")),
                },
                State::FirstEvent if c == b']' => Ok((i + 1, after_events(report))),
                State::FirstEvent | State::Event => {
                    // With a `want`: what the event's leading `ph`/`cat`/`name` say
                    // ([`Want::peek`]).
                    let peeked = match self.want {
                        Some(w) if c == b'{' => {
                            w.peek_into(b, i, report.devices, &mut fields, &mut picks)
                        }
                        _ => None,
                    };
                    // Skimmed from where the peek stopped: the same end as from the `{`.
                    // An event kept only if its text holds a key is skimmed first, to search
                    // it: kept, it is then scanned like any other.
                    let (peeked, unwanted) = match peeked {
                        Some((Pick::Skip | Pick::Narrowed, j)) => {
                            (peeked, super::skim::skip_rest_of_object(b, j))
                        }
                        Some((Pick::Needs(key), j)) => {
                            match super::skim::skip_rest_of_object(b, j) {
                                Some(Ok(end)) => match Pick::Needs(key).given(&b[i..end]) {
                                    Pick::Keep => (Some((Pick::Keep, j)), None),
                                    p => (Some((p, j)), Some(Ok(end))),
                                },
                                Some(Err(e)) => (peeked, Some(Err(e))),
                                // Declined by the skim: decoded in full and decided then.
                                None => (None, None),
                            }
                        }
                        _ => (peeked, None),
                    };
                    let resume_at = peeked.map_or(0, |(_, j)| j);
                    let peeked = peeked.map(|(p, _)| p);
                    if let Some(skimmed) = unwanted {
                        skimmed.map(|end| {
                            report.events += 1;
                            report.narrowed += u64::from(peeked == Some(Pick::Narrowed));
                            (end, State::AfterEvent)
                        })
                    } else if c == b'{' {
                        let scanned = match peeked {
                            // The fields the peek read are the scan's first ones.
                            Some(Pick::Keep) => {
                                object::scan_object_resume(b, i, resume_at, &mut fields, &mut memo)
                            }
                            _ if self.skim => {
                                object::scan_object_memo(b, i, &mut fields, true, &mut memo)
                            }
                            _ => members.scan_event(b, i, &mut fields, &mut memo),
                        };
                        match scanned {
                            Ok(end) => {
                                match Event::from_fields(&b[i..end], abs(i), &fields) {
                                    Ok(mut ev) => {
                                        if members.found {
                                            ev.arg_fields = Some(&members.fields);
                                        }
                                        report.events += 1;
                                        if ev.ctl {
                                            report.raw_control(abs(i), &b[i..end]);
                                        }
                                        let pick = match (self.want, peeked) {
                                            (Some(w), None | Some(Pick::Skip | Pick::Narrowed)) => {
                                                w.pick(
                                                    ev.ph,
                                                    ev.cat.raw().as_bytes(),
                                                    ev.name.raw().as_bytes(),
                                                    report.devices,
                                                )
                                                .given(&b[i..end])
                                            }
                                            _ => Pick::Keep,
                                        };
                                        report.narrowed += u64::from(pick == Pick::Narrowed);
                                        let wanted = pick == Pick::Keep;
                                        if wanted {
                                            if self.want.is_some() && super::want::labeled(&ev) {
                                                self.want = None;
                                            }
                                            on_event(&ev);
                                        }
                                    }
                                    Err(e) => report.reject(abs(i + e.at), e.msg),
                                }
                                Ok((end, State::AfterEvent))
                            }
                            Err(e) => Err(e),
                        }
                    } else {
                        match json::skip_value(b, i) {
                            Ok((end, _)) => {
                                report.reject(abs(i), "event is not a JSON object".into());
                                Ok((end, State::AfterEvent))
                            }
                            Err(e) => Err(e),
                        }
                    }
                }
                State::AfterEvent => match c {
                    b',' => Ok((i + 1, State::Event)),
                    b']' => Ok((i + 1, after_events(report))),
                    _ => Err(Stop::Invalid(i, "expected ',' or ']' between events")),
                },
                State::Done => Err(Stop::Invalid(
                    i,
                    "unexpected data after the end of the trace",
                )),
            };
            match step {
                Ok((next, st)) => {
                    self.pos = next;
                    state = st;
                    if st == State::FirstEvent {
                        self.reached_events = true;
                        report.devices = report.header.lists_devices();
                        if self.head_only {
                            return;
                        }
                    }
                }
                Err(Stop::Incomplete) => {
                    self.pos = i;
                    if !self.fill() {
                        report.damage = Some(self.ran_out());
                        return;
                    }
                }
                Err(Stop::Invalid(at, msg)) => {
                    report.damage = invalid(at, msg);
                    return;
                }
            }
        }
    }
}

impl Drop for Scanner {
    fn drop(&mut self) {
        super::window::give_back(std::mem::take(&mut self.data));
    }
}

fn after_events(report: &ReadReport) -> State {
    if report.header.object_form {
        State::AfterValue
    } else {
        State::Done
    }
}

#[cfg(test)]
#[path = "reader_tests.rs"]
mod tests;
