//! One rank's collectives in bounded memory, for the cross-rank matching of
//! the reduce stage (`reduce::collectives`).
//!
//! A rank's collectives are kept as fixed-size records (key, name, arrival, start, end and
//! the segment before it, [`super::segments`]: 61 bytes) sorted by (key, start, end, arrival), keys in the sorted order of their labels. The
//! first [`mem_records`] of a rank stay in memory; the rest go, in segments of
//! [`SEGMENT`] records, to one temporary file that every rank of the process shares (one file
//! descriptor however many ranks; anonymous, so deleted when the last rank holding it is
//! dropped or the process ends, signals included). What stays in memory per rank is its key
//! labels, per-key counts, the collective names and the segment list.
//!
//! Sorted this way, the matching reads every rank's records once, front to back, all ranks of a
//! world in lockstep (the keys in label order, the n-th of a key on each rank together): a
//! [`Cursor`] per rank with one small buffer. Nothing is sampled or dropped.
//!
//! In a partial the collectives are written as they always were (key → list of name, start,
//! end), streamed from the store, and read back streamed into a spool, never held whole.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::sync::{Arc, Mutex, Weak};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use super::collector::CollEv;
use super::spill::{i64_at, Rec, Spool};

/// One collective as reports and partials show it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub(crate) struct Coll {
    pub(crate) name: String,
    pub(crate) start: i64,
    pub(crate) end: i64,
    /// The segment before it ([`super::segments`]); absent in partials written before it
    /// existed (their collectives then explain no lateness).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) prev_end: Option<i64>,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub(crate) busy: i64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub(crate) pre: i64,
    /// The data it moves, bytes (absent: unknown).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) bytes: Option<u64>,
    /// Its segment starts at its step's start ([`CollEv::from_step`]).
    #[serde(default, skip_serializing_if = "is_false")]
    pub(crate) from_step: bool,
    /// How long compute waited for it, ns, when compute ran on while it did
    /// ([`CollEv::waited`]); absent: compute waited for all of it, or the trace cannot tell.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) waited: Option<i64>,
    /// The rank's compute ran during it ([`CollEv::overlapped`]).
    #[serde(default, skip_serializing_if = "is_false")]
    pub(crate) overlapped: bool,
}

fn is_false(x: &bool) -> bool {
    !*x
}

fn is_zero(x: &i64) -> bool {
    *x == 0
}

impl Coll {
    /// The record's segment fields from a collective's.
    pub(crate) fn segment(&self) -> (i64, i64, i64) {
        (
            self.prev_end.unwrap_or(super::segments::NO_PREV),
            self.busy,
            self.pre,
        )
    }
}

impl Rec for CollEv {
    const SIZE: usize = 70;
    fn put(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.key.to_le_bytes());
        out.extend_from_slice(&self.name.to_le_bytes());
        out.extend_from_slice(&self.seq.to_le_bytes());
        out.extend_from_slice(&self.start.to_le_bytes());
        out.extend_from_slice(&self.end.to_le_bytes());
        out.extend_from_slice(&self.prev_end.to_le_bytes());
        out.extend_from_slice(&self.busy.to_le_bytes());
        out.extend_from_slice(&self.pre.to_le_bytes());
        out.extend_from_slice(&self.bytes.to_le_bytes());
        out.push(u8::from(self.from_step));
        out.extend_from_slice(&self.waited.to_le_bytes());
        out.push(u8::from(self.overlapped));
    }
    fn get(b: &[u8]) -> Self {
        let u32_at = |at: usize| {
            b.get(at..at + 4)
                .and_then(|x| x.try_into().ok())
                .map_or(0, u32::from_le_bytes)
        };
        CollEv {
            key: u32_at(0),
            name: u32_at(4),
            seq: u32_at(8),
            start: i64_at(b, 12),
            end: i64_at(b, 20),
            prev_end: i64_at(b, 28),
            busy: i64_at(b, 36),
            pre: i64_at(b, 44),
            bytes: i64_at(b, 52) as u64,
            from_step: b.get(60).is_some_and(|&x| x != 0),
            waited: i64_at(b, 61),
            overlapped: b.get(69).is_some_and(|&x| x != 0),
        }
    }
}

/// Records per segment appended to the shared file (208 KiB).
pub(crate) const SEGMENT: usize = 4096;
/// Read buffer of a cursor (whole records).
const READ_BUF: usize = (8 << 10) / CollEv::SIZE * CollEv::SIZE;

