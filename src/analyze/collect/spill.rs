//! Bounded-memory storage and sorting of fixed-size records: what keeps `analyze` flat in the
//! input size.
//!
//! A [`Spool`] holds at most its capacity in records in memory ([`Spool::CAP`], or more when
//! few ranks are read at once: [`cap_for`]); beyond that it appends the
//! buffer, unsorted, to an anonymous temporary file (deleted when dropped) and starts again.
//! [`Spool::sorted_by`] then yields every record in key order whatever order they came in: one
//! in-memory sort when nothing was spilled, else an external merge sort (each spilled chunk
//! read back, sorted and written back in place as a run; the records never spilled sorted in
//! memory as one more run; then a k-way merge of the runs through small buffers). Nothing is
//! assumed about the order events are written in (Kineto writes GPU ops neither in global nor
//! per-stream time order, and launches after the kernels they launched), and nothing is
//! dropped: late records are sorted like the others.
//!
//! When no temporary file can be written, the spool keeps everything in memory from then on:
//! the figures stay exact, only the bound is lost.
//!
//! Memory: one buffer of up to its capacity in records (kept through the merge as its last run), plus one
//! 16 KiB read buffer per spilled run in the merge (a run per capacity's worth of records). The records still in memory at the end are never written (before #14's seventh
//! round they were spilled too, and the sorted runs went to a second temporary file).
//!
//! Written by hand: the external-sort crates (`extsort`, …) serialise through serde per record
//! and keep whole runs' worth of buffers; this is 150 lines over `tempfile` and `std`.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::sync::atomic::{AtomicUsize, Ordering};

use anyhow::{Context, Result};

/// A record of a fixed size on disk.
pub(crate) trait Rec: Copy {
    const SIZE: usize;
    fn put(&self, out: &mut Vec<u8>);
    fn get(b: &[u8]) -> Self;
}

impl Rec for (i64, i64) {
    const SIZE: usize = 16;
    fn put(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.0.to_le_bytes());
        out.extend_from_slice(&self.1.to_le_bytes());
    }
    fn get(b: &[u8]) -> Self {
        (i64_at(b, 0), i64_at(b, 8))
    }
}

/// The little-endian `i64` at `at` (zero-padded if the slice is short; records are read whole).
pub(crate) fn i64_at(b: &[u8], at: usize) -> i64 {
    let mut x = [0u8; 8];
    if let Some(s) = b.get(at..at + 8) {
        x.copy_from_slice(s);
    }
    i64::from_le_bytes(x)
}

/// Records in arrival order, at most [`Spool::CAP`] of them in memory.
pub(crate) struct Spool<T: Rec> {
    buf: Vec<T>,
    /// Spilled chunks: (offset, records) in `file`.
    chunks: Vec<(u64, usize)>,
    file: Option<File>,
    len: u64,
    cap: usize,
}

impl<T: Rec> Default for Spool<T> {
    /// A spool that spills every [`Spool::CAP`] records, or every [`set_cap`] records when set.
    fn default() -> Self {
        Spool::holding(Self::CAP)
    }
}

/// Records each spool of a rank may keep in memory when `ranks` ranks are read at once: a
/// budget of 2^18 shared among them, between [`Spool::CAP`] (2^15, 1 MiB of 32-byte records)
/// and 2^17 (4 MiB). At one or two ranks in flight a rank of up to ~130 k GPU ops (a few
/// hundred MB of trace) never spills; from eight on each spool holds `CAP`, so memory per rank
/// in flight never exceeds what it was with one fixed capacity.
pub(crate) fn cap_for(ranks: usize) -> usize {
    ((1usize << 18) / ranks.max(1)).clamp(1 << 15, 1 << 17)
}

static CAP_OVERRIDE: AtomicUsize = AtomicUsize::new(0);

/// Sets the records every new spool keeps in memory, process-wide (0: the default). For tests
/// and benchmarks that want the spilling path on small inputs.
pub fn set_cap(records: usize) {
    CAP_OVERRIDE.store(records, Ordering::Relaxed);
}

/// The records [`set_cap`] set (0: none set).
pub(crate) fn cap_override() -> usize {
    CAP_OVERRIDE.load(Ordering::Relaxed)
}

