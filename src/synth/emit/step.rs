//! One step of one rank as Kineto writes it: the step's annotations and CPU ops (with their
//! `Input Dims` under `record_shapes`), the CUDA launch calls and their flow pairs, and the GPU
//! activities (kernels, collectives with their message sizes, copies) on their streams.

use anyhow::Result;

use super::*;
use crate::synth::model::Op;

/// The annotation torch writes around a data-loader `__next__` (a planted late start).
pub(super) const LOADER: &str = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__";

impl TraceWriter {
    /// All events of one step: its annotations, then each op ([`Self::op`]), then the GPU
    /// annotation over the step's GPU work.
    pub(crate) fn step(&mut self, s: &RankStep, layout: &Layout) -> Result<()> {
        if self.info.cpu_only {
            return self.cpu_step(s, layout);
        }
        let ann = if self.info.vllm {
            s.kind.vllm_annotation()
        } else {
            s.kind.annotation()
        };
        if let Some((at, dur, ext)) = s.loader {
            // A planted late start: the data loader holds the CPU before the step begins.
            self.cpu_span("user_annotation", LOADER, at, dur, ext);
        }
        let pname = format!("ProfilerStep#{}", s.index);
        self.cpu_span(
            "user_annotation",
            &pname,
            s.cpu_start,
            s.cpu_end - s.cpu_start,
            s.step_ext,
        );
        let annotate = self.info.annotations;
        if annotate {
            self.cpu_span(
                "user_annotation",
                &ann,
                s.fwd_start,
                s.fwd_end - s.fwd_start,
                s.fwd_ext,
            );
        }
        let (mut gpu_first, mut gpu_last) = (i64::MAX, i64::MIN);
        for (op, rec) in s.ops.iter().zip(&s.recs) {
            if let Some((start, end)) = self.op(op, rec, layout) {
                gpu_first = gpu_first.min(start);
                gpu_last = gpu_last.max(end);
            }
        }
        if gpu_first < gpu_last && annotate {
            // Kineto starts GPU annotations 1 ns early and ends them 1 ns late.
            let dev = u64::from(self.info.device);
            self.x_head(
                "gpu_user_annotation",
                &ann,
                dev,
                u64::from(STREAM_COMPUTE),
                gpu_first - 1,
                gpu_last - gpu_first + 2,
            );
            self.args_open();
            self.bytes(b"\"External id\": ");
            self.n(s.fwd_ext);
            self.args_close();
        }
        self.memory_step(s);
        self.last_ns = self.last_ns.max(s.cpu_end);
        self.maybe_flush()
    }

    /// One op's events: its CPU op (and inner op), its CUDA call, and its GPU activity with
    /// the flow between them; the GPU activity's start and end, if it has one.
    fn op(&mut self, op: &Op, rec: &Rec, layout: &Layout) -> Option<(i64, i64)> {
        self.cpu_span_dims(
            "cpu_op",
            op.cpu,
            rec.cpu_start,
            rec.cpu_dur,
            rec.ext,
            op.rows,
        );
        let mut launch_ext = rec.ext;
        if let Some(inner) = op.inner {
            launch_ext += 1;
            let start = rec.cpu_start + (rec.rt_start - rec.cpu_start) / 2;
            let end = rec.rt_start
                + rec.rt_dur
                + (rec.cpu_start + rec.cpu_dur - rec.rt_start - rec.rt_dur) / 2;
            self.cpu_span_dims("cpu_op", inner, start, end - start, launch_ext, op.rows);
        }
        if matches!(op.gpu, Gpu::Host) {
            return None;
        }
        let pid = self.info.pid;
        self.x_head(
            op.call.cat,
            op.call.name,
            pid,
            pid,
            rec.rt_start,
            rec.rt_dur,
        );
        self.args_open();
        self.bytes(b"\"External id\": ");
        self.n(launch_ext);
        self.bytes(b", \"cbid\": ");
        self.n(u64::from(op.call.cbid));
        self.bytes(b", \"correlation\": ");
        self.n(rec.corr);
        self.args_close();
        if matches!(op.gpu, Gpu::Sync | Gpu::WaitSide) {
            return None;
        }
        let stream = match op.gpu {
            Gpu::Coll(c) if c.kind == CollKind::AllReduce => STREAM_NCCL,
            Gpu::Coll(_) => STREAM_P2P,
            Gpu::SideColl(_) | Gpu::SideCopy { .. } => STREAM_SIDE,
            _ => STREAM_COMPUTE,
        };
        if matches!(op.gpu, Gpu::SideColl(_)) {
            // The collective's end, recorded for the compute stream to wait on.
            let at = rec.rt_start + rec.rt_dur + 200;
            let c = cat::EVENT_RECORD;
            self.x_head(c.cat, c.name, pid, pid, at, 900);
            self.args_open();
            self.bytes(b"\"cbid\": ");
            self.n(u64::from(c.cbid));
            self.args_close();
        }
        self.flow(true, rec.corr, pid, pid, rec.rt_start);
        self.gpu_activity(op.gpu, rec, launch_ext, stream, layout);
        self.flow(
            false,
            rec.corr,
            u64::from(self.info.device),
            u64::from(stream),
            rec.gpu_start,
        );
        Some((rec.gpu_start, rec.gpu_start + rec.gpu_dur))
    }

