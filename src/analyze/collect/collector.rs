//! The one-pass collector: the hot path. It sees every event of one rank once, through the
//! reader's callback, and keeps only what the analysis needs:
//!
//! - per-name aggregates of GPU ops (kernels, memcpy, memset) and of CPU ops, in hash maps
//!   keyed by the raw name (each name classified once, when first seen);
//! - compact GPU intervals (start, end, correlation, class, kind) for the busy unions and the
//!   per-step figures, in a [`Spool`] (at most 1 MiB in memory, the rest in a temporary file,
//!   folded by [`super::sweep`]), and CPU-op totals and intervals (32 bytes) for CPU-only
//!   traces (dropped, and no longer collected, from the first GPU op on);
//! - the launch time of each kernel launch (correlation → `ts`, spooled too), to put a kernel
//!   in the step that launched it;
//! - step annotations, batch annotations (SGLang `step[…]`, vLLM `execute_new_…`, see
//!   [`super::work`]), collective kernels (or `c10d::` ops) and per-stream totals;
//! - the work figures a trace without batch annotations has: the token dimension of CPU GEMM
//!   ops' `Input Dims` (only looked up for the few GEMM op names) and `In msg nelems` of
//!   `record_param_comms` ops (CPU) and of communication kernels (kept in the op's interval).
//!
//! - per device, the memory figures of `[memory]` / `[OutOfMemory]` instant events
//!   ([`super::memory`]).
//!
//! Nothing else is kept: no event text, no `args`.

use std::collections::HashMap;
use std::sync::LazyLock;

use regex::Regex;

use super::memory::MemoryTally;
use super::names::{
    is_gemm, is_gloo_range, is_graph_launch, is_launch, is_moe, is_stream_wait, is_wait,
    COMM_SIZE_OP, CPU_OP, CUDA_DRIVER, CUDA_RUNTIME, GPU_MEMCPY, GPU_MEMSET, GPU_USER_ANNOTATION,
    KERNEL, PYTHON_FUNCTION, USER_ANNOTATION,
};
use super::ops::{short_name, Agg, OpKind};
use super::spill::Spool;
use super::steps::Mark;
use super::work::{gemm_tokens, parse, WorkMark};
use crate::analyze::classes::Classifier;
use crate::trace::read::args::ArgKey;
use crate::trace::read::json::Kind;
use crate::trace::read::memo::Memo;
use crate::trace::read::steps::{mark_of_name, StepMark};
use crate::trace::{Event, Id, Str, Val};

/// A hash map with rustc's fast, non-cryptographic hasher, for the per-event name lookups.
pub(crate) type FxMap<K, V> = HashMap<K, V, rustc_hash::FxBuildHasher>;

/// One GPU op on the timeline (times as in the file, not yet shifted by the base time).
#[derive(Debug, Clone, Copy)]
pub(crate) struct GpuIv {
    pub(crate) start: i64,
    pub(crate) end: i64,
    /// The launch's correlation id (-1: none); later reused for the step index.
    pub(crate) corr: i64,
    pub(crate) class: u8,
    pub(crate) kind: OpKind,
    /// `In msg nelems` of a communication kernel (saturated at `u32::MAX`), else 0.
    pub(crate) nelems: u32,
}

/// One CPU op on the timeline.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CpuIv {
    pub(crate) start: i64,
    pub(crate) end: i64,
    /// The thread (`tid`; -1 when it is not an integer).
    pub(crate) tid: i64,
    pub(crate) class: u8,
}

