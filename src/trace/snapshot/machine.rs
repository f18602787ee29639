//! The pickle machine: Python's unpickler (protocols 2 to 5, the binary opcodes; `pickle.dump`
//! writes protocol 4 or 5, with `FRAME`s, `MEMOIZE` and `BINGET`s), run over a byte stream
//! with one stack and a stack of marks, except that a container is folded into the figures
//! as soon as its items are put in it ([`super::fold`]) instead of being built.
//!
//! Every opcode checks what it pops: a stack too short, an unknown opcode, a length past the
//! end, all stop the machine with the byte offset ([`Stop`]); what was folded before stays,
//! and [`Machine::salvage`] folds what was left on the stack.

use std::io::Read;
use std::rc::Rc;

use super::fold::{Dict, Kept, List, Memo, Sink, Value};
use super::input::{Input, Stop, WINDOW};
use super::words::Word;

/// The machine's state over one file.
pub(crate) struct Machine {
    stack: Vec<Value>,
    marks: Vec<usize>,
    pub memo: Memo,
    /// The next `MEMOIZE` slot.
    next_slot: u32,
    pub sink: Sink,
}

/// The pickle opcodes read (Lib/pickle.py's names).
mod op {
    pub(super) const MARK: u8 = b'(';
    pub(super) const STOP: u8 = b'.';
    pub(super) const POP: u8 = b'0';
    pub(super) const POP_MARK: u8 = b'1';
    pub(super) const DUP: u8 = b'2';
    pub(super) const BININT: u8 = b'J';
    pub(super) const BININT1: u8 = b'K';
    pub(super) const BININT2: u8 = b'M';
    pub(super) const NONE: u8 = b'N';
    pub(super) const BINFLOAT: u8 = b'G';
    pub(super) const BINSTRING: u8 = b'T';
    pub(super) const SHORT_BINSTRING: u8 = b'U';
    pub(super) const BINUNICODE: u8 = b'X';
    pub(super) const BINBYTES: u8 = b'B';
    pub(super) const SHORT_BINBYTES: u8 = b'C';
    pub(super) const APPEND: u8 = b'a';
    pub(super) const BUILD: u8 = b'b';
    pub(super) const GLOBAL: u8 = b'c';
    pub(super) const DICT: u8 = b'd';
    pub(super) const EMPTY_DICT: u8 = b'}';
    pub(super) const APPENDS: u8 = b'e';
    pub(super) const BINGET: u8 = b'h';
    pub(super) const LONG_BINGET: u8 = b'j';
    pub(super) const LIST: u8 = b'l';
    pub(super) const EMPTY_LIST: u8 = b']';
    pub(super) const BINPUT: u8 = b'q';
    pub(super) const LONG_BINPUT: u8 = b'r';
    pub(super) const REDUCE: u8 = b'R';
    pub(super) const SETITEM: u8 = b's';
    pub(super) const TUPLE: u8 = b't';
    pub(super) const EMPTY_TUPLE: u8 = b')';
    pub(super) const SETITEMS: u8 = b'u';
    pub(super) const PROTO: u8 = 0x80;
    pub(super) const NEWOBJ: u8 = 0x81;
    pub(super) const TUPLE1: u8 = 0x85;
    pub(super) const TUPLE2: u8 = 0x86;
    pub(super) const TUPLE3: u8 = 0x87;
    pub(super) const NEWTRUE: u8 = 0x88;
    pub(super) const NEWFALSE: u8 = 0x89;
    pub(super) const LONG1: u8 = 0x8a;
    pub(super) const LONG4: u8 = 0x8b;
    pub(super) const SHORT_BINUNICODE: u8 = 0x8c;
    pub(super) const BINUNICODE8: u8 = 0x8d;
    pub(super) const BINBYTES8: u8 = 0x8e;
    pub(super) const EMPTY_SET: u8 = 0x8f;
    pub(super) const ADDITEMS: u8 = 0x90;
    pub(super) const FROZENSET: u8 = 0x91;
    pub(super) const NEWOBJ_EX: u8 = 0x92;
    pub(super) const STACK_GLOBAL: u8 = 0x93;
    pub(super) const MEMOIZE: u8 = 0x94;
    pub(super) const FRAME: u8 = 0x95;
    pub(super) const BYTEARRAY8: u8 = 0x96;
    pub(super) const NEXT_BUFFER: u8 = 0x97;
    pub(super) const READONLY_BUFFER: u8 = 0x98;
}

