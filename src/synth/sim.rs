//! The timing model: runs one step of every rank in lock step and returns, per rank, when each
//! CPU call and each GPU activity started and how long it took.
//!
//! - A rank's CPU issues its program in order; each call launches its GPU work, which starts when
//!   both the launch is done and the GPU is free (one compute stream).
//! - A collective ends at the same instant on every member: the latest arrival plus the transfer
//!   time. Earlier arrivals wait inside their NCCL kernel, so a slow rank shows up as *longer*
//!   NCCL kernels on the others.
//! - Every kernel gets ±1.5 % jitter; the planted slow rank's kernels (of one class, or all compute
//!   classes) take `factor` × as long from `from_step` on. With `--slow-class comm` the transfers
//!   of the slow rank's collectives take `factor` × as long instead (a slow link).
//! - `--slow-link DP` makes every collective of DP replica DP's groups transfer `factor` × as
//!   long: the same rule as `--slow-class comm`, keyed by the replica instead of a member rank.
//! - A host-delay rank stalls once per step before its second collective: a
//!   `cudaStreamSynchronize` (its GPU drains), then `delay` of host work, then the launch — its
//!   GPU idles about `delay` and its peers wait that long inside NCCL.
//! - A late-start rank's CPU begins every step `delay` after the previous step's end sync (in a
//!   data-loader annotation), so it arrives last at the step's first collective.
//! - The step ends with a copy back and a stream sync: the CPU waits for its GPU.
//! - `cpu_only` ([`super::cpu`]): no GPU; each op takes its work's time on the CPU thread, a
//!   collective's `c10d::` op starts at the thread's arrival and ends with the others' (the
//!   latest arrival plus gloo's transfer), a host stall is time the thread records nothing.
//!
//! All times are nanoseconds on one shared clock (relative to the common base time).

use std::collections::BTreeMap;

use anyhow::{bail, Result};

use super::catalog::Class;
use super::cpu;
use super::layout::{Layout, Stage};
use super::model::{self, CollKind, Gpu, Op, StepKind};
use super::rng::Rng;
use super::train;
use super::SynthOptions;

/// What carries over from one step to the next, per rank.
#[derive(Clone, Debug)]
pub(crate) struct RankState {
    /// When the CPU thread is free.
    pub(crate) cpu_t: i64,
    /// When the compute stream is free.
    pub(crate) gpu_t: i64,
    /// When the side (prefetch) stream is free (`--overlap-comm`).
    side_t: i64,
    /// Side-stream collectives launched and not yet complete.
    side_pending: u32,
    pub(crate) corr: u64,
    pub(crate) ext: u64,
    /// Next NCCL `seq` per process group.
    seq: Vec<u64>,
    /// Next `seq` per point-to-point pair (src, dst).
    p2p: BTreeMap<(u32, u32), u64>,
}

impl RankState {
    pub(crate) fn new(start: i64, groups: usize, corr0: u64) -> Self {
        RankState {
            cpu_t: start,
            gpu_t: start,
            side_t: start,
            side_pending: 0,
            corr: corr0,
            ext: 1,
            seq: vec![0; groups],
            p2p: BTreeMap::new(),
        }
    }

    pub(super) fn next_ext(&mut self, n: u64) -> u64 {
        let e = self.ext;
        self.ext += n;
        e
    }
}

/// When one op ran. GPU fields are 0 for [`Gpu::Sync`].
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Rec {
    pub(crate) cpu_start: i64,
    pub(crate) cpu_dur: i64,
    pub(crate) rt_start: i64,
    pub(crate) rt_dur: i64,
    pub(crate) gpu_start: i64,
    pub(crate) gpu_dur: i64,
    pub(crate) corr: u64,
    /// External id of the outer CPU op (the inner one, if any, has `ext + 1`).
    pub(crate) ext: u64,
    /// NCCL `seq` (collectives only).
    pub(crate) seq: u64,
}