/// One collective: a communication kernel (GPU) or a `c10d::` op (CPU).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct CollEv {
    /// Index into [`Collector::coll_keys`]: `pg` + stream for GPU, op name for CPU.
    pub(crate) key: u32,
    /// Index into [`Collector::coll_names`].
    pub(crate) name: u32,
    /// Arrival order on the rank (orders collectives with equal times as the file did).
    pub(crate) seq: u32,
    pub(crate) start: i64,
    pub(crate) end: i64,
    /// The segment before it on its rank ([`super::segments`]): the end of the rank's
    /// previous collective ([`super::segments::NO_PREV`] for the first), its compute within
    /// the segment and the part before the step began; filled after the pass.
    pub(crate) prev_end: i64,
    pub(crate) busy: i64,
    pub(crate) pre: i64,
    /// The data it moves, bytes (0: unknown): the larger of `In msg nelems` and `Out msg
    /// nelems` (an all-gather's output, a reduce-scatter's input: NCCL's message size `S`)
    /// times the `dtype`'s size.
    pub(crate) bytes: u64,
    /// The rank's first collective in a step: its segment starts at that step's start
    /// (`prev_end`), not at an earlier collective's end; the reduce stage puts the members'
    /// segments on a common start (the earliest member's step start), so that a rank that
    /// begins the step late is charged at the step's first collective.
    pub(crate) from_step: bool,
    /// How long the rank's compute waited for it, ns, when the trace says ([`super::overlap`]);
    /// [`BLOCKING`]: the trace cannot tell (compute taken to have waited for all of it).
    pub(crate) waited: i64,
    /// The rank's compute ran during it ([`super::overlap`]).
    pub(crate) overlapped: bool,
}

impl CollEv {
    /// A collective as the trace records it (`key`, `name`, `seq`, its span and bytes), before
    /// the pass fills its segment and overlap.
    pub(crate) fn recorded(
        key: u32,
        name: u32,
        seq: u32,
        start: i64,
        end: i64,
        bytes: u64,
    ) -> Self {
        CollEv {
            key,
            name,
            seq,
            start,
            end,
            prev_end: 0,
            busy: 0,
            pre: 0,
            bytes,
            from_step: false,
            waited: BLOCKING,
            overlapped: false,
        }
    }
}

/// [`CollEv::waited`] of a collective the trace cannot tell about: compute is taken to have
/// waited for all of it ([`super::overlap`]).
pub(crate) const BLOCKING: i64 = -1;

/// What the collector is told to look for.
pub(crate) struct Config<'a> {
    pub(crate) classes: &'a Classifier,
    pub(crate) step_marker: Option<&'a Regex>,
    /// Records each spool of a file's own rank keeps in memory ([`super::spill::cap_for`] of
    /// the ranks read at once); a merged trace's labeled ranks keep [`Spool::CAP`].
    pub(crate) spool_cap: usize,
}

/// Everything one pass keeps about one rank.
pub(crate) struct Collector<'a> {
    /// Records each spool keeps in memory.
    cap: usize,
    cfg: &'a Config<'a>,
    /// GPU ops by raw name.
    pub(crate) gpu_ops: FxMap<Box<str>, Agg>,
    /// CPU ops by raw name.
    pub(crate) cpu_ops: FxMap<Box<str>, Agg>,
    pub(crate) gpu: Spool<GpuIv>,
    /// CPU ops on the timeline, needed only when the rank turns out to have no GPU op. Kineto
    /// writes every CPU op before the first GPU one, so they are spooled (bounded memory) and
    /// dropped at the first GPU op.
    pub(crate) cpu: Spool<CpuIv>,
    /// (correlation, launch ts) of kernel / memcpy / memset launches.
    pub(crate) launches: Spool<(i64, i64)>,
    pub(crate) profiler_steps: Vec<Mark>,
    pub(crate) sglang_steps: Vec<Mark>,
    pub(crate) custom_steps: Vec<Mark>,
    /// Start times of CUDA-graph launches (steps where nothing else marks them).
    pub(crate) graph_launches: Vec<i64>,
    /// Batch annotations (the work of a step).
    pub(crate) work_marks: Vec<WorkMark>,
    /// (CPU start, tokens) of GEMM ops with `Input Dims` (`record_shapes`).
    pub(crate) shapes: Spool<(i64, i64)>,
    /// (CPU start, `In msg nelems`) of `record_param_comms` ops.
    pub(crate) cpu_nelems: Spool<(i64, i64)>,
    /// Tokens routed to the experts: the token dimension of `…fused_moe…` CPU ops' `Input Dims`.
    pub(crate) moe_rows: Option<u64>,
    /// Communication kernels.
    pub(crate) gpu_colls: Spool<CollEv>,
    /// `c10d::` ops, for CPU-only traces (dropped, and no longer collected, from the first GPU
    /// op on, as the CPU intervals are).
    pub(crate) cpu_colls: Spool<CollEv>,
    /// Python's `work.wait()` calls and gloo's own ranges, for CPU-only traces: where a gloo
    /// collective's thread waits for the others ([`super::names::is_wait`]), each with its
    /// thread (class: communication).
    pub(crate) cpu_waits: Spool<CpuIv>,
    /// `cudaStreamWaitEvent` calls seen: the trace records what waited for what, and the
    /// GPU sweep keeps the compute kernels for [`super::overlap`] (none kept when 0).
    pub(crate) stream_waits: u64,
    pub(crate) coll_keys: Vec<String>,
    pub(crate) coll_names: Vec<String>,
    coll_key_ids: FxMap<String, u32>,
    coll_name_ids: FxMap<String, u32>,
    /// stream -> (sum of durations, ops)
    pub(crate) streams: FxMap<i64, (i64, u64)>,
    /// Device index (pid) of the first GPU op.
    pub(crate) gpu_pid: Option<i64>,
    /// Events seen.
    pub(crate) events: u64,
    /// `[memory]` and `[OutOfMemory]` instant events, per device ([`super::memory`]).
    pub(crate) memory: MemoryTally,
    /// The `args` layouts seen, for the lookups the search leaves to the walk
    /// ([`Event::arg_found`]).
    args_memo: Memo,
    /// The last GPU collective's ids and what they were made from ([`Collector::coll_ids`]).
    last_coll: Option<LastColl>,
}