impl Machine {
    pub(crate) fn new() -> Self {
        Machine {
            stack: Vec::with_capacity(4096),
            marks: Vec::new(),
            memo: Memo::default(),
            next_slot: 0,
            sink: Sink::default(),
        }
    }

    /// Runs to `STOP` (`Ok`) or to the first damage.
    pub(crate) fn run<R: Read>(&mut self, inp: &mut Input<R>) -> Result<(), Stop> {
        loop {
            let at = inp.offset();
            let code = inp.u8()?;
            if code == op::STOP {
                return Ok(());
            }
            self.step(code, inp).map_err(|e| match e {
                Stop::Bad(why, _) => Stop::Bad(why, at),
                other => other,
            })?;
        }
    }

    fn pop(&mut self) -> Result<Value, Stop> {
        self.stack
            .pop()
            .ok_or_else(|| Stop::Bad("stack underflow".into(), 0))
    }

    fn top(&mut self) -> Result<&mut Value, Stop> {
        self.stack
            .last_mut()
            .ok_or_else(|| Stop::Bad("stack underflow".into(), 0))
    }

    /// The position of the last `MARK`, popped.
    fn pop_mark(&mut self) -> Result<usize, Stop> {
        match self.marks.pop() {
            Some(m) if m <= self.stack.len() => Ok(m),
            _ => Err(Stop::Bad("no MARK".into(), 0)),
        }
    }

    /// Drops everything from the last mark, and the mark.
    fn drop_to_mark(&mut self) -> Result<(), Stop> {
        let m = self.pop_mark()?;
        self.stack.truncate(m);
        Ok(())
    }

    /// Drops `n` values and pushes an opaque one (a call, a tuple: nothing is kept).
    fn opaque(&mut self, n: usize) -> Result<(), Stop> {
        for _ in 0..n {
            self.pop()?;
        }
        self.stack.push(Value::Opaque);
        Ok(())
    }

    fn string<R: Read>(&mut self, inp: &mut Input<R>, n: u64) -> Result<(), Stop> {
        if n > WINDOW as u64 {
            inp.skip(n)?;
            self.stack.push(Value::Opaque);
            return Ok(());
        }
        let b = inp.take(n as usize)?;
        if let Some(w) = Word::of(b) {
            self.stack.push(Value::Word(w));
            return Ok(());
        }
        let s: Box<str> = match std::str::from_utf8(b) {
            Ok(s) => s.into(),
            Err(_) => String::from_utf8_lossy(b).into(),
        };
        self.stack.push(Value::Str(Rc::new(s)));
        Ok(())
    }

    fn skip_push<R: Read>(&mut self, inp: &mut Input<R>, n: u64) -> Result<(), Stop> {
        inp.skip(n)?;
        self.stack.push(Value::Opaque);
        Ok(())
    }

    /// A little-endian two's-complement integer of `n` bytes (`LONG1`, `LONG4`).
    fn long<R: Read>(&mut self, inp: &mut Input<R>, n: u64) -> Result<(), Stop> {
        if n > 8 {
            return self.skip_push(inp, n);
        }
        let b = inp.take(n as usize)?;
        let mut v = [0u8; 8];
        v[..b.len()].copy_from_slice(b);
        if b.last().is_some_and(|x| x & 0x80 != 0) {
            v[b.len()..].fill(0xff);
        }
        self.stack.push(Value::Int(i64::from_le_bytes(v)));
        Ok(())
    }

    /// Records the top of the stack under `slot`.
    fn put(&mut self, slot: u32) -> Result<(), Stop> {
        let memo = &mut self.memo;
        match self.stack.last_mut() {
            Some(Value::Word(w)) => memo.put_word(slot, *w),
            Some(Value::Str(s)) => memo.put_str(slot, s),
            Some(Value::Dict(d)) => d.slot = Some(slot),
            Some(Value::List(l)) => l.slot = Some(slot),
            Some(Value::Frame(f)) => memo.put(slot, Kept::Frame(*f)),
            Some(Value::Frames(g)) => memo.put(slot, Kept::Frames(*g)),
            Some(_) => {}
            None => return Err(Stop::Bad("MEMOIZE on an empty stack".into(), 0)),
        }
        Ok(())
    }