/// One rank's step: its program and when each op ran.
#[derive(Clone, Debug)]
pub(crate) struct RankStep {
    pub(crate) index: u32,
    pub(crate) kind: StepKind,
    pub(crate) ops: Vec<Op>,
    pub(crate) recs: Vec<Rec>,
    /// `ProfilerStep#N` span.
    pub(crate) cpu_start: i64,
    pub(crate) cpu_end: i64,
    /// Forward annotation span.
    pub(crate) fwd_start: i64,
    pub(crate) fwd_end: i64,
    pub(crate) step_ext: u64,
    pub(crate) fwd_ext: u64,
    /// Planted late start: the data-loader annotation before the step (start, duration, ext).
    pub(crate) loader: Option<(i64, i64, u64)>,
}

/// Identity of one collective: (replica, group, seq, src, dst).
type CollKey = (u32, usize, u64, u32, u32);

struct Arrival {
    rank: usize,
    at: i64,
    rec: Rec,
    coll: model::Coll,
    /// A side-stream collective: the index of its record, already in the rank's step (the
    /// rank went on without waiting).
    side: Option<usize>,
}

/// Runs step `index` of profile number `profile` for every rank: each rank's program set up
/// ([`begin_rank`]), then run in lock step ([`Lockstep`]: collectives end together on every
/// member), then each step's end.
pub(crate) fn simulate_step(
    cfg: &SynthOptions,
    layout: &Layout,
    stage: Option<Stage>,
    profile: u32,
    index: u32,
    states: &mut [RankState],
) -> Result<Vec<RankStep>> {
    let world = layout.world() as usize;
    let kinds: Vec<StepKind> = (0..layout.dp)
        .map(|d| {
            let d = if cfg.same_batches { 0 } else { d };
            if cfg.microbatches > 0 {
                train::MICRO_BATCH
            } else {
                model::step_kind(cfg.seed, stage, profile, d, index)
            }
        })
        .collect();
    let mut steps = Vec::with_capacity(world);
    let mut rngs = Vec::with_capacity(world);
    for (r, st) in states.iter_mut().enumerate() {
        let (step, rng) = begin_rank(cfg, layout, &kinds, profile, index, r, st);
        steps.push(step);
        rngs.push(rng);
    }
    let mut lock = Lockstep {
        cfg,
        layout,
        index,
        slow: Slow::of(cfg, layout, profile, index),
        pc: vec![0; world],
        waiting: vec![false; world],
        waiting_side: vec![false; world],
        pending: BTreeMap::new(),
    };
    lock.run(&mut steps, states, &mut rngs)?;
    for ((step, st), rng) in steps.iter_mut().zip(states.iter_mut()).zip(rngs.iter_mut()) {
        step.fwd_end = st.cpu_t;
        st.cpu_t += rng.range(8_000, 30_000) as i64;
        step.cpu_end = st.cpu_t;
    }
    Ok(steps)
}

/// Rank `r`'s step `index` set up: its late start, the scheduler's work before the forward
/// pass, its program ([`rank_program`]); and its random stream for the step.
fn begin_rank(
    cfg: &SynthOptions,
    layout: &Layout,
    kinds: &[StepKind],
    profile: u32,
    index: u32,
    r: usize,
    st: &mut RankState,
) -> (RankStep, Rng) {
    let pos = layout.pos(r as u32);
    let kind = match &cfg.heavy {
        Some(h) if h.rank as usize == r => kinds[pos.d as usize].scaled(h.factor),
        _ => kinds[pos.d as usize],
    };
    let mut rng = Rng::keyed(
        cfg.seed,
        &[0x51EB, r as u64, u64::from(profile), u64::from(index)],
    );
    let loader = match &cfg.late_start {
        Some(l) if l.rank as usize == r && index >= l.from_step => {
            let at = st.cpu_t;
            st.cpu_t += l.delay_ns;
            Some((at, l.delay_ns, st.next_ext(1)))
        }
        _ => None,
    };
    let cpu_start = st.cpu_t;
    let step_ext = st.next_ext(1);
    let fwd_ext = st.next_ext(1);
    // The scheduler's own work before the forward pass: the same batch on every rank of a
    // replica, so about the same time.
    let mut sched = Rng::keyed(
        cfg.seed,
        &[
            0x5C4E,
            u64::from(profile),
            u64::from(pos.d),
            u64::from(index),
        ],
    );
    st.cpu_t += rng.jittered(sched.range(120_000, 300_000) as i64, 0.03);
    let ops = rank_program(cfg, layout, kind, index, r);
    let step = RankStep {
        index,
        kind,
        recs: Vec::with_capacity(ops.len()),
        ops,
        cpu_start,
        cpu_end: 0,
        fwd_start: st.cpu_t,
        fwd_end: 0,
        step_ext,
        fwd_ext,
        loader,
    };
    (step, rng)
}