/// What the ids of a GPU collective are made from, as written (`Collective name`'s and
/// `Process Group Name`'s text, the kernel's raw name when there is no `Collective name`),
/// and the ids: a rank's collectives come in runs of the same group, stream and name, and the
/// next one of a run needs no key built, allocated or hashed.
struct LastColl {
    stream: i64,
    peer: Option<(bool, i64)>,
    pg: Option<(Kind, String)>,
    coll: Option<(Kind, String)>,
    kernel: String,
    ids: (u32, u32),
}

/// A value's kind and text, as written, for [`LastColl`]'s compare.
fn same_val(kept: &Option<(Kind, String)>, v: Option<Val<'_>>) -> bool {
    match (kept, v) {
        (None, None) => true,
        (Some((k, t)), Some(v)) => *k == v.kind && *t == v.text,
        _ => false,
    }
}

/// The `args` keys a GPU op reads: its correlation, its stream (when `tid` is not a number),
/// and for a collective its size, process group, name, output size and element type.
const GPU_OP_KEYS: [&str; 7] = [
    "correlation",
    "In msg nelems",
    "Process Group Name",
    "Collective name",
    "Out msg nelems",
    "dtype",
    "stream",
];

/// The `args` keys a send's or receive's kernel is read for too: its peer (a rank of its
/// group) and the group's ranks ([`super::p2p`]).
static P2P_KEYS: LazyLock<[ArgKey; 3]> =
    LazyLock::new(|| ["Dst Rank", "Src Rank", "Process Group Ranks"].map(ArgKey::new));

/// The keys of [`GPU_OP_KEYS`] and the CPU ops' keys, found by searching `args` for them
/// ([`Event::arg_found`]); `OP_KEYS[0]` and `[6]` are a GPU op's `correlation` and `stream`
/// (last, so that a collective whose `tid` is its stream searches for the first six only).
static OP_KEYS: LazyLock<[ArgKey; 7]> = LazyLock::new(|| GPU_OP_KEYS.map(ArgKey::new));
static INPUT_DIMS: LazyLock<ArgKey> = LazyLock::new(|| ArgKey::new(super::names::INPUT_DIMS));
static IN_NELEMS: LazyLock<ArgKey> = LazyLock::new(|| ArgKey::new(super::names::IN_NELEMS));
/// `record_param_comms`' `Collective name` (a GPU op's `OP_KEYS[3]`).
static COLLECTIVE_NAME: LazyLock<ArgKey> = LazyLock::new(|| ArgKey::new(GPU_OP_KEYS[3]));
static CONCRETE_INPUTS: LazyLock<ArgKey> =
    LazyLock::new(|| ArgKey::new(super::names::CONCRETE_INPUTS));

