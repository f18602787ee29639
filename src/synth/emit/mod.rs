//! Writes one rank's trace file as Kineto lays it out: header keys, metadata events, the steps
//! (CPU ops, CUDA calls, flow pairs, GPU activities), Kineto's closing span/instant events and
//! the trailing keys. Events go through a small buffer into gzip (or plain) output; the file is
//! written as `NAME.tmp` and renamed when complete, so a failed run leaves no partial trace.
//! The steps themselves are written by [`step`].

use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use flate2::write::GzEncoder;
use flate2::Compression;

use super::catalog::{self as cat, KSpec};
use super::layout::Layout;
use super::model::{CollKind, Gpu};
use super::sim::{RankStep, Rec};
use crate::trace::read::escape::write_string;

mod cpu;
pub(crate) mod memory;
mod step;

/// CUDA stream ids: compute, TP collectives, pipeline send/recv.
pub(crate) const STREAM_COMPUTE: u32 = 7;
pub(crate) const STREAM_NCCL: u32 = 28;
pub(crate) const STREAM_P2P: u32 = 32;
/// The side stream of `--overlap-comm`'s prefetch (copy-in and all-gather).
pub(crate) const STREAM_SIDE: u32 = 36;

const FLUSH_AT: usize = 1 << 17;

enum Sink {
    Plain(BufWriter<File>),
    Gz(Box<GzEncoder<BufWriter<File>>>),
}

impl Sink {
    fn write_all(&mut self, b: &[u8]) -> io::Result<()> {
        match self {
            Sink::Plain(w) => w.write_all(b),
            Sink::Gz(w) => w.write_all(b),
        }
    }

    fn finish(self) -> io::Result<()> {
        let mut w = match self {
            Sink::Plain(w) => w,
            Sink::Gz(g) => g.finish()?,
        };
        w.flush()
    }
}

/// Everything about a rank that its events repeat.
pub(crate) struct RankInfo {
    pub(crate) pid: u64,
    pub(crate) device: u32,
    pub(crate) process_name: String,
    pub(crate) distributed_info: String,
    /// This file's `baseTimeNanoseconds`.
    pub(crate) base_ns: i64,
    /// Subtracted from shared-clock times to get this file's `ts` (its base minus the common one).
    pub(crate) shift_ns: i64,
    pub(crate) trace_name: String,
    pub(crate) base_first: bool,
    /// `Input Dims` on GEMM CPU ops (`--record-shapes`).
    pub(crate) record_shapes: bool,
    /// Batch annotations (`step[…]` / `execute_context_…`) written.
    pub(crate) annotations: bool,
    /// vLLM's `execute_context_N(T)_generation_M(U)` instead of SGLang's `step[…]`.
    pub(crate) vllm: bool,
    /// A CPU-only (gloo) run: no device, no GPU events ([`super::cpu`]).
    pub(crate) cpu_only: bool,
    /// `--overlap-comm`: the side stream is named too.
    pub(crate) side_stream: bool,
    /// `[memory]` events (`profile_memory`): the rank's allocations ([`memory`]).
    pub(crate) memory: Option<memory::MemPlan>,
}

/// One rank's trace being written.
pub(crate) struct TraceWriter {
    path: PathBuf,
    tmp: PathBuf,
    sink: Option<Sink>,
    buf: Vec<u8>,
    json_bytes: u64,
    events: u64,
    ev_idx: u64,
    info: RankInfo,
    mem: memory::MemState,
    first_ns: i64,
    last_ns: i64,
    done: bool,
}

impl Drop for TraceWriter {
    fn drop(&mut self) {
        if !self.done {
            self.sink = None;
            let _ = fs::remove_file(&self.tmp);
        }
    }
}