/// Rank `r`'s ops in step `index`: its model's program for a step of `kind` with its planted
/// extra kernels and hot experts, prefetched on a side stream with `--overlap-comm`, and a
/// host-delay rank's stall before the step's second collective.
fn rank_program(
    cfg: &SynthOptions,
    layout: &Layout,
    kind: StepKind,
    index: u32,
    r: usize,
) -> Vec<Op> {
    let pos = layout.pos(r as u32);
    let extra = match &cfg.extra {
        Some(e) if e.rank as usize == r => e.per_layer,
        _ => 0,
    };
    let moe_factor = match &cfg.hot_expert {
        Some(h) if h.rank as usize == r => h.factor,
        _ => 1.0,
    };
    let mut ops = if cfg.microbatches > 0 {
        train::program(
            cfg.naming,
            cfg.layers,
            layout,
            &pos,
            kind,
            cfg.microbatches,
            extra,
        )
    } else {
        model::program(
            cfg.naming, cfg.layers, layout, &pos, kind, extra, moe_factor,
        )
    };
    if cfg.overlap_comm {
        ops = model::overlap_prefetch(ops, layout.tp_group(&pos));
    }
    let Some(d) = cfg
        .host_delay
        .as_ref()
        .filter(|d| d.rank as usize == r && index >= d.from_step)
    else {
        return ops;
    };
    // Before the step's second collective (the one that closes the first layer), so that the
    // stall sits between two collectives in every step, the first included.
    if let Some(at) = ops
        .iter()
        .enumerate()
        .filter(|(_, o)| matches!(o.gpu, Gpu::Coll(_)))
        .nth(1)
        .map(|(i, _)| i)
    {
        let stall = model::host_stall(d.delay_ns);
        if cfg.cpu_only {
            // No GPU to drain: only the time the thread records nothing.
            ops.splice(
                at..at,
                stall.into_iter().filter(|o| matches!(o.gpu, Gpu::Host)),
            );
        } else {
            ops.splice(at..at, stall);
        }
    }
    ops
}

/// How much longer each rank's work takes in one step: its step-to-step noise and the planted
/// slowness.
struct Slow {
    /// One factor per rank for this step, from its own stream (none drawn without
    /// `--step-noise`, so the bytes stay those of before).
    noise: Vec<f64>,
    /// Which ranks the planted slowness is on.
    here: Vec<bool>,
}

impl Slow {
    fn of(cfg: &SynthOptions, layout: &Layout, profile: u32, index: u32) -> Slow {
        let world = layout.world() as usize;
        Slow {
            noise: (0..world)
                .map(|r| {
                    if cfg.step_noise > 0.0 {
                        Rng::keyed(
                            cfg.noise_seed.unwrap_or(cfg.seed),
                            &[0x0015_E000, r as u64, u64::from(profile), u64::from(index)],
                        )
                        .jitter(cfg.step_noise)
                    } else {
                        1.0
                    }
                })
                .collect(),
            here: (0..world as u32)
                .map(|r| cfg.slow_on(layout, &layout.pos(r)))
                .collect(),
        }
    }