impl<T: Rec> Spool<T> {
    /// Records kept in memory before a spill (32 768: 1 MiB of 32-byte records).
    pub(crate) const CAP: usize = 1 << 15;

    /// A spool that spills every `cap` records, or every [`set_cap`] records when set.
    pub(crate) fn holding(cap: usize) -> Self {
        match CAP_OVERRIDE.load(Ordering::Relaxed) {
            0 => Spool::with_cap(cap),
            n => Spool::with_cap(n),
        }
    }

    /// A spool that spills every `cap` records (tests use small ones).
    pub(crate) fn with_cap(cap: usize) -> Self {
        Spool {
            buf: Vec::new(),
            chunks: Vec::new(),
            file: None,
            len: 0,
            cap: cap.max(1),
        }
    }

    /// An empty spool that keeps as many records in memory as `self` does: what a pass that
    /// turns one spool into another writes to, so a rank that fits in memory on the way in
    /// is not spilled on the way through.
    pub(crate) fn like<U: Rec>(&self) -> Spool<U> {
        Spool::with_cap(self.cap)
    }

    /// Every record, when none was spilled.
    pub(crate) fn held(&self) -> Option<&[T]> {
        self.chunks.is_empty().then_some(&self.buf[..])
    }

    /// Records pushed so far.
    pub(crate) fn len(&self) -> u64 {
        self.len
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[cfg(test)]
    /// Runs written to disk so far.
    pub(crate) fn spilled_chunks(&self) -> usize {
        self.chunks.len()
    }

    /// Adds a record; spills the buffer when it is full (or, when that fails, keeps it).
    #[inline]
    pub(crate) fn push(&mut self, r: T) {
        self.len += 1;
        if self.buf.len() == self.buf.capacity() {
            self.grow();
        }
        self.buf.push(r);
        if self.buf.len() >= self.cap && self.spill().is_err() {
            self.cap = usize::MAX;
        }
    }

    /// Makes room for one more record: [`FIRST`] records, then the whole capacity at once
    /// (doubling only once a spill failed). Grown by doubling, a spool's buffer was copied at
    /// each step, ~5 % of analyze's CPU time on the bench's synthetic set once the heap keeps
    /// freed pages (`commands::heap`); a rank with few records still reserves little.
    #[cold]
    fn grow(&mut self) {
        let len = self.buf.len();
        let want = if self.cap == usize::MAX {
            len.max(FIRST)
        } else if len < FIRST {
            FIRST.min(self.cap)
        } else {
            self.cap
        };
        self.buf.reserve_exact(want.saturating_sub(len).max(1));
    }

    fn spill(&mut self) -> Result<()> {
        if self.file.is_none() {
            self.file = Some(tempfile::tempfile().context("cannot create a temporary file")?);
        }
        let f = self.file.as_mut().context("no spill file")?;
        let off = self
            .chunks
            .last()
            .map_or(0, |&(o, n)| o + (n * T::SIZE) as u64);
        write_recs(f, off, &self.buf)?;
        self.chunks.push((off, self.buf.len()));
        self.buf.clear();
        Ok(())
    }

    /// Every record, in ascending `key` order (ties in no defined order).
    ///
    /// With chunks spilled: each is read back, sorted and written back in place as a run;
    /// the records still in memory are sorted there and make the last run, never written.
    pub(crate) fn sorted_by<K: Ord + Copy + 'static>(
        mut self,
        key: impl Fn(&T) -> K + Copy + 'static,
    ) -> Result<Box<dyn Iterator<Item = Result<T>>>>
    where
        T: 'static,
    {
        // A stable sort: it finds the ascending runs records arrive in (Kineto writes a
        // stream's kernels nearly in order), where the unstable one does not.
        self.buf.sort_by_key(key);
        if self.chunks.is_empty() {
            return Ok(Box::new(std::mem::take(&mut self.buf).into_iter().map(Ok)));
        }
        let mut file = self.file.take().context("no spill file")?;
        let mut chunk: Vec<T> = Vec::new();
        for &(off, n) in &self.chunks {
            read_recs(&mut file, off, n, &mut chunk)?;
            chunk.sort_by_key(key);
            write_recs(&mut file, off, &chunk)?;
        }
        drop(chunk);
        let tail = std::mem::take(&mut self.buf);
        Merge::new(file, &self.chunks, tail, key)
            .map(|m| Box::new(m) as Box<dyn Iterator<Item = _>>)
    }
}