/// The id of `s` in `list` (its index), added to both when new.
pub(crate) fn id_of(map: &mut FxMap<String, u32>, list: &mut Vec<String>, s: &str) -> u32 {
    if let Some(&i) = map.get(s) {
        return i;
    }
    let i = list.len() as u32;
    list.push(s.to_string());
    map.insert(s.to_string(), i);
    i
}

impl<'a> Collector<'a> {
    /// The collector of a file's own rank: spools of `cfg.spool_cap` records.
    pub(crate) fn new(cfg: &'a Config<'a>) -> Self {
        Self::holding(cfg, cfg.spool_cap)
    }

    /// The collector of one labeled rank of a merged trace: a file may hold hundreds, so their
    /// spools keep [`Spool::CAP`] records each.
    pub(crate) fn labeled(cfg: &'a Config<'a>) -> Self {
        Self::holding(cfg, Spool::<GpuIv>::CAP)
    }

    fn holding(cfg: &'a Config<'a>, cap: usize) -> Self {
        Collector {
            cap,
            cfg,
            gpu_ops: FxMap::default(),
            cpu_ops: FxMap::default(),
            gpu: Spool::holding(cap),
            cpu: Spool::holding(cap),
            launches: Spool::holding(cap),
            profiler_steps: Vec::new(),
            sglang_steps: Vec::new(),
            custom_steps: Vec::new(),
            graph_launches: Vec::new(),
            work_marks: Vec::new(),
            shapes: Spool::holding(cap),
            cpu_nelems: Spool::holding(cap),
            moe_rows: None,
            gpu_colls: Spool::holding(cap),
            cpu_colls: Spool::holding(cap),
            cpu_waits: Spool::holding(cap),
            stream_waits: 0,
            coll_keys: Vec::new(),
            coll_names: Vec::new(),
            coll_key_ids: FxMap::default(),
            coll_name_ids: FxMap::default(),
            streams: FxMap::default(),
            gpu_pid: None,
            events: 0,
            memory: MemoryTally::default(),
            args_memo: Memo::default(),
            last_coll: None,
        }
    }

    /// Adds one duration to the aggregate of a name (created, and its decoded name classified,
    /// when first seen); returns the name's class. One hash lookup on the common hit.
    #[inline]
    fn add(
        map: &mut FxMap<Box<str>, Agg>,
        classes: &Classifier,
        name: Str<'_>,
        kind: OpKind,
        dur: i64,
    ) -> u8 {
        if let Some(a) = map.get_mut(name.raw()) {
            a.add(dur);
            return a.class;
        }
        let class = match kind {
            OpKind::Memcpy | OpKind::Memset => classes.memory(),
            _ => classes.classify(&name.get()),
        };
        let mut a = Agg::new(class, kind);
        a.add(dur);
        map.insert(name.raw().into(), a);
        class
    }

    /// A CPU op: its time (in a CPU-only trace), what it says of the step's work, a
    /// collective's record (gloo), or a `ProfilerStep#` mark.
    #[inline]
    fn cpu_op(&mut self, ev: &Event<'_>, start: i64, dur: i64) {
        // CPU op totals and intervals only matter for CPU-only traces: none are kept
        // once a GPU op is seen.
        if self.gpu.is_empty() {
            let class = Self::add(
                &mut self.cpu_ops,
                self.cfg.classes,
                ev.name,
                OpKind::Cpu,
                dur,
            );
            self.cpu.push(CpuIv {
                start,
                end: start + dur,
                tid: ev.tid.as_int().unwrap_or(-1),
                class,
            });
        }
        let raw = ev.name.raw();
        self.cpu_work_args(ev, raw, start);
        if raw.starts_with("c10d::") {
            self.cpu_collective(ev, start, dur);
        } else if self.cfg.step_marker.is_none()
            && matches!(mark_of_name(raw), Some(StepMark::Profiler(_)))
        {
            self.mark(ev, start, dur, false);
        }
    }