/// Records a rank keeps in memory before its collectives go to the shared file: 256 (13 KiB,
/// so that 1,024 ranks hold 13 MiB), or the spools' test capacity when one is set
/// ([`super::spill::set_cap`]).
pub(crate) fn mem_records() -> usize {
    match super::spill::cap_override() {
        0 => 256,
        n => n,
    }
}

/// The shared file, while some rank holds it.
static SHARED: Mutex<Weak<Mutex<File>>> = Mutex::new(Weak::new());

fn shared_file() -> Result<Arc<Mutex<File>>> {
    let mut g = SHARED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(f) = g.upgrade() {
        return Ok(f);
    }
    let f = Arc::new(Mutex::new(
        tempfile::tempfile().context("cannot create a temporary file")?,
    ));
    *g = Arc::downgrade(&f);
    Ok(f)
}

/// Where a rank's sorted records are.
#[derive(Debug, Clone)]
enum Store {
    Mem(Arc<[CollEv]>),
    /// Segments (offset, records) of the shared file, in order.
    File {
        file: Arc<Mutex<File>>,
        segs: Arc<[(u64, usize)]>,
    },
}

impl Default for Store {
    fn default() -> Self {
        Store::Mem(Arc::new([]))
    }
}

/// Takes sorted records and keeps the first [`mem_records`] in memory, the rest in segments of
/// the shared file.
struct Writer {
    buf: Vec<CollEv>,
    file: Option<Arc<Mutex<File>>>,
    segs: Vec<(u64, usize)>,
    mem: usize,
}

impl Writer {
    fn new() -> Self {
        Writer {
            buf: Vec::new(),
            file: None,
            segs: Vec::new(),
            mem: mem_records(),
        }
    }

    fn push(&mut self, r: CollEv) -> Result<()> {
        self.buf.push(r);
        let full = if self.file.is_none() {
            self.mem
        } else {
            SEGMENT
        };
        if self.buf.len() > full {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        if self.file.is_none() {
            self.file = Some(shared_file()?);
        }
        let file = self.file.as_ref().context("no spill file")?;
        let mut bytes = Vec::with_capacity(self.buf.len() * CollEv::SIZE);
        for r in &self.buf {
            r.put(&mut bytes);
        }
        let mut f = file.lock().unwrap_or_else(|e| e.into_inner());
        let off = f.seek(SeekFrom::End(0))?;
        f.write_all(&bytes)
            .context("cannot write to a temporary file")?;
        self.segs.push((off, self.buf.len()));
        self.buf.clear();
        Ok(())
    }

    fn finish(mut self) -> Result<Store> {
        if self.file.is_none() {
            return Ok(Store::Mem(self.buf.into()));
        }
        self.flush()?;
        Ok(Store::File {
            file: self.file.context("no spill file")?,
            segs: self.segs.into(),
        })
    }
}

/// The label of each collector key: an op name as it is (CPU), a send or receive with its
/// peer as its pair key on the rank numbered `own` ([`super::p2p::label`]); `pg\x1fstream`
/// (GPU) as the process group and the stream's position among that group's streams on the
/// rank, so that stream numbers may differ between ranks.
pub(crate) fn labels(keys: &[String], gpu: bool, own: Option<i64>) -> Vec<String> {
    if !gpu {
        return keys.iter().map(|k| super::p2p::label(k, own)).collect();
    }
    // An NCCL send or receive keyed by its peer ([`super::p2p::gpu_key`]) is its pair key;
    // any other key a process group and a stream.
    let split: Vec<Result<String, (&str, i64)>> = keys
        .iter()
        .map(|k| {
            let (pg, s) = k.split_once('\u{1f}').unwrap_or((k.as_str(), "-1"));
            match super::p2p::direction(pg) {
                Some(_) => Ok(super::p2p::label(k, own)),
                None => Err((pg, s.parse().unwrap_or(-1))),
            }
        })
        .collect();
    // pg -> sorted streams
    let mut streams: BTreeMap<&str, BTreeSet<i64>> = BTreeMap::new();
    for &(pg, s) in split.iter().filter_map(|x| x.as_ref().err()) {
        streams.entry(pg).or_default().insert(s);
    }
    split
        .into_iter()
        .map(|x| {
            let (pg, s) = match x {
                Ok(pair) => return pair,
                Err(ps) => ps,
            };
            let ord = streams[pg].iter().position(|&x| x == s).unwrap_or(0);
            if pg.is_empty() {
                format!("stream #{ord}")
            } else {
                format!("pg {pg} stream #{ord}")
            }
        })
        .collect()
}

/// One rank's collectives, on the common clock: per key (process group + stream, or op name)
/// in start order.
#[derive(Debug, Clone, Default)]
pub struct RankColls {
    /// Key labels, sorted; a record's `key` indexes them.
    keys: Vec<String>,
    /// Collectives per key.
    counts: Vec<usize>,
    /// Collective names; a record's `name` indexes them.
    names: Vec<String>,
    store: Store,
    /// Added to every time read back ([`RankColls::add_base`]).
    shift: i64,
    /// The earliest start (before the shift).
    earliest: Option<i64>,
}

impl RankColls {
    /// From the collector's records. `labels[k]`: the label of the collector's key `k` (labels
    /// may repeat: their collectives then go together); `base` is added to every time.
    pub(crate) fn build(
        evs: Spool<CollEv>,
        labels: &[String],
        names: Vec<String>,
        base: i64,
    ) -> Result<RankColls> {
        Self::build_in(evs, labels, names, base, mem_records())
    }