    fn gpu_activity(&mut self, gpu: Gpu, rec: &Rec, ext: u64, stream: u32, layout: &Layout) {
        let dev = u64::from(self.info.device);
        let common = |w: &mut Self| {
            w.bytes(b"\"External id\": ");
            w.n(ext);
        };
        let ids = |w: &mut Self| {
            w.bytes(b", \"device\": ");
            w.n(dev);
            w.bytes(b", \"context\": 1, \"stream\": ");
            w.n(u64::from(stream));
            w.bytes(b", \"correlation\": ");
            w.n(rec.corr);
        };
        match gpu {
            Gpu::Kernel(k) => {
                self.x_head(
                    "kernel",
                    k.name,
                    dev,
                    u64::from(stream),
                    rec.gpu_start,
                    rec.gpu_dur,
                );
                self.args_open();
                common(self);
                self.bytes(b", \"queued\": 0");
                ids(self);
                self.launch_shape(k);
                self.args_close();
            }
            Gpu::Coll(c) | Gpu::SideColl(c) => {
                self.x_head(
                    "kernel",
                    c.spec.name,
                    dev,
                    u64::from(stream),
                    rec.gpu_start,
                    rec.gpu_dur,
                );
                self.args_open();
                common(self);
                self.bytes(b", \"queued\": 0");
                ids(self);
                self.launch_shape(c.spec);
                let g = &layout.groups()[c.pg];
                let (coll, size) = match c.kind {
                    CollKind::AllReduce => ("allreduce", g.ranks.len() as u64),
                    CollKind::AllGather => ("_allgather_base", g.ranks.len() as u64),
                    CollKind::Send => ("send", 2),
                    CollKind::Recv => ("recv", 2),
                };
                self.bytes(b", \"Collective name\": ");
                self.str(coll);
                self.bytes(b", \"In msg nelems\": ");
                self.n(c.nelems);
                self.bytes(b", \"Out msg nelems\": ");
                self.n(c.nelems);
                self.bytes(b", \"Group size\": ");
                self.n(size);
                self.bytes(b", \"dtype\": \"BFloat16\", \"In split size\": \"[]\", \"Out split size\": \"[]\", \"Process Group Name\": ");
                let (name, desc, ranks) = (g.name.clone(), g.desc, g.ranks_text());
                self.str(&name);
                self.bytes(b", \"Process Group Description\": ");
                self.str(desc);
                self.bytes(b", \"Process Group Ranks\": ");
                self.str(&ranks);
                // torch names a send's or receive's peer by its rank in the group.
                match c.kind {
                    CollKind::Send => {
                        self.bytes(b", \"Dst Rank\": ");
                        self.n(u64::from(g.rank_in(c.peer)));
                    }
                    CollKind::Recv => {
                        self.bytes(b", \"Src Rank\": ");
                        self.n(u64::from(g.rank_in(c.peer)));
                    }
                    CollKind::AllReduce | CollKind::AllGather => {}
                }
                self.bytes(b", \"seq\": ");
                self.n(rec.seq);
                self.args_close();
            }
            Gpu::Memcpy { name, bytes } => self.copy("gpu_memcpy", name, rec, bytes, ext, stream),
            Gpu::Memset { bytes } => {
                self.copy("gpu_memset", cat::MEMSET_DEVICE, rec, bytes, ext, stream)
            }
            Gpu::SideCopy { bytes } => {
                self.copy("gpu_memcpy", cat::MEMCPY_DTOD, rec, bytes, ext, stream)
            }
            Gpu::Sync | Gpu::Host | Gpu::WaitSide => {}
        }
    }

    fn launch_shape(&mut self, k: &KSpec) {
        self.bytes(b", \"registers per thread\": ");
        self.n(u64::from(k.regs));
        self.bytes(b", \"shared memory\": ");
        self.n(u64::from(k.smem));
        self.bytes(b", \"blocks per SM\": ");
        self.bytes(k.blocks_per_sm.as_bytes());
        self.bytes(b", \"warps per SM\": ");
        self.bytes(k.warps_per_sm.as_bytes());
        for (key, v) in [
            (&b", \"grid\": ["[..], k.grid),
            (&b", \"block\": ["[..], k.block),
        ] {
            self.bytes(key);
            self.n(u64::from(v[0]));
            self.bytes(b", ");
            self.n(u64::from(v[1]));
            self.bytes(b", ");
            self.n(u64::from(v[2]));
            self.bytes(b"]");
        }
        self.bytes(b", \"est. achieved occupancy %\": ");
        self.n(u64::from(k.occupancy));
    }

    fn copy(&mut self, catg: &str, name: &str, rec: &Rec, bytes: u64, ext: u64, stream: u32) {
        let dev = u64::from(self.info.device);
        self.x_head(
            catg,
            name,
            dev,
            u64::from(stream),
            rec.gpu_start,
            rec.gpu_dur,
        );
        self.args_open();
        self.bytes(b"\"External id\": ");
        self.n(ext);
        self.bytes(b", \"device\": ");
        self.n(dev);
        self.bytes(b", \"context\": 1, \"stream\": ");
        self.n(u64::from(stream));
        self.bytes(b", \"correlation\": ");
        self.n(rec.corr);
        self.bytes(b", \"bytes\": ");
        self.n(bytes);
        self.bytes(b", \"memory bandwidth (GB/s)\": ");
        let bw = bytes as f64 / rec.gpu_dur.max(1) as f64;
        self.bytes(format!("{bw:.6}").as_bytes());
        self.args_close();
    }
}