    /// `APPENDS`: the values since the last mark into the list below it.
    fn appends(&mut self) -> Result<(), Stop> {
        let m = self.pop_mark()?;
        if m == 0 {
            return Err(Stop::Bad("APPENDS without a list".into(), 0));
        }
        let mut parent = std::mem::replace(&mut self.stack[m - 1], Value::Opaque);
        if let Value::List(l) = &mut parent {
            for v in self.stack.drain(m..) {
                l.push(v, &mut self.sink, &mut self.memo);
            }
        } else {
            self.stack.truncate(m);
        }
        self.stack[m - 1] = parent;
        Ok(())
    }

    /// `APPEND`: the top value into the list below it.
    fn append(&mut self) -> Result<(), Stop> {
        let v = self.pop()?;
        match self.stack.last_mut() {
            Some(Value::List(l)) => l.push(v, &mut self.sink, &mut self.memo),
            Some(_) => {}
            None => return Err(Stop::Bad("stack underflow".into(), 0)),
        }
        Ok(())
    }

    /// `SETITEMS`: the key-value pairs since the last mark into the dict below it.
    fn setitems(&mut self) -> Result<(), Stop> {
        let m = self.pop_mark()?;
        if m == 0 {
            return Err(Stop::Bad("SETITEMS without a dict".into(), 0));
        }
        let mut parent = std::mem::replace(&mut self.stack[m - 1], Value::Opaque);
        if let Value::Dict(d) = &mut parent {
            let mut it = self.stack.drain(m..);
            while let (Some(k), Some(v)) = (it.next(), it.next()) {
                d.set(&k, v);
            }
        } else {
            self.stack.truncate(m);
        }
        self.stack[m - 1] = parent;
        Ok(())
    }

    /// `SETITEM`: one key and value into the dict below them.
    fn setitem(&mut self) -> Result<(), Stop> {
        let v = self.pop()?;
        let k = self.pop()?;
        if let Value::Dict(d) = self.top()? {
            d.set(&k, v);
        }
        Ok(())
    }

    /// `GET`: what the memo kept under `slot`, else an opaque value.
    #[inline]
    fn get(&mut self, slot: u32) {
        let v = match self.memo.get(slot) {
            Some(&Kept::Word(w)) => Value::Word(w),
            Some(&Kept::Frame(f)) => Value::Frame(f),
            Some(&Kept::Frames(g)) => Value::Frames(g),
            Some(Kept::Str(s)) => Value::Str(Rc::clone(s)),
            None => Value::Opaque,
        };
        self.stack.push(v);
    }

    fn step<R: Read>(&mut self, code: u8, inp: &mut Input<R>) -> Result<(), Stop> {
        match code {
            op::MEMOIZE => {
                let s = self.next_slot;
                self.next_slot = s.wrapping_add(1);
                self.put(s)?;
            }
            op::BINGET => {
                let s = inp.u8()? as u32;
                self.get(s);
            }
            op::LONG_BINGET => {
                let s = inp.uint::<4>()? as u32;
                self.get(s);
            }
            op::BINPUT => {
                let s = inp.u8()? as u32;
                self.put(s)?;
            }
            op::LONG_BINPUT => {
                let s = inp.uint::<4>()? as u32;
                self.put(s)?;
            }
            op::SHORT_BINUNICODE => {
                let n = inp.u8()? as u64;
                self.string(inp, n)?;
            }
            op::BINUNICODE => {
                let n = inp.uint::<4>()?;
                self.string(inp, n)?;
            }
            op::BINUNICODE8 => {
                let n = inp.uint::<8>()?;
                self.string(inp, n)?;
            }
            op::BININT1 => {
                let v = inp.u8()? as i64;
                self.stack.push(Value::Int(v));
            }
            op::BININT2 => {
                let v = inp.uint::<2>()? as i64;
                self.stack.push(Value::Int(v));
            }
            op::BININT => {
                let v = inp.uint::<4>()? as u32 as i32 as i64;
                self.stack.push(Value::Int(v));
            }
            op::LONG1 => {
                let n = inp.u8()? as u64;
                self.long(inp, n)?;
            }
            op::LONG4 => {
                let n = inp.uint::<4>()?;
                self.long(inp, n)?;
            }
            op::MARK => self.marks.push(self.stack.len()),
            op::EMPTY_DICT => self.stack.push(Value::Dict(Box::default())),
            op::EMPTY_LIST => self.stack.push(Value::List(Box::default())),
            op::APPENDS => self.appends()?,
            op::APPEND => self.append()?,
            op::SETITEMS => self.setitems()?,
            op::SETITEM => self.setitem()?,
            op::FRAME => {
                inp.uint::<8>()?;
            }
            op::PROTO => {
                inp.u8()?;
            }
            _ => self.rare(code, inp)?,
        }
        Ok(())
    }

