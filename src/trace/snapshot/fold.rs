//! What the pickle machine's stack holds, and how each finished piece of a snapshot is folded
//! into the figures the moment it is put in its container, so the object tree is never built.
//!
//! Pieces are recognised by their keys, not by where they sit (names move between torch
//! versions; unknown keys are dropped, missing ones are `None`):
//!
//! - a **frame**: a dict with `filename` and `line` or `name` → a number in the
//!   [`FrameTable`]; a list of frames → its group (top user frame);
//! - a **block**: a dict with `state` and `size` → added to its segment's [`BlockSum`];
//! - a **segment**: a dict with `total_size` or `blocks` → added to its `device`'s figures;
//! - a **trace entry**: a dict with `action` → replayed in its list's [`Replay`]; a list of
//!   trace entries put in a list is the trace of the device of its position (`device_traces`).
//!
//! Memo: strings (up to a budget), frames and the stack of a block are kept for a later `GET`
//! (torch shares one frame dict between the stacks that hold it, and a block's stack with its
//! `alloc` and `free_*` entries); other containers are not, so memory does not grow with the
//! number of entries.

use std::rc::Rc;

use rustc_hash::FxHashMap;

use super::frames::{FrameTable, NO_FRAMES, NO_USER_FRAME};
use super::replay::{tally, Action, Entry, Groups, Replay, Replayed};
use super::words::Word;

/// A value on the pickle machine's stack. Every payload is one 8-byte scalar (the frame
/// numbers are `u32`s widened, a string is a thin pointer: [`Text`]), so that a value is two
/// words the compiler keeps in registers: a memo `GET` (70 % of a snapshot's opcodes) pushes
/// it with two stores. With mixed payloads (a `Rc<str>`, `u32`s; 24 bytes) each value pushed
/// was built in a stack slot a byte and a word at a time and copied from there with one
/// 16-byte load, which stalls until those stores retire (store forwarding fails): a third of
/// the read.
pub(crate) enum Value {
    Int(i64),
    /// A string the reader acts on ([`Word`]: a key, an action).
    Word(Word),
    /// Any other string.
    Str(Text),
    /// Anything not kept: `None`, floats, bytes, large integers, tuples, objects, a memo entry
    /// that was not kept.
    Opaque,
    Dict(Box<Dict>),
    List(Box<List>),
    /// A frame, by number (a `u32`).
    Frame(u64),
    /// A finished list of frames: its group (a `u32`).
    Frames(u64),
}

/// A string on the stack: a thin pointer (see [`Value`]).
pub(crate) type Text = Rc<Box<str>>;

const _: () = assert!(std::mem::size_of::<Value>() == 16);

/// A memo entry kept for later `GET`s.
#[derive(Clone)]
pub(crate) enum Kept {
    Word(Word),
    Str(Text),
    Frame(u64),
    Frames(u64),
}

/// The memo entries kept, and the bytes of the strings among them. The first [`DENSE`] slots
/// are a vector (the keys, frames and blocks' stacks, which come first in a snapshot, are
/// looked up several times per entry; with a hash map per `GET` a 1 GB snapshot read at about
/// 150 MB/s of CPU, with the vector 168 MB/s), the rest a map.
#[derive(Default)]
pub(crate) struct Memo {
    dense: Vec<Option<Kept>>,
    sparse: FxHashMap<u32, Kept>,
    str_bytes: usize,
    /// Strings not kept because the budget was spent.
    pub dropped_strs: u64,
}

/// Slots below this are kept in a vector (at most 16 MiB).
const DENSE: usize = 1 << 20;

/// The most string bytes the memo keeps (then strings are no longer kept; a later `GET` of
/// one reads as unknown).
pub(crate) const MEMO_STR_BUDGET: usize = 64 << 20;
/// The longest string the memo keeps.
const MEMO_STR_MAX: usize = 4096;

impl Memo {
    /// What `slot` keeps, if anything.
    #[inline]
    pub(crate) fn get(&self, slot: u32) -> Option<&Kept> {
        let s = slot as usize;
        if s < DENSE {
            self.dense.get(s).and_then(Option::as_ref)
        } else if self.sparse.is_empty() {
            None
        } else {
            self.sparse.get(&slot)
        }
    }

    pub(crate) fn put(&mut self, slot: u32, k: Kept) {
        let s = slot as usize;
        if s < DENSE {
            if self.dense.len() <= s {
                self.dense.resize(s + 1, None);
            }
            self.dense[s] = Some(k);
        } else {
            self.sparse.insert(slot, k);
        }
    }

    /// Keeps a string under `slot` while the budget lasts.
    pub(crate) fn put_str(&mut self, slot: u32, s: &Text) {
        if self.spend(s.len()) {
            self.put(slot, Kept::Str(Rc::clone(s)));
        }
    }

    /// Keeps a word under `slot` while the budget lasts (its text counts as a string's).
    pub(crate) fn put_word(&mut self, slot: u32, w: Word) {
        if self.spend(w.text().len()) {
            self.put(slot, Kept::Word(w));
        }
    }