    /// A GEMM's tokens, a fused MoE op's rows, `record_param_comms`' message elements.
    fn cpu_work_args(&mut self, ev: &Event<'_>, raw: &str, start: i64) {
        if is_gemm(raw.as_bytes()) {
            if let Some(m) = ev
                .arg_found(&INPUT_DIMS, &mut self.args_memo)
                .and_then(|v| gemm_tokens(v.text))
            {
                self.shapes.push((start, m.min(i64::MAX as u64) as i64));
            }
        } else if is_moe(raw.as_bytes()) {
            if let Some(m) = ev
                .arg_found(&INPUT_DIMS, &mut self.args_memo)
                .and_then(|v| gemm_tokens(v.text))
            {
                self.moe_rows = Some(self.moe_rows.unwrap_or(0).saturating_add(m));
            }
        } else if raw == COMM_SIZE_OP {
            if let Some(n) = ev
                .arg_found(&IN_NELEMS, &mut self.args_memo)
                .and_then(|v| v.as_i64())
            {
                // Sends and receives are no measure of the work (as for kernels).
                let p2p = ev
                    .arg_found(&COLLECTIVE_NAME, &mut self.args_memo)
                    .is_some_and(|c| is_p2p(c.text));
                if !p2p {
                    self.cpu_nelems.push((start, n.max(0)));
                }
            }
        }
    }

    /// A `c10d::` op of a CPU-only trace: a collective (or one end of a transfer, keyed by its
    /// peer).
    fn cpu_collective(&mut self, ev: &Event<'_>, start: i64, dur: i64) {
        if self.gpu.is_empty() {
            let name = ev.name.get();
            // A send or receive is keyed by its peer too ([`super::p2p`]).
            let peer = super::p2p::direction(&name)
                .and_then(|_| ev.arg_found(&CONCRETE_INPUTS, &mut self.args_memo))
                .and_then(|v| super::p2p::peer(v.text));
            let key = match peer {
                Some(p) => {
                    let k = super::p2p::key(&name, p);
                    id_of(&mut self.coll_key_ids, &mut self.coll_keys, &k)
                }
                None => id_of(&mut self.coll_key_ids, &mut self.coll_keys, &name),
            };
            let nid = id_of(&mut self.coll_name_ids, &mut self.coll_names, &name);
            let seq = self.cpu_colls.len() as u32;
            self.cpu_colls
                .push(CollEv::recorded(key, nid, seq, start, start + dur, 0));
        }
    }

    /// Takes one event: only those [`WANT`](super::names::WANT) names change anything.
    #[inline]
    pub(crate) fn on_event(&mut self, ev: &Event<'_>) {
        self.events += 1;
        if ev.ph != b'X' {
            if ev.ph == b'i' {
                self.memory.on_instant(ev, &mut self.args_memo);
            }
            return;
        }
        let (Some(ts), Some(dur)) = (ev.ts, ev.dur) else {
            return;
        };
        let (start, dur) = (ts.get(), dur.get().max(0));
        let cat = ev.cat.raw();
        match cat {
            KERNEL => self.gpu_op(ev, start, dur, OpKind::Kernel),
            GPU_MEMCPY => self.gpu_op(ev, start, dur, OpKind::Memcpy),
            GPU_MEMSET => self.gpu_op(ev, start, dur, OpKind::Memset),
            CUDA_RUNTIME | CUDA_DRIVER if is_launch(ev.name.raw().as_bytes()) => {
                if let Some(c) = ev.arg_i64(&OP_KEYS[0], &mut self.args_memo) {
                    self.launches.push((c, start));
                }
                if is_graph_launch(ev.name.raw().as_bytes()) {
                    self.graph_launches.push(start);
                }
            }
            CUDA_RUNTIME if is_stream_wait(ev.name.raw().as_bytes()) => self.stream_waits += 1,
            CPU_OP => self.cpu_op(ev, start, dur),
            USER_ANNOTATION => {
                if self.gpu.is_empty() && is_gloo_range(ev.name.raw().as_bytes()) {
                    self.wait(ev, start, dur);
                }
                self.mark(ev, start, dur, false)
            }
            GPU_USER_ANNOTATION => self.mark(ev, start, dur, true),
            PYTHON_FUNCTION if self.gpu.is_empty() && is_wait(ev.name.raw().as_bytes()) => {
                self.wait(ev, start, dur);
            }
            _ => {}
        }
    }