/// Appends `v` in decimal.
fn num(out: &mut Vec<u8>, v: u64) {
    let mut tmp = [0u8; 20];
    let mut i = tmp.len();
    let mut v = v;
    loop {
        i -= 1;
        tmp[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    out.extend_from_slice(&tmp[i..]);
}

/// Appends nanoseconds as microseconds with exactly three fractional digits (`12.345`), as
/// Kineto does. Negative values are written as 0, as Kineto does.
fn us3(out: &mut Vec<u8>, ns: i64) {
    let ns = ns.max(0) as u64;
    num(out, ns / 1000);
    let f = ns % 1000;
    out.extend_from_slice(&[
        b'.',
        b'0' + (f / 100) as u8,
        b'0' + (f / 10 % 10) as u8,
        b'0' + (f % 10) as u8,
    ]);
}

impl TraceWriter {
    pub(crate) fn create(path: &Path, plain: bool, level: u32, info: RankInfo) -> Result<Self> {
        let mut tmp = path.as_os_str().to_owned();
        tmp.push(".tmp");
        let tmp = PathBuf::from(tmp);
        let file = File::create(&tmp).with_context(|| format!("creating {}", tmp.display()))?;
        let w = BufWriter::with_capacity(1 << 17, file);
        let sink = if plain {
            Sink::Plain(w)
        } else {
            Sink::Gz(Box::new(GzEncoder::new(w, Compression::new(level.min(9)))))
        };
        Ok(TraceWriter {
            path: path.to_path_buf(),
            tmp,
            sink: Some(sink),
            buf: Vec::with_capacity(FLUSH_AT + 8192),
            json_bytes: 0,
            events: 0,
            ev_idx: 0,
            info,
            mem: memory::MemState::default(),
            first_ns: i64::MAX,
            last_ns: i64::MIN,
            done: false,
        })
    }

    /// Uncompressed JSON bytes so far (buffered included).
    pub(crate) fn json_bytes(&self) -> u64 {
        self.json_bytes + self.buf.len() as u64
    }

    fn flush_buf(&mut self) -> Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        if let Some(s) = self.sink.as_mut() {
            s.write_all(&self.buf)
                .with_context(|| format!("writing {}", self.tmp.display()))?;
        }
        self.json_bytes += self.buf.len() as u64;
        self.buf.clear();
        Ok(())
    }

    fn maybe_flush(&mut self) -> Result<()> {
        if self.buf.len() >= FLUSH_AT {
            self.flush_buf()?;
        }
        Ok(())
    }

    /// File `ts` of a shared-clock time.
    fn ts(&mut self, ns: i64) {
        us3(&mut self.buf, ns - self.info.shift_ns);
    }

    fn open_event(&mut self) {
        if self.events > 0 {
            self.buf.push(b',');
        }
        self.buf.extend_from_slice(b"\n  {\n    ");
        self.events += 1;
    }

    fn close_event(&mut self) {
        self.buf.extend_from_slice(b"\n  }");
    }

    fn bytes(&mut self, b: &[u8]) {
        self.buf.extend_from_slice(b);
    }

    fn str(&mut self, s: &str) {
        write_string(&mut self.buf, s);
    }

    fn n(&mut self, v: u64) {
        num(&mut self.buf, v);
    }

    /// `"ph": "X", "cat": C, "name": N, "pid": P, "tid": T,\n "ts": .., "dur": ..`
    fn x_head(&mut self, cat: &str, name: &str, pid: u64, tid: u64, start: i64, dur: i64) {
        self.open_event();
        self.bytes(b"\"ph\": \"X\", \"cat\": ");
        self.str(cat);
        self.bytes(b", \"name\": ");
        self.str(name);
        self.bytes(b", \"pid\": ");
        self.n(pid);
        self.bytes(b", \"tid\": ");
        self.n(tid);
        self.bytes(b",\n    \"ts\": ");
        self.ts(start);
        self.bytes(b", \"dur\": ");
        us3(&mut self.buf, dur);
        self.last_ns = self.last_ns.max(start + dur);
        self.first_ns = self.first_ns.min(start);
    }

    fn args_open(&mut self) {
        self.bytes(b",\n    \"args\": {\n      ");
    }

    fn args_close(&mut self) {
        self.bytes(b"\n    }");
        self.close_event();
    }

    /// A CPU-side span (`cpu_op`, `user_annotation`) on the main thread.
    fn cpu_span(&mut self, cat: &str, name: &str, start: i64, dur: i64, ext: u64) {
        self.cpu_span_dims(cat, name, start, dur, ext, 0);
    }

    /// [`Self::cpu_span`] with `record_shapes`' `Input Dims` when `rows` > 0: input 0 is
    /// `[rows, HIDDEN]` (the token dimension first, as PyTorch writes an activation).
    fn cpu_span_dims(&mut self, cat: &str, name: &str, start: i64, dur: i64, ext: u64, rows: u64) {
        let (pid, idx) = (self.info.pid, self.ev_idx);
        self.ev_idx += 1;
        self.x_head(cat, name, pid, pid, start, dur);
        self.args_open();
        self.bytes(b"\"External id\": ");
        self.n(ext);
        self.bytes(b", \"Record function id\": 0, \"Ev Idx\": ");
        self.n(idx);
        if rows > 0 && self.info.record_shapes {
            let h = super::model::HIDDEN;
            let dims = if name == "aten::mm" {
                format!("[[{rows}, {h}], [{h}, {h}]]")
            } else {
                format!("[[{rows}, {h}], [{h}, {h}], []]")
            };
            self.bytes(b", \"Input Dims\": ");
            self.bytes(dims.as_bytes());
            self.bytes(b", \"Input type\": [\"c10::BFloat16\", \"c10::BFloat16\", \"\"]");
        }
        self.args_close();
    }

    fn flow(&mut self, start: bool, id: u64, pid: u64, tid: u64, at: i64) {
        self.open_event();
        self.bytes(if start {
            b"\"ph\": \"s\", \"id\": "
        } else {
            b"\"ph\": \"f\", \"id\": "
        });
        self.n(id);
        self.bytes(b", \"pid\": ");
        self.n(pid);
        self.bytes(b", \"tid\": ");
        self.n(tid);
        self.bytes(b", \"ts\": ");
        self.ts(at);
        self.bytes(b",\n    \"cat\": \"ac2g\", \"name\": \"ac2g\"");
        if !start {
            self.bytes(b", \"bp\": \"e\"");
        }
        self.close_event();
    }

    fn meta(&mut self, what: &str, pid: u64, tid: u64, at: i64, key: &str, value: MetaVal<'_>) {
        self.open_event();
        self.bytes(b"\"name\": ");
        self.str(what);
        self.bytes(b", \"ph\": \"M\", \"ts\": ");
        self.ts(at);
        self.bytes(b", \"pid\": ");
        self.n(pid);
        self.bytes(b", \"tid\": ");
        self.n(tid);
        self.bytes(b",\n    \"args\": {\n      ");
        self.str(key);
        self.bytes(b": ");
        match value {
            MetaVal::Str(s) => self.str(s),
            MetaVal::Num(v) => self.n(v),
        }
        self.args_close();
    }

    /// Header keys and the metadata events; `start` is the profiler's start on the shared clock.
    pub(crate) fn begin(&mut self, start: i64, layout: &Layout) -> Result<()> {
        if self.info.cpu_only {
            self.bytes(
                b"{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [],\n  \"distributedInfo\": ",
            );
        } else {
            self.bytes(b"{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [\n");
            let n = crate::synth::layout::GPUS_PER_NODE;
            for id in 0..n {
                let entry = cat::DEVICE_PROPERTIES.replace("{id}", &id.to_string());
                self.bytes(entry.as_bytes());
                self.bytes(if id + 1 < n { b",\n" } else { b"\n" });
            }
            self.bytes(b"  ],\n  \"distributedInfo\": ");
        }
        let di = self.info.distributed_info.clone();
        self.bytes(di.as_bytes());
        self.bytes(b",\n");
        if self.info.base_first {
            self.trailing_time_keys();
            self.bytes(b",\n");
        }
        self.bytes(b"  \"traceEvents\": [");

        let (pid, dev) = (self.info.pid, u64::from(self.info.device));
        let pname = self.info.process_name.clone();
        self.meta("process_name", pid, 0, start, "name", MetaVal::Str(&pname));
        self.meta(
            "process_labels",
            pid,
            0,
            start,
            "labels",
            MetaVal::Str("CPU"),
        );
        self.meta(
            "process_sort_index",
            pid,
            0,
            start,
            "sort_index",
            MetaVal::Num(pid),
        );
        if self.info.cpu_only {
            self.cpu_threads(start, layout);
            self.first_ns = start;
            return self.maybe_flush();
        }
        self.meta("process_name", dev, 0, start, "name", MetaVal::Str(&pname));
        let label = format!("GPU {dev}");
        self.meta(
            "process_labels",
            dev,
            0,
            start,
            "labels",
            MetaVal::Str(&label),
        );
        self.meta(
            "process_sort_index",
            dev,
            0,
            start,
            "sort_index",
            MetaVal::Num(16_777_216 + dev),
        );
        let short: String = pname.chars().take(15).collect();
        let tname = format!("thread {pid} ({short})");
        self.meta("thread_name", pid, pid, start, "name", MetaVal::Str(&tname));
        self.meta(
            "thread_sort_index",
            pid,
            pid,
            start,
            "sort_index",
            MetaVal::Num(pid),
        );
        let mut streams = vec![STREAM_COMPUTE];
        if layout.tp > 1 {
            streams.push(STREAM_NCCL);
        }
        if layout.pp > 1 {
            streams.push(STREAM_P2P);
        }
        if self.info.side_stream {
            streams.push(STREAM_SIDE);
        }
        for s in streams {
            let s = u64::from(s);
            let name = format!("stream {s} ");
            self.meta("thread_name", dev, s, start, "name", MetaVal::Str(&name));
            self.meta(
                "thread_sort_index",
                dev,
                s,
                start,
                "sort_index",
                MetaVal::Num(s),
            );
        }
        self.first_ns = start;
        self.maybe_flush()
    }

    fn trailing_time_keys(&mut self) {
        self.bytes(b"  \"displayTimeUnit\": \"ms\",\n  \"baseTimeNanoseconds\": ");
        let base = self.info.base_ns;
        self.bytes(base.to_string().as_bytes());
    }

    /// Kineto's closing events and trailing keys; renames the file into place.
    pub(crate) fn finish(mut self) -> Result<Finished> {
        let (start, end) = (self.first_ns, self.last_ns.max(self.first_ns) + 35_000);
        self.open_event();
        self.bytes(b"\"ph\": \"X\", \"cat\": \"Trace\", \"ts\": ");
        self.ts(start);
        self.bytes(b", \"dur\": ");
        us3(&mut self.buf, end - start - 20_000);
        self.bytes(b",\n    \"pid\": \"Spans\", \"tid\": \"PyTorch Profiler\",\n    \"name\": \"PyTorch Profiler (0)\",\n    \"args\": {\n      \"Op count\": 0");
        self.args_close();
        self.open_event();
        self.bytes(b"\"name\": \"process_sort_index\", \"ph\": \"M\", \"ts\": ");
        self.ts(start);
        self.bytes(b",\n    \"pid\": \"Spans\", \"tid\": 0,\n    \"args\": {\n      \"sort_index\": 536870912");
        self.args_close();
        self.open_event();
        self.bytes(b"\"name\": \"Iteration Start: PyTorch Profiler\", \"ph\": \"i\", \"s\": \"g\",\n    \"pid\": \"Traces\", \"tid\": \"Trace PyTorch Profiler\", \"ts\": ");
        self.ts(start);
        self.close_event();
        self.open_event();
        self.bytes(b"\"name\": \"Record Window End\", \"ph\": \"i\", \"s\": \"g\",\n    \"pid\": \"\", \"tid\": \"\", \"ts\": ");
        self.ts(end);
        self.close_event();
        self.bytes(b"\n  ],\n  \"traceName\": ");
        let tn = self.info.trace_name.clone();
        self.str(&tn);
        if !self.info.base_first {
            self.bytes(b",\n");
            self.trailing_time_keys();
        }
        self.bytes(b"\n}\n");
        self.flush_buf()?;
        if let Some(sink) = self.sink.take() {
            sink.finish()
                .with_context(|| format!("writing {}", self.tmp.display()))?;
        }
        fs::rename(&self.tmp, &self.path).with_context(|| {
            format!("renaming {} to {}", self.tmp.display(), self.path.display())
        })?;
        self.done = true;
        let size = fs::metadata(&self.path).map(|m| m.len()).unwrap_or(0);
        Ok(Finished {
            path: self.path.clone(),
            json_bytes: self.json_bytes,
            file_bytes: size,
            events: self.events,
        })
    }
}

/// A file in place.
pub(crate) struct Finished {
    pub(crate) path: PathBuf,
    pub(crate) json_bytes: u64,
    pub(crate) file_bytes: u64,
    pub(crate) events: u64,
}

enum MetaVal<'a> {
    Str(&'a str),
    Num(u64),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn microseconds_with_three_digits() {
        let mut b = Vec::new();
        us3(&mut b, 4_355_656_646_250_453);
        b.push(b' ');
        us3(&mut b, 5);
        b.push(b' ');
        us3(&mut b, 12_000);
        b.push(b' ');
        us3(&mut b, -3);
        assert_eq!(
            String::from_utf8(b).unwrap(),
            "4355656646250.453 0.005 12.000 0.000"
        );
    }
}