    /// Whether a string of `len` bytes may be kept (and if so, counts it).
    fn spend(&mut self, len: usize) -> bool {
        if len > MEMO_STR_MAX || self.str_bytes + len > MEMO_STR_BUDGET {
            self.dropped_strs += 1;
            return false;
        }
        self.str_bytes += len;
        true
    }
}

/// The fields of a dict that any piece uses; the rest are dropped.
#[derive(Default)]
pub(crate) struct Dict {
    /// The memo slot the dict was put in (a frame's is filled once the frame is known).
    pub slot: Option<u32>,
    action: Option<Action>,
    state: Option<Rc<str>>,
    addr: Option<i64>,
    size: Option<i64>,
    time_us: Option<i64>,
    device: Option<i64>,
    total_size: Option<i64>,
    allocated_size: Option<i64>,
    filename: Option<Rc<str>>,
    name: Option<Rc<str>>,
    line: Option<i64>,
    /// The group of its stack, and the stack's memo slot.
    frames: Option<(u32, Option<u32>)>,
    blocks: Option<Box<BlockSum>>,
}

impl Dict {
    /// Takes one key and value (`SETITEM`).
    pub(crate) fn set(&mut self, key: &Value, v: Value) {
        let Value::Word(k) = key else {
            return;
        };
        let int = |v: &Value| match v {
            Value::Int(i) => Some(*i),
            _ => None,
        };
        match k {
            Word::Action => self.action = action_of(&v),
            Word::State => self.state = text(v),
            Word::Addr | Word::Address => self.addr = int(&v),
            Word::Size => self.size = int(&v),
            Word::TimeUs => self.time_us = int(&v),
            Word::Device => self.device = int(&v),
            Word::TotalSize => self.total_size = int(&v),
            Word::AllocatedSize => self.allocated_size = int(&v),
            Word::Filename => self.filename = text(v),
            Word::Name => self.name = text(v),
            Word::Line => self.line = int(&v),
            Word::Frames => self.frames = frames_of(v),
            Word::Blocks => {
                if let Value::List(l) = v {
                    self.blocks = Some(match l.kind {
                        Kind::Blocks(b) => b,
                        _ => Box::default(),
                    });
                }
            }
            Word::Alloc | Word::FreeCompleted | Word::Oom => {}
        }
    }

    fn is_frame(&self) -> bool {
        self.action.is_none()
            && self.filename.is_some()
            && (self.line.is_some() || self.name.is_some())
    }

    fn is_segment(&self) -> bool {
        self.action.is_none() && (self.total_size.is_some() || self.blocks.is_some())
    }

    fn is_block(&self) -> bool {
        self.action.is_none() && self.state.is_some() && self.size.is_some()
    }

    fn group(&self) -> u32 {
        self.frames.map_or(NO_FRAMES, |f| f.0)
    }
}

/// A string value's text (a frame's file and function, a block's state: once each; a word's,
/// rarely: a function named `size`).
fn text(v: Value) -> Option<Rc<str>> {
    match v {
        Value::Str(s) => Some(Rc::from(&**s)),
        Value::Word(w) => Some(w.text().into()),
        _ => None,
    }
}

/// What an `action` value does: any string is an action, the replay tells three apart.
fn action_of(v: &Value) -> Option<Action> {
    match v {
        Value::Word(Word::Alloc) => Some(Action::Alloc),
        Value::Word(Word::FreeCompleted) => Some(Action::FreeCompleted),
        Value::Word(Word::Oom) => Some(Action::Oom),
        Value::Word(_) | Value::Str(_) => Some(Action::Other),
        _ => None,
    }
}

/// The group and memo slot of a `frames` value.
fn frames_of(v: Value) -> Option<(u32, Option<u32>)> {
    match v {
        Value::Frames(g) => Some((g as u32, None)),
        Value::List(l) => Some((l.group(), l.slot)),
        _ => None,
    }
}

/// The active blocks of one segment.
#[derive(Default)]
pub(crate) struct BlockSum {
    /// Blocks allocated or awaiting their free (`active_*`).
    pub active: i64,
    /// Blocks allocated (`active_allocated`).
    pub allocated: i64,
    /// The allocated blocks per group.
    pub groups: Groups,
}

/// What a list has been found to hold, from its first item.
#[derive(Default)]
pub(crate) enum Kind {
    #[default]
    Empty,
    Frames {
        first: Option<u32>,
        top: Option<u32>,
    },
    Blocks(Box<BlockSum>),
    Entries(Box<Replay>),
    Other,
}

/// A list being filled.
#[derive(Default)]
pub(crate) struct List {
    pub slot: Option<u32>,
    pub len: u64,
    pub kind: Kind,
}

impl List {
    /// The group of a list of frames: its first user frame, else whether it had frames.
    fn group(&self) -> u32 {
        match self.kind {
            Kind::Frames { top: Some(t), .. } => t,
            Kind::Frames { first: Some(_), .. } => NO_USER_FRAME,
            _ => NO_FRAMES,
        }
    }