    fn wait(&mut self, ev: &Event<'_>, start: i64, dur: i64) {
        self.cpu_waits.push(CpuIv {
            start,
            end: start + dur,
            tid: ev.tid.as_int().unwrap_or(-1),
            class: self.cfg.classes.comm(),
        });
    }

    fn mark(&mut self, ev: &Event<'_>, start: i64, dur: i64, on_gpu: bool) {
        let raw = ev.name.raw();
        if raw.starts_with("step[") || raw.starts_with("execute_") {
            if let Some((source, batch)) = parse(raw) {
                self.work_marks.push(WorkMark {
                    start,
                    dur,
                    on_gpu,
                    source,
                    batch,
                });
            }
        }
        let mk = |number| Mark {
            start,
            dur,
            name: ev.name.get().into_owned(),
            number,
            on_gpu,
            begin: None,
        };
        if let Some(re) = self.cfg.step_marker {
            if re.is_match(&ev.name.get()) {
                self.custom_steps.push(mk(None));
            }
            return;
        }
        match mark_of_name(raw) {
            Some(StepMark::Profiler(n)) => self.profiler_steps.push(mk(n.map(|n| n as i64))),
            Some(StepMark::Forward) => self.sglang_steps.push(mk(None)),
            None => {}
        }
    }

    #[inline]
    /// A GPU collective's key (process group and stream) and name ids; the last ones again
    /// when they are made from the same values ([`LastColl`]).
    fn coll_ids(
        &mut self,
        ev: &Event<'_>,
        stream: i64,
        pg: Option<Val<'_>>,
        coll: Option<Val<'_>>,
        peer: Option<(bool, i64)>,
    ) -> (u32, u32) {
        if let Some(last) = &self.last_coll {
            if last.stream == stream
                && last.peer == peer
                && same_val(&last.pg, pg)
                && same_val(&last.coll, coll)
                && (coll.is_some() || last.kernel == ev.name.raw())
            {
                return last.ids;
            }
        }
        let pg_name = pg
            .and_then(|v| v.as_str())
            .map(|s| s.get().into_owned())
            .unwrap_or_default();
        let name = coll
            .and_then(|v| v.as_str())
            .map(|s| s.get().into_owned())
            .unwrap_or_else(|| short_name(&ev.name.get()));
        // A send or receive with its peer is keyed by it, as a gloo one ([`super::p2p`]).
        let key_text = match peer {
            Some((send, p)) => super::p2p::gpu_key(send, p),
            None => format!("{pg_name}\u{1f}{stream}"),
        };
        let key = id_of(&mut self.coll_key_ids, &mut self.coll_keys, &key_text);
        let nid = id_of(&mut self.coll_name_ids, &mut self.coll_names, &name);
        let owned = |v: Option<Val<'_>>| v.map(|v| (v.kind, v.text.to_string()));
        self.last_coll = Some(LastColl {
            stream,
            peer,
            pg: owned(pg),
            coll: owned(coll),
            kernel: if coll.is_some() {
                String::new()
            } else {
                ev.name.raw().to_string()
            },
            ids: (key, nid),
        });
        (key, nid)
    }