    /// [`RankColls::build`] keeping at most `mem` records in memory.
    fn build_in(
        evs: Spool<CollEv>,
        labels: &[String],
        names: Vec<String>,
        base: i64,
        mem: usize,
    ) -> Result<RankColls> {
        let uniq: Vec<&String> = labels.iter().collect::<BTreeSet<_>>().into_iter().collect();
        let id_of: Vec<u32> = labels
            .iter()
            .map(|l| uniq.binary_search(&l).unwrap_or(0) as u32)
            .collect();
        let mut counts = vec![0usize; uniq.len()];
        let mut by_label = evs.like();
        for e in evs.sorted_by(|_: &CollEv| ())? {
            let mut e = e?;
            e.key = id_of.get(e.key as usize).copied().unwrap_or(0);
            e.start += base;
            e.end += base;
            if e.prev_end != super::segments::NO_PREV {
                e.prev_end += base;
            }
            if let Some(c) = counts.get_mut(e.key as usize) {
                *c += 1;
            }
            by_label.push(e);
        }
        // Labels without a collective are left out; ids are renumbered in the same order.
        let mut new_id = vec![0u32; uniq.len()];
        let mut keys = Vec::new();
        let mut kept = Vec::new();
        for (i, (l, &n)) in uniq.iter().zip(&counts).enumerate() {
            if n > 0 {
                new_id[i] = keys.len() as u32;
                keys.push((*l).clone());
                kept.push(n);
            }
        }
        let mut w = Writer::new();
        w.mem = mem;
        let mut earliest: Option<i64> = None;
        for e in by_label.sorted_by(|e: &CollEv| (e.key, e.start, e.end, e.seq))? {
            let mut e = e?;
            e.key = new_id.get(e.key as usize).copied().unwrap_or(0);
            earliest = Some(earliest.map_or(e.start, |x| x.min(e.start)));
            w.push(e)?;
        }
        Ok(RankColls {
            keys,
            counts: kept,
            names,
            store: w.finish()?,
            shift: 0,
            earliest,
        })
    }

    #[cfg(test)]
    /// From lists per key (each in start order), as partials and tests hold them.
    pub(crate) fn from_map(by_key: BTreeMap<String, Vec<Coll>>) -> Result<RankColls> {
        let mut names: Vec<String> = Vec::new();
        let mut ids: BTreeMap<String, u32> = BTreeMap::new();
        let mut w = Writer::new();
        let (mut keys, mut counts) = (Vec::new(), Vec::new());
        let mut earliest: Option<i64> = None;
        let mut seq = 0u32;
        for (k, list) in by_key {
            if list.is_empty() {
                continue;
            }
            let key = keys.len() as u32;
            counts.push(list.len());
            keys.push(k);
            for c in list {
                let (prev_end, busy, pre) = c.segment();
                let name = *ids.entry(c.name.clone()).or_insert_with(|| {
                    names.push(c.name);
                    names.len() as u32 - 1
                });
                earliest = Some(earliest.map_or(c.start, |x| x.min(c.start)));
                w.push(CollEv {
                    key,
                    name,
                    seq,
                    start: c.start,
                    end: c.end,
                    prev_end,
                    busy,
                    pre,
                    bytes: c.bytes.unwrap_or(0),
                    from_step: c.from_step,
                    waited: c.waited.unwrap_or(super::collector::BLOCKING),
                    overlapped: c.overlapped,
                })?;
                seq = seq.wrapping_add(1);
            }
        }
        Ok(RankColls {
            keys,
            counts,
            names,
            store: w.finish()?,
            shift: 0,
            earliest,
        })
    }