/// Records a spool's buffer holds before it is given its whole capacity ([`Spool::grow`]).
const FIRST: usize = 4096;

/// Bytes encoded or decoded per read or write of the temporary file.
const IO_BUF: usize = 64 << 10;

/// Writes `recs` at `off`, encoded a buffer at a time.
fn write_recs<T: Rec>(f: &mut File, off: u64, recs: &[T]) -> Result<()> {
    f.seek(SeekFrom::Start(off))?;
    let mut b = Vec::with_capacity(IO_BUF);
    for piece in recs.chunks((IO_BUF / T::SIZE).max(1)) {
        b.clear();
        for r in piece {
            r.put(&mut b);
        }
        f.write_all(&b)
            .context("cannot write to a temporary file")?;
    }
    Ok(())
}

/// Reads the `n` records at `off` into `out` (cleared first).
fn read_recs<T: Rec>(f: &mut File, off: u64, n: usize, out: &mut Vec<T>) -> Result<()> {
    out.clear();
    f.seek(SeekFrom::Start(off))?;
    let per = (IO_BUF / T::SIZE).max(1);
    let mut b = vec![0u8; per * T::SIZE];
    let mut left = n;
    while left > 0 {
        let k = left.min(per);
        let piece = &mut b[..k * T::SIZE];
        f.read_exact(piece)
            .context("cannot read back a temporary file")?;
        out.extend(piece.chunks_exact(T::SIZE).map(T::get));
        left -= k;
    }
    Ok(())
}

/// One sorted run of the merge.
enum Run<T> {
    /// Spilled: read back from the file through its own small buffer.
    File {
        /// Next byte to read from the file.
        off: u64,
        /// Bytes of the run not yet read from the file.
        left: u64,
        buf: Vec<u8>,
        pos: usize,
    },
    /// The records never spilled, sorted in memory.
    Mem(std::vec::IntoIter<T>),
}

/// The k-way merge of sorted runs (one file; each run refills its buffer at its own offset).
struct Merge<T, K, F> {
    file: File,
    runs: Vec<Run<T>>,
    heap: BinaryHeap<Reverse<(K, usize)>>,
    head: Vec<Option<T>>,
    key: F,
}

/// Read buffer per run.
const RUN_BUF: usize = 16 << 10;

impl<T: Rec, K: Ord + Copy, F: Fn(&T) -> K> Merge<T, K, F> {
    /// The runs at `bounds` in `file`, and `tail` (sorted, in memory) as one more run.
    fn new(file: File, bounds: &[(u64, usize)], tail: Vec<T>, key: F) -> Result<Self> {
        let mut runs = bounds
            .iter()
            .map(|&(off, n)| Run::File {
                off,
                left: (n * T::SIZE) as u64,
                buf: Vec::new(),
                pos: 0,
            })
            .collect::<Vec<_>>();
        if !tail.is_empty() {
            runs.push(Run::Mem(tail.into_iter()));
        }
        let mut m = Merge {
            file,
            heap: BinaryHeap::with_capacity(runs.len()),
            head: vec![None; runs.len()],
            runs,
            key,
        };
        for i in 0..m.runs.len() {
            if let Some(t) = m.read_next(i)? {
                m.heap.push(Reverse(((m.key)(&t), i)));
                m.head[i] = Some(t);
            }
        }
        Ok(m)
    }

    /// The next record of run `i`, refilling its buffer from the file when it is used up.
    fn read_next(&mut self, i: usize) -> Result<Option<T>> {
        let (off, left, buf, pos) = match &mut self.runs[i] {
            Run::Mem(recs) => return Ok(recs.next()),
            Run::File {
                off,
                left,
                buf,
                pos,
            } => (off, left, buf, pos),
        };
        if *pos + T::SIZE > buf.len() {
            if *left == 0 {
                return Ok(None);
            }
            // Whole records only: RUN_BUF rounded down to the record size.
            let want = (RUN_BUF / T::SIZE * T::SIZE).max(T::SIZE) as u64;
            let n = want.min(*left) as usize;
            buf.resize(n, 0);
            self.file.seek(SeekFrom::Start(*off))?;
            self.file
                .read_exact(buf)
                .context("cannot read back a temporary file")?;
            *off += n as u64;
            *left -= n as u64;
            *pos = 0;
        }
        let t = T::get(&buf[*pos..*pos + T::SIZE]);
        *pos += T::SIZE;
        Ok(Some(t))
    }
}