    fn gpu_op(&mut self, ev: &Event<'_>, start: i64, dur: i64, kind: OpKind) {
        let classes = self.cfg.classes;
        let class = Self::add(&mut self.gpu_ops, classes, ev.name, kind, dur);
        let is_comm = kind == OpKind::Kernel && class == classes.comm();
        // A collective's keys in one walk of `args`; other ops look up one or two. `stream`
        // only where `tid` is not the stream.
        let mut v: [Option<Val<'_>>; 7] = [None; 7];
        let keys = if matches!(ev.tid, Id::Int(_)) { 6 } else { 7 };
        let (corr, stream_arg) = if is_comm {
            ev.arg_found_all(&OP_KEYS[..keys], &mut self.args_memo, &mut v[..keys]);
            (v[0].and_then(|v| v.as_i64()), v[6].and_then(|v| v.as_i64()))
        } else {
            let corr = ev.arg_i64(&OP_KEYS[0], &mut self.args_memo);
            let stream = (keys == 7)
                .then(|| ev.arg_i64(&OP_KEYS[6], &mut self.args_memo))
                .flatten();
            (corr, stream)
        };
        let [_, nelems, pg, coll, out_nelems, dtype, _] = v;
        let corr = corr.unwrap_or(-1);
        let stream = match ev.tid {
            Id::Int(v) => v,
            _ => stream_arg.unwrap_or(-1),
        };
        if self.gpu.is_empty() {
            self.gpu_pid = ev.pid.as_int();
            self.cpu = Spool::holding(self.cap);
            self.cpu_ops = FxMap::default();
            self.cpu_colls = Spool::holding(self.cap);
            self.cpu_waits = Spool::holding(self.cap);
        }
        let s = self.streams.entry(stream).or_insert((0, 0));
        s.0 += dur;
        s.1 += 1;
        let in_n = nelems.and_then(|v| v.as_i64()).unwrap_or(0).max(0);
        let p2p = is_comm && coll.is_some_and(|c| is_p2p(c.text));
        // A pipeline stage's sends and receives move what its place in the pipeline makes
        // them move (a middle stage twice an end stage's), not its share of the work: only
        // collectives count as the rank's message elements.
        let nelems = if p2p {
            0
        } else {
            in_n.min(i64::from(u32::MAX)) as u32
        };
        let iv = GpuIv {
            start,
            end: start + dur,
            corr,
            class,
            kind,
            nelems,
        };
        self.gpu.push(iv);
        if is_comm {
            let peer = if p2p {
                let mut arg = |i: usize| ev.arg_found(&P2P_KEYS[i], &mut self.args_memo);
                let (dst, src, ranks) = (arg(0), arg(1), arg(2));
                super::p2p::gpu_peer(
                    dst.and_then(|v| v.as_i64()),
                    src.and_then(|v| v.as_i64()),
                    ranks.map(|v| v.text),
                )
            } else {
                None
            };
            let (key, nid) = self.coll_ids(ev, stream, pg, coll, peer);
            let out_n = out_nelems.and_then(|v| v.as_i64()).unwrap_or(0).max(0);
            let size = dtype
                .and_then(|v| v.as_str())
                .map_or(0, |d| dtype_bytes(&d.get()));
            let bytes = (in_n.max(out_n) as u64).saturating_mul(size);
            let seq = self.gpu_colls.len() as u32;
            self.gpu_colls
                .push(CollEv::recorded(key, nid, seq, start, start + dur, bytes));
        }
    }
}

/// Whether a collective's `Collective name` is a point-to-point transfer.
fn is_p2p(name: &str) -> bool {
    matches!(name, "send" | "recv")
}

/// The size of one element of a collective's `dtype` as Kineto writes it (torch's scalar type
/// names: `Float`, `BFloat16`, `Half`, `Float8_e4m3fn`, …), bytes; 0 when unknown.
pub(crate) fn dtype_bytes(d: &str) -> u64 {
    match d {
        "Double" | "Long" | "ComplexFloat" | "UInt64" => 8,
        "Float" | "Int" | "UInt32" | "ComplexHalf" => 4,
        "BFloat16" | "Half" | "Short" | "UInt16" => 2,
        "Byte" | "Char" | "Bool" | "QInt8" | "QUInt8" => 1,
        _ if d.starts_with("Float8") => 1,
        "ComplexDouble" => 16,
        _ => 0,
    }
}
