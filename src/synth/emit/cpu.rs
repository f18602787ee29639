//! One step of one rank of a CPU-only (gloo) run as Kineto writes it (`--cpu-only`, modelled on
//! real SGLang CPU traces): the step's annotations and the model's `cpu_op`s on the main thread
//! (an op's own time is its work: there are no launches, flows or GPU activities), each
//! collective as its `c10d::` op on that thread (`Input Dims` under `record_shapes`), and gloo's
//! own `gloo:<collective>` annotation on its `pt_gloo_runloop` worker thread. A planted host
//! stall writes nothing: the thread records no op.

use anyhow::Result;

use super::*;
use crate::synth::cpu::RUNLOOP_TID;
use crate::synth::model::HIDDEN;

impl TraceWriter {
    /// The threads' metadata of a CPU-only process: the main thread and, when the world has
    /// peers, gloo's worker.
    pub(super) fn cpu_threads(&mut self, start: i64, layout: &Layout) {
        let pid = self.info.pid;
        let short: String = self.info.process_name.chars().take(15).collect();
        let mut threads = vec![(pid, format!("thread {pid} ({short})"))];
        if layout.world_size() > 1 {
            let t = pid + RUNLOOP_TID;
            threads.push((t, format!("thread {t} (pt_gloo_runloop)")));
        }
        for (tid, name) in threads {
            self.meta("thread_name", pid, tid, start, "name", MetaVal::Str(&name));
            self.meta(
                "thread_sort_index",
                pid,
                tid,
                start,
                "sort_index",
                MetaVal::Num(tid),
            );
        }
    }

    /// All events of one step of a CPU-only run.
    pub(super) fn cpu_step(&mut self, s: &RankStep, layout: &Layout) -> Result<()> {
        if let Some((at, dur, ext)) = s.loader {
            self.cpu_span("user_annotation", super::step::LOADER, at, dur, ext);
        }
        let pname = format!("ProfilerStep#{}", s.index);
        self.cpu_span(
            "user_annotation",
            &pname,
            s.cpu_start,
            s.cpu_end - s.cpu_start,
            s.step_ext,
        );
        if self.info.annotations {
            let ann = if self.info.vllm {
                s.kind.vllm_annotation()
            } else {
                s.kind.annotation()
            };
            self.cpu_span(
                "user_annotation",
                &ann,
                s.fwd_start,
                s.fwd_end - s.fwd_start,
                s.fwd_ext,
            );
        }
        for (op, rec) in s.ops.iter().zip(&s.recs) {
            match op.gpu {
                Gpu::Host => {}
                Gpu::Coll(c) => {
                    let pid = self.info.pid;
                    let dims = format!("[[[{}, {HIDDEN}]], [], [], [], [], []]", c.nelems / HIDDEN);
                    // torch's `send(tensors, pg, dstRank, tag)` / `recv_(tensors, pg,
                    // srcRank, tag)`: with record_shapes Kineto writes the peer as the third
                    // concrete input, by its rank in the group.
                    let peer = layout.groups()[c.pg].rank_in(c.peer);
                    let concrete = matches!(c.kind, CollKind::Send | CollKind::Recv)
                        .then(|| format!("[\"\", \"\", \"{peer}\", \"0\"]"));
                    self.span_on(
                        pid,
                        "cpu_op",
                        op.cpu,
                        rec.cpu_start,
                        rec.cpu_dur,
                        rec.ext,
                        &dims,
                        concrete.as_deref(),
                    );
                    // gloo's worker runs the algorithm from soon after the enqueue to the end.
                    let dur = rec.cpu_dur;
                    let lead = 5_000.min(dur / 4);
                    let tail = 2_000.min(dur / 4);
                    let name = match c.kind {
                        CollKind::AllReduce => "gloo:all_reduce",
                        CollKind::AllGather => "gloo:all_gather",
                        CollKind::Send => "gloo:send",
                        CollKind::Recv => "gloo:recv",
                    };
                    let dims = format!("[[{}, {HIDDEN}]]", c.nelems / HIDDEN);
                    self.span_on(
                        pid + RUNLOOP_TID,
                        "user_annotation",
                        name,
                        rec.cpu_start + lead,
                        dur - lead - tail,
                        rec.ext,
                        &dims,
                        None,
                    );
                }
                _ => {
                    self.cpu_span_dims(
                        "cpu_op",
                        op.cpu,
                        rec.cpu_start,
                        rec.cpu_dur,
                        rec.ext,
                        op.rows,
                    );
                    if let Some(inner) = op.inner {
                        self.cpu_span_dims(
                            "cpu_op",
                            inner,
                            rec.rt_start,
                            rec.rt_dur,
                            rec.ext + 1,
                            op.rows,
                        );
                    }
                }
            }
        }
        self.memory_step(s);
        self.last_ns = self.last_ns.max(s.cpu_end);
        self.maybe_flush()
    }

    /// A span on thread `tid` of this process with `record_shapes`' `Input Dims` (`dims`, one
    /// BFloat16 tensor list) when shapes are recorded.
    #[allow(clippy::too_many_arguments)]
    fn span_on(
        &mut self,
        tid: u64,
        cat: &str,
        name: &str,
        start: i64,
        dur: i64,
        ext: u64,
        dims: &str,
        concrete: Option<&str>,
    ) {
        let (pid, idx) = (self.info.pid, self.ev_idx);
        self.ev_idx += 1;
        self.x_head(cat, name, pid, tid, start, dur);
        self.args_open();
        self.bytes(b"\"External id\": ");
        self.n(ext);
        self.bytes(b", \"Record function id\": 0, \"Ev Idx\": ");
        self.n(idx);
        if self.info.record_shapes {
            self.bytes(b", \"Input Dims\": ");
            self.bytes(dims.as_bytes());
            self.bytes(b", \"Input type\": [\"c10::BFloat16\"]");
            if let Some(c) = concrete {
                self.bytes(b", \"Concrete Inputs\": ");
                self.bytes(c.as_bytes());
            }
        }
        self.args_close();
    }
}