    /// Collectives in all.
    pub fn count(&self) -> usize {
        self.counts.iter().sum()
    }

    /// The keys, sorted.
    pub(crate) fn keys(&self) -> &[String] {
        &self.keys
    }

    /// Collectives of `key` (0 when the rank has none).
    pub(crate) fn len_of(&self, key: &str) -> usize {
        self.keys
            .binary_search_by(|k| k.as_str().cmp(key))
            .map_or(0, |i| self.counts[i])
    }

    /// The name a record refers to.
    pub(crate) fn name(&self, id: u32) -> &str {
        self.names.get(id as usize).map_or("", String::as_str)
    }

    /// The earliest start, on the common clock.
    pub(crate) fn earliest(&self) -> Option<i64> {
        self.earliest.map(|t| t + self.shift)
    }

    /// Moves every time by `ns`.
    pub(crate) fn add_base(&mut self, ns: i64) {
        self.shift += ns;
    }

    /// Whether the records are (partly) in the shared file.
    pub fn spilled(&self) -> bool {
        matches!(self.store, Store::File { .. })
    }

    /// Reads the records from the first, in (key, start) order.
    pub(crate) fn cursor(&self) -> Cursor<'_> {
        Cursor {
            c: self,
            at: 0,
            seg: 0,
            seg_read: 0,
            buf: Vec::new(),
            pos: 0,
        }
    }
}

/// Reads one rank's records in order, through one small buffer.
pub(crate) struct Cursor<'a> {
    c: &'a RankColls,
    /// Records returned (the in-memory store's index).
    at: usize,
    /// Current segment and the records of it read into buffers so far.
    seg: usize,
    seg_read: usize,
    buf: Vec<u8>,
    pos: usize,
}

impl Cursor<'_> {
    /// The next record with its times on the common clock; `None` at the end.
    pub(crate) fn next_rec(&mut self) -> Result<Option<CollEv>> {
        let shift = self.c.shift;
        let mut r = match &self.c.store {
            Store::Mem(v) => match v.get(self.at) {
                Some(r) => *r,
                None => return Ok(None),
            },
            Store::File { file, segs } => {
                if self.pos >= self.buf.len() {
                    while self.seg < segs.len() && self.seg_read >= segs[self.seg].1 {
                        self.seg += 1;
                        self.seg_read = 0;
                    }
                    let Some(&(off, n)) = segs.get(self.seg) else {
                        return Ok(None);
                    };
                    let take = (n - self.seg_read).min(READ_BUF / CollEv::SIZE);
                    self.buf.resize(take * CollEv::SIZE, 0);
                    let mut f = file.lock().unwrap_or_else(|e| e.into_inner());
                    f.seek(SeekFrom::Start(off + (self.seg_read * CollEv::SIZE) as u64))?;
                    f.read_exact(&mut self.buf)
                        .context("cannot read back a temporary file")?;
                    self.seg_read += take;
                    self.pos = 0;
                }
                let r = CollEv::get(&self.buf[self.pos..self.pos + CollEv::SIZE]);
                self.pos += CollEv::SIZE;
                r
            }
        };
        self.at += 1;
        r.start += shift;
        r.end += shift;
        if r.prev_end != super::segments::NO_PREV {
            r.prev_end += shift;
        }
        Ok(Some(r))
    }

    /// The next record, which must exist (the counts say so).
    pub(crate) fn next_of(&mut self, key: &str) -> Result<CollEv> {
        self.next_rec()?
            .with_context(|| format!("{key}: fewer collectives read back than counted"))
    }

    /// Skips `n` records.
    pub(crate) fn skip(&mut self, n: usize) -> Result<()> {
        for _ in 0..n {
            self.next_rec()?;
        }
        Ok(())
    }
}

mod wire;

#[cfg(test)]
mod tests;