    /// The factor on `rank`'s work of `class` in step `index`.
    fn mult(&self, cfg: &SynthOptions, index: u32, rank: usize, class: Class) -> f64 {
        self.noise[rank]
            * match &cfg.slow {
                Some(s) if self.here[rank] && index >= s.from_step => {
                    let hit = match s.class {
                        // Comm-class kernels (DeepEP dispatch/combine) slow down with `comm`;
                        // collectives' transfers are slowed where they are matched.
                        Some(c) => c == class,
                        None => class.is_compute(),
                    };
                    if hit {
                        s.factor
                    } else {
                        1.0
                    }
                }
                _ => 1.0,
            }
    }
}

/// One step of every rank in lock step: each rank runs its ops until it arrives at a
/// collective (or waits for a side collective), and a collective every member has arrived
/// at ends for all of them.
struct Lockstep<'a> {
    cfg: &'a SynthOptions,
    layout: &'a Layout,
    index: u32,
    slow: Slow,
    /// Each rank's next op.
    pc: Vec<usize>,
    waiting: Vec<bool>,
    /// Waiting at a `cudaStreamWaitEvent` for a side collective (not at a collective).
    waiting_side: Vec<bool>,
    /// The collectives some members have arrived at: their size and arrivals.
    pending: BTreeMap<CollKey, (usize, Vec<Arrival>)>,
}