    fn add_frame(&mut self, id: u32, user: bool) {
        if matches!(self.kind, Kind::Empty) {
            self.kind = Kind::Frames {
                first: None,
                top: None,
            };
        }
        if let Kind::Frames { first, top } = &mut self.kind {
            first.get_or_insert(id);
            if user && top.is_none() {
                *top = Some(id);
            }
        }
    }

    fn add_block(&mut self, d: &Dict) {
        if matches!(self.kind, Kind::Empty) {
            self.kind = Kind::Blocks(Box::default());
        }
        let (Kind::Blocks(b), Some(state), Some(size)) = (&mut self.kind, &d.state, d.size) else {
            return;
        };
        if state.starts_with("active") {
            b.active += size;
        }
        if &**state == "active_allocated" {
            b.allocated += size;
            tally(&mut b.groups, d.group(), size, 1);
        }
    }

    fn add_entry(&mut self, d: &Dict) {
        if matches!(self.kind, Kind::Empty) {
            self.kind = Kind::Entries(Box::default());
        }
        if let (Kind::Entries(r), Some(action)) = (&mut self.kind, d.action) {
            r.apply(&Entry {
                action,
                addr: d.addr.unwrap_or(0),
                size: d.size.unwrap_or(0),
                time_us: d.time_us,
                group: d.group(),
            });
        }
    }

    /// Puts `item` at the end (`APPEND`): folded into this list's figures or `sink`'s.
    pub(crate) fn push(&mut self, item: Value, sink: &mut Sink, memo: &mut Memo) {
        let index = self.len;
        self.len += 1;
        match item {
            Value::Frame(id) => {
                let id = id as u32;
                self.add_frame(id, sink.frames.is_user(id));
            }
            Value::Dict(d) => self.push_dict(*d, sink, memo),
            Value::List(l) => match l.kind {
                Kind::Entries(r) => sink.trace(index as i64, r.finish()),
                Kind::Empty => sink.traces += 1,
                _ => {}
            },
            _ => {
                if matches!(self.kind, Kind::Empty) {
                    self.kind = Kind::Other;
                }
            }
        }
    }

    fn push_dict(&mut self, d: Dict, sink: &mut Sink, memo: &mut Memo) {
        if d.action.is_some() {
            self.add_entry(&d);
        } else if d.is_frame() {
            let (Some(file), Some(name)) = (d.filename.clone(), d.name.clone().or(Some("".into())))
            else {
                return;
            };
            let id = sink.frames.intern(file, d.line.unwrap_or(0), name);
            if let Some(s) = d.slot {
                memo.put(s, Kept::Frame(id.into()));
            }
            self.add_frame(id, sink.frames.is_user(id));
        } else if d.is_segment() {
            sink.segment(&d);
        } else if d.is_block() {
            if let Some((g, Some(slot))) = d.frames {
                memo.put(slot, Kept::Frames(g.into()));
            }
            self.add_block(&d);
        }
    }
}

/// One device's figures.
#[derive(Default)]
pub(crate) struct DeviceAcc {
    pub device: i64,
    pub segments: u64,
    pub reserved: i64,
    pub allocated: i64,
    pub active: i64,
    /// The allocated blocks at the snapshot per group.
    pub groups: Groups,
    pub trace: Option<Replayed>,
}

/// Everything folded so far.
#[derive(Default)]
pub(crate) struct Sink {
    pub frames: FrameTable,
    pub devices: Vec<DeviceAcc>,
    /// Device traces put in place.
    pub traces: u64,
}

impl Sink {
    fn device(&mut self, device: i64) -> &mut DeviceAcc {
        let k = match self.devices.iter().position(|d| d.device == device) {
            Some(k) => k,
            None => {
                self.devices.push(DeviceAcc {
                    device,
                    ..Default::default()
                });
                self.devices.len() - 1
            }
        };
        &mut self.devices[k]
    }

    /// A segment (`total_size`, `allocated_size` and its blocks) on its device.
    fn segment(&mut self, d: &Dict) {
        let acc = self.device(d.device.unwrap_or(0));
        acc.segments += 1;
        acc.reserved += d.total_size.unwrap_or(0);
        match &d.blocks {
            Some(b) => {
                acc.allocated += b.allocated;
                acc.active += b.active;
                for (&g, &(bytes, n)) in &b.groups {
                    let e = acc.groups.entry(g).or_insert((0, 0));
                    (e.0, e.1) = (e.0 + bytes, e.1 + n);
                }
            }
            None => {
                let a = d.allocated_size.unwrap_or(0);
                acc.allocated += a;
                acc.active += a;
            }
        }
    }

    /// The trace of device `device` (its position in `device_traces`).
    fn trace(&mut self, device: i64, r: Replayed) {
        self.traces += 1;
        if r.entries > 0 {
            self.device(device).trace = Some(r);
        }
    }
}