impl<T: Rec, K: Ord + Copy, F: Fn(&T) -> K> Iterator for Merge<T, K, F> {
    type Item = Result<T>;
    fn next(&mut self) -> Option<Result<T>> {
        let Reverse((_, i)) = *self.heap.peek()?;
        let t = self.head[i].take()?;
        match self.read_next(i) {
            // The run's next record takes its place at the top (one sift instead of a pop
            // and a push).
            Ok(Some(n)) => {
                let k = (self.key)(&n);
                self.head[i] = Some(n);
                if let Some(mut top) = self.heap.peek_mut() {
                    *top = Reverse((k, i));
                }
            }
            Ok(None) => {
                self.heap.pop();
            }
            Err(e) => return Some(Err(e)),
        }
        Some(Ok(t))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A deterministic shuffle of 0..n (xorshift).
    fn shuffled(n: i64) -> Vec<(i64, i64)> {
        let mut v: Vec<(i64, i64)> = (0..n).map(|i| (i % 97, i)).collect();
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for i in (1..v.len()).rev() {
            crate::testrng::xorshift(&mut x);
            v.swap(i, (x % (i as u64 + 1)) as usize);
        }
        v
    }

    fn sorted_out(v: &[(i64, i64)], cap: usize) -> (Vec<(i64, i64)>, usize) {
        let mut s = Spool::with_cap(cap);
        for &r in v {
            s.push(r);
        }
        let chunks = s.spilled_chunks();
        let out = s
            .sorted_by(|r: &(i64, i64)| *r)
            .unwrap()
            .collect::<Result<Vec<_>>>()
            .unwrap();
        (out, chunks)
    }

    #[test]
    fn spilled_and_in_memory_sorts_agree_with_std() {
        let v = shuffled(10_007);
        let mut want = v.clone();
        want.sort();
        for cap in [1, 3, 64, 1000, 20_000] {
            let (got, chunks) = sorted_out(&v, cap);
            assert_eq!(got, want, "cap {cap}");
            assert_eq!(
                chunks,
                if cap > v.len() { 0 } else { v.len() / cap },
                "cap {cap}"
            );
        }
        let (got, _) = sorted_out(&[], 4);
        assert!(got.is_empty());
    }

    #[test]
    fn a_run_longer_than_the_read_buffer_is_read_whole() {
        // 3000 records of 16 B = 48 000 B per run: three buffer refills per run.
        let v = shuffled(9_000);
        let mut want = v.clone();
        want.sort();
        assert_eq!(sorted_out(&v, 3_000), (want, 3));
    }

    #[test]
    fn records_arriving_nearly_in_order_come_out_in_order() {
        // What Kineto writes: ascending runs that overlap (kernels of several streams), the
        // order the sort's run detection meets.
        let v: Vec<(i64, i64)> = (0..12_000i64).map(|i| ((i % 7) * 1_000 + i, i)).collect();
        let mut want = v.clone();
        want.sort();
        for cap in [500, 5_000, 50_000] {
            assert_eq!(sorted_out(&v, cap).0, want, "cap {cap}");
        }
    }

    #[test]
    fn the_budget_is_shared_by_the_ranks_in_flight() {
        assert_eq!(cap_for(0), 1 << 17);
        assert_eq!(cap_for(1), 1 << 17);
        assert_eq!(cap_for(2), 1 << 17);
        assert_eq!(cap_for(3), (1 << 18) / 3);
        assert_eq!(cap_for(4), 1 << 16);
        assert_eq!(cap_for(8), Spool::<(i64, i64)>::CAP);
        assert_eq!(cap_for(512), Spool::<(i64, i64)>::CAP);
    }
}