    /// The opcodes a snapshot seldom or never holds.
    fn rare<R: Read>(&mut self, code: u8, inp: &mut Input<R>) -> Result<(), Stop> {
        match code {
            op::NONE | op::NEWTRUE | op::NEWFALSE | op::EMPTY_TUPLE | op::EMPTY_SET => {
                self.stack.push(Value::Opaque)
            }
            op::BINFLOAT => self.skip_push(inp, 8)?,
            op::SHORT_BINBYTES | op::SHORT_BINSTRING => {
                let n = inp.u8()? as u64;
                self.skip_push(inp, n)?;
            }
            op::BINBYTES | op::BINSTRING => {
                let n = inp.uint::<4>()?;
                self.skip_push(inp, n)?;
            }
            op::BINBYTES8 | op::BYTEARRAY8 => {
                let n = inp.uint::<8>()?;
                self.skip_push(inp, n)?;
            }
            op::POP => {
                if self.marks.last() == Some(&self.stack.len()) {
                    self.marks.pop();
                } else {
                    self.pop()?;
                }
            }
            op::POP_MARK => self.drop_to_mark()?,
            op::DUP => {
                // Only what can be shared is duplicated; a container reads as opaque.
                let v = match self.top()? {
                    Value::Int(i) => Value::Int(*i),
                    Value::Word(w) => Value::Word(*w),
                    Value::Str(s) => Value::Str(Rc::clone(s)),
                    Value::Frame(f) => Value::Frame(*f),
                    Value::Frames(g) => Value::Frames(*g),
                    _ => Value::Opaque,
                };
                self.stack.push(v);
            }
            op::TUPLE | op::FROZENSET => {
                self.drop_to_mark()?;
                self.stack.push(Value::Opaque);
            }
            op::ADDITEMS => self.drop_to_mark()?,
            op::LIST => {
                let m = self.pop_mark()?;
                let mut l = List::default();
                for v in self.stack.drain(m..) {
                    l.push(v, &mut self.sink, &mut self.memo);
                }
                self.stack.push(Value::List(Box::new(l)));
            }
            op::DICT => {
                let m = self.pop_mark()?;
                let mut d = Dict::default();
                let mut it = self.stack.drain(m..);
                while let (Some(k), Some(v)) = (it.next(), it.next()) {
                    d.set(&k, v);
                }
                drop(it);
                self.stack.push(Value::Dict(Box::new(d)));
            }
            op::TUPLE1 => self.opaque(1)?,
            op::TUPLE2 | op::STACK_GLOBAL | op::REDUCE | op::NEWOBJ => self.opaque(2)?,
            op::TUPLE3 | op::NEWOBJ_EX => self.opaque(3)?,
            op::BUILD => {
                self.pop()?;
            }
            op::GLOBAL => {
                inp.line()?;
                inp.line()?;
                self.stack.push(Value::Opaque);
            }
            op::NEXT_BUFFER => self.stack.push(Value::Opaque),
            op::READONLY_BUFFER => {}
            _ => return Err(Stop::Bad(format!("unknown pickle opcode 0x{code:02x}"), 0)),
        }
        Ok(())
    }

    /// Folds what was left on the stack when reading stopped, as if the file went on to close
    /// every open `MARK`: the items since each go into the list (`APPENDS`) or dict
    /// (`SETITEMS`) below it, innermost first, so a device trace cut short is still put at its
    /// place in `device_traces`.
    pub(crate) fn salvage(&mut self) {
        while let Some(&m) = self.marks.last() {
            // Each pops the mark, whatever it finds: the loop ends.
            let _ = match m.checked_sub(1).and_then(|k| self.stack.get(k)) {
                Some(Value::List(_)) => self.appends(),
                Some(Value::Dict(_)) => self.setitems(),
                _ => self.drop_to_mark(),
            };
        }
    }
}