impl Lockstep<'_> {
    fn run(
        &mut self,
        steps: &mut [RankStep],
        states: &mut [RankState],
        rngs: &mut [Rng],
    ) -> Result<()> {
        loop {
            let mut moved = false;
            for r in 0..steps.len() {
                if !self.waiting[r] {
                    moved |= self.advance(r, &mut steps[r], &mut states[r], &mut rngs[r]);
                }
            }
            moved |= self.complete(steps, states)?;
            if self.pc.iter().zip(&*steps).all(|(&p, s)| p == s.ops.len()) {
                return Ok(());
            }
            if !moved {
                bail!(
                    "synth: the collectives of step {} cannot all complete (bug in the schedule)",
                    self.index
                );
            }
        }
    }

    /// Rank `r` runs its ops until it waits or its step's ops are done; whether it ran any.
    fn advance(
        &mut self,
        r: usize,
        step: &mut RankStep,
        st: &mut RankState,
        rng: &mut Rng,
    ) -> bool {
        let cfg = self.cfg;
        let mut moved = false;
        while self.pc[r] < step.ops.len() {
            let op = step.ops[self.pc[r]];
            if matches!(op.gpu, Gpu::WaitSide) && st.side_pending > 0 {
                // The compute stream waits for a side collective not yet complete.
                self.waiting[r] = true;
                self.waiting_side[r] = true;
                break;
            }
            moved = true;
            let mut rec = if cfg.cpu_only {
                let mult = op
                    .class()
                    .map_or(1.0, |c| self.slow.mult(cfg, self.index, r, c));
                cpu_only_side(&op, st, rng, mult)
            } else {
                cpu_side(&op, st, rng)
            };
            match op.gpu {
                Gpu::Coll(c) | Gpu::SideColl(c) => {
                    if !self.arrive(r, c, matches!(op.gpu, Gpu::SideColl(_)), rec, step, st, rng) {
                        break;
                    }
                    continue;
                }
                _ if cfg.cpu_only => {}
                _ => self.gpu_side(r, &op, &mut rec, st, rng),
            }
            step.recs.push(rec);
            self.pc[r] += 1;
        }
        moved
    }

    /// Rank `r` arrives at collective `c` (a side-stream one with `side`): whether it goes
    /// on (a side collective: its record is completed when the last member arrives) or
    /// waits.
    #[allow(clippy::too_many_arguments)]
    fn arrive(
        &mut self,
        r: usize,
        c: model::Coll,
        side: bool,
        mut rec: Rec,
        step: &mut RankStep,
        st: &mut RankState,
        rng: &mut Rng,
    ) -> bool {
        let layout = self.layout;
        let pos = layout.pos(r as u32);
        let local = layout.local(&pos);
        let (members, seq, src, dst) = match c.kind {
            CollKind::AllReduce | CollKind::AllGather => {
                let s = st.seq[c.pg];
                st.seq[c.pg] += 1;
                (layout.groups()[c.pg].ranks.len(), s, u32::MAX, u32::MAX)
            }
            CollKind::Send | CollKind::Recv => {
                let (src, dst) = if c.kind == CollKind::Send {
                    (local, c.peer)
                } else {
                    (c.peer, local)
                };
                let s = st.p2p.entry((src, dst)).or_insert(0);
                let seq = *s;
                *s += 1;
                (2, seq, src, dst)
            }
        };
        rec.seq = seq;
        // gloo: the op starts when the thread gets there; NCCL: the kernel starts when the
        // stream is free and the launch is done. A side collective starts when the side
        // stream is free.
        let stream_t = if side { st.side_t } else { st.gpu_t };
        let at = if self.cfg.cpu_only {
            rec.cpu_start
        } else {
            (stream_t + rng.range(800, 1_600) as i64).max(rec.rt_start + rec.rt_dur)
        };
        let arrivals = &mut self
            .pending
            .entry((pos.d, c.pg, seq, src, dst))
            .or_insert_with(|| (members, Vec::new()))
            .1;
        if side {
            st.side_pending += 1;
            arrivals.push(Arrival {
                rank: r,
                at,
                rec,
                coll: c,
                side: Some(step.recs.len()),
            });
            step.recs.push(rec);
            self.pc[r] += 1;
            return true;
        }
        arrivals.push(Arrival {
            rank: r,
            at,
            rec,
            coll: c,
            side: None,
        });
        self.waiting[r] = true;
        false
    }

    /// The GPU side of rank `r`'s op other than a collective, on a GPU trace.
    fn gpu_side(&self, r: usize, op: &Op, rec: &mut Rec, st: &mut RankState, rng: &mut Rng) {
        let cfg = self.cfg;
        match op.gpu {
            Gpu::Sync => {
                // The call returns once the GPU has drained.
                let end =
                    (rec.rt_start + rec.rt_dur).max(st.gpu_t + rng.range(1_500, 3_500) as i64);
                rec.rt_dur = end - rec.rt_start;
                rec.cpu_dur = end + rng.range(1_500, 3_000) as i64 - rec.cpu_start;
                st.cpu_t = rec.cpu_start + rec.cpu_dur;
            }
            Gpu::Host => {}
            Gpu::WaitSide => st.gpu_t = st.gpu_t.max(st.side_t),
            Gpu::SideCopy { .. } => {
                // The side stream waits for the compute stream's work so far (torch orders a
                // collective's stream after the current one), then copies.
                let late = match &cfg.overlap_delay {
                    Some(d) if d.rank as usize == r && self.index >= d.from_step => d.delay_ns,
                    _ => 0,
                };
                let nominal = op.gpu_ns as f64 * rng.jitter(0.015);
                rec.gpu_dur = (nominal.round() as i64).max(1) + late;
                rec.gpu_start = (st.side_t.max(st.gpu_t) + rng.range(800, 1_600) as i64)
                    .max(rec.rt_start + rec.rt_dur);
                st.side_t = rec.gpu_start + rec.gpu_dur;
            }
            _ => {
                let class = op.class().unwrap_or(Class::Memory);
                let nominal = op.gpu_ns as f64
                    * rng.jitter(0.015)
                    * self.slow.mult(cfg, self.index, r, class);
                rec.gpu_dur = (nominal.round() as i64).max(1);
                rec.gpu_start =
                    (st.gpu_t + rng.range(800, 1_600) as i64).max(rec.rt_start + rec.rt_dur);
                st.gpu_t = rec.gpu_start + rec.gpu_dur;
            }
        }
    }

    /// Every collective all of whose members have arrived ends for all of them: the latest
    /// arrival plus its transfer. Whether any did.
    fn complete(&mut self, steps: &mut [RankStep], states: &mut [RankState]) -> Result<bool> {
        let cfg = self.cfg;
        let ready: Vec<CollKey> = self
            .pending
            .iter()
            .filter(|(_, (members, v))| v.len() == *members)
            .map(|(k, _)| *k)
            .collect();
        let moved = !ready.is_empty();
        for key in ready {
            let Some((_, arrivals)) = self.pending.remove(&key) else {
                continue;
            };
            let latest = arrivals.iter().map(|a| a.at).max().unwrap_or(0);
            let Some(c) = arrivals.first().map(|a| a.coll) else {
                bail!("synth: a collective without members (bug)");
            };
            let mut rng = Rng::keyed(
                cfg.seed,
                &[
                    0xC011,
                    u64::from(key.0),
                    key.1 as u64,
                    key.2,
                    u64::from(key.3),
                    u64::from(key.4),
                ],
            );
            let nominal = if cfg.cpu_only {
                cpu::transfer_ns(&c)
            } else {
                model::transfer_ns(&c)
            };
            let mut transfer = nominal as f64 * rng.jitter(0.02);
            transfer *= link_mult(cfg, self.index, key.0, &arrivals, &self.slow.here);
            let end = latest + transfer.round() as i64;
            for a in arrivals {
                if let Some(i) = a.side {
                    side_done(&mut steps[a.rank], &mut states[a.rank], i, a.at, end);
                    if self.waiting_side[a.rank] {
                        self.waiting[a.rank] = false;
                        self.waiting_side[a.rank] = false;
                    }
                    continue;
                }
                let mut rec = a.rec;
                if cfg.cpu_only {
                    // gloo holds every member's thread until the data has moved.
                    rec.cpu_dur = end - rec.cpu_start;
                    states[a.rank].cpu_t = end + rng.range(300, 1_500) as i64;
                } else {
                    rec.gpu_start = a.at;
                    rec.gpu_dur = end - a.at;
                }
                states[a.rank].gpu_t = end;
                steps[a.rank].recs.push(rec);
                self.pc[a.rank] += 1;
                self.waiting[a.rank] = false;
            }
        }
        Ok(moved)
    }
}

/// A side collective complete at `end`: its record (index `i` in the rank's step) gets its
/// kernel, from the rank's arrival `at`; the side stream is free from `end`.
fn side_done(step: &mut RankStep, st: &mut RankState, i: usize, at: i64, end: i64) {
    if let Some(rec) = step.recs.get_mut(i) {
        rec.gpu_start = at;
        rec.gpu_dur = end - at;
    }
    st.side_t = end;
    st.side_pending = st.side_pending.saturating_sub(1);
}

/// How much longer a collective of replica `replica` with these members transfers in step
/// `index`: `--slow-class comm` (a member is a slow rank) and `--slow-link` (the replica's
/// link) each multiply by their factor.
/// `slow_here`: which ranks the planted slowness is on.
fn link_mult(
    cfg: &SynthOptions,
    index: u32,
    replica: u32,
    arrivals: &[Arrival],
    slow_here: &[bool],
) -> f64 {
    let mut m = 1.0;
    if let Some(s) = &cfg.slow {
        let slow_in = arrivals.iter().any(|a| slow_here[a.rank]);
        if s.class == Some(Class::Comm) && slow_in && index >= s.from_step {
            m *= s.factor;
        }
    }
    if let Some(l) = &cfg.slow_link {
        if l.replica == replica && index >= l.from_step {
            m *= l.factor;
        }
    }
    m
}

/// Collectives (and point-to-point transfers) `rank` launches per step.
pub(crate) fn collectives_per_step(cfg: &SynthOptions, layout: &Layout, rank: u32) -> usize {
    let pos = layout.pos(rank);
    let ops = if cfg.microbatches > 0 {
        train::program(
            cfg.naming,
            cfg.layers,
            layout,
            &pos,
            train::MICRO_BATCH,
            cfg.microbatches,
            0,
        )
    } else {
        model::program(
            cfg.naming,
            cfg.layers,
            layout,
            &pos,
            StepKind::Decode { bs: 8 },
            0,
            1.0,
        )
    };
    ops.iter().filter(|o| matches!(o.gpu, Gpu::Coll(_))).count()
}

/// The CPU side of one op: outer op, CUDA call inside it. Advances the CPU clock.
fn cpu_side(op: &Op, st: &mut RankState, rng: &mut Rng) -> Rec {
    let cpu_start = st.cpu_t;
    if matches!(op.gpu, Gpu::Host) {
        // Exactly `cpu_ns` of host work, no CUDA call; the inner op spans the middle of it
        // (`rt_*` bound it for the emitter).
        let cpu_dur = op.cpu_ns.max(4);
        let ext = st.next_ext(if op.inner.is_some() { 2 } else { 1 });
        st.cpu_t = cpu_start + cpu_dur + rng.range(300, 1_500) as i64;
        return Rec {
            cpu_start,
            cpu_dur,
            rt_start: cpu_start + cpu_dur / 4,
            rt_dur: cpu_dur / 2,
            ext,
            ..Rec::default()
        };
    }
    let mut cpu_dur = rng.jittered(op.cpu_ns, 0.10);
    let rt_start = cpu_start + cpu_dur * 45 / 100;
    let rt_dur = rng.jittered(
        match op.gpu {
            Gpu::Memcpy { .. } => 6_500,
            Gpu::Coll(_) => 5_500,
            _ => 4_200,
        },
        0.20,
    );
    cpu_dur = cpu_dur.max(rt_start + rt_dur + 1_500 - cpu_start);
    let corr = st.corr;
    st.corr += 1;
    let ext = st.next_ext(if op.inner.is_some() { 2 } else { 1 });
    st.cpu_t = cpu_start + cpu_dur + rng.range(300, 1_500) as i64;
    Rec {
        cpu_start,
        cpu_dur,
        rt_start,
        rt_dur,
        corr,
        ext,
        ..Rec::default()
    }
}

/// The CPU time one op of the program takes in a CPU-only run: its kernel's work × `mult` (the
/// planted slowness of its class) with ±1.5 % jitter, plus the op's dispatch. A host stall
/// ([`Gpu::Host`]) is `cpu_ns` exactly with no op recorded; a collective's end is set when every
/// member has arrived (here only its start). Advances the thread's clock.
///
/// `rt_start`/`rt_dur` bound the nested op (e.g. `aten::mm` inside `aten::linear`) for the
/// emitter: the work itself, inside the outer op.
fn cpu_only_side(op: &Op, st: &mut RankState, rng: &mut Rng, mult: f64) -> Rec {
    let cpu_start = st.cpu_t;
    let ext = st.next_ext(if op.inner.is_some() { 2 } else { 1 });
    let rec = |cpu_dur: i64, work: i64, lead: i64| Rec {
        cpu_start,
        cpu_dur,
        rt_start: cpu_start + lead,
        rt_dur: work,
        ext,
        ..Rec::default()
    };
    match op.gpu {
        Gpu::Host => {
            let d = op.cpu_ns.max(1);
            st.cpu_t = cpu_start + d + rng.range(300, 1_500) as i64;
            rec(d, 0, 0)
        }
        Gpu::Coll(_) => rec(0, 0, 0),
        _ => {
            let work = match op.gpu {
                Gpu::Sync => rng.range(1_000, 3_000) as i64,
                _ => ((op.gpu_ns as f64 * rng.jitter(0.015) * mult).round() as i64).max(1),
            };
            let lead = rng.range(1_000, 3_000) as i64;
            let dur = lead + work + rng.range(800, 2_000) as i64;
            st.cpu_t = cpu_start + dur + rng.range(300, 1_500) as i64;
            rec(dur, work, lead)
        }
    }
}
