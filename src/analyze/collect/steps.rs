//! Steps of one rank: the windows that cut its profile into iterations, the figures of each
//! step ([`StepFig`]), and what falls into each window: the work of the step's batch
//! annotations, GEMM shapes and message sizes ([`assign`], [`assign_shapes`],
//! [`assign_nelems`], from the figures [`super::work`] reads).
//!
//! Step markers, in order of preference: `--step-marker REGEX` (matched against annotation
//! names), PyTorch's `ProfilerStep#N`, SGLang's `step[EXTEND …]` / `step[DECODE …]`. CPU-side
//! annotations win over their `gpu_user_annotation` copies.
//!
//! A GPU op belongs to the step whose window contains the CPU launch of that op (found through
//! the launch's `correlation`), so a kernel that runs late still counts for the step that
//! issued it; without a launch record (or with GPU-side markers) its own start decides.
//!
//! Per step and rank the figures are the GPU *busy* time (union of the step's ops) and the
//! GPU *work* time (union of its non-communication ops). In CPU-only traces the step's time is
//! its annotation's duration, and work is that minus the time in `c10d::` ops. Across ranks the
//! steps are matched and compared by the reduce stage (`reduce::steps`).
//!
//! An annotation belongs to the step whose window holds its start (a `ProfilerStep#N` holding a
//! `step[…]`, or the `step[…]` itself when it is the step marker); several in one step add up.
//! CPU-side annotations win over their `gpu_user_annotation` copies.

use serde::{Deserialize, Serialize};

use super::work::{StepWork, WorkMark};
use crate::trace::Ns;

/// A step annotation as found in the trace (file times).
#[derive(Debug, Clone)]
pub(crate) struct Mark {
    pub(crate) start: i64,
    pub(crate) dur: i64,
    pub(crate) name: String,
    pub(crate) number: Option<i64>,
    pub(crate) on_gpu: bool,
    /// When the host began the step's work: its first op in the step, where the trace says
    /// (CPU-only traces, [`host_begins`]). torch's `ProfilerStep#N` opens at the previous
    /// iteration's `prof.step()`, so a rank that starts an iteration late shows it as time
    /// between the mark's start and its first op, not as a later mark.
    pub(crate) begin: Option<i64>,
}

impl Mark {
    /// When the host began the step's work (the mark's start where unknown).
    pub(crate) fn host_start(&self) -> i64 {
        self.begin.unwrap_or(self.start).max(self.start)
    }
}

/// Sets each mark's [`Mark::begin`] from the rank's ops (`ops`: (start, end), sorted by start):
/// the first op starting inside the mark, other than one spanning exactly the mark (a
/// `ProfilerStep#` recorded as an op).
pub(crate) fn host_begins(marks: &mut [Mark], ops: &[(i64, i64)]) {
    for m in marks.iter_mut() {
        let end = m.start + m.dur.max(1);
        let k = ops.partition_point(|o| o.0 < m.start);
        m.begin = ops[k..]
            .iter()
            .take_while(|o| o.0 < end)
            .find(|o| !(o.0 == m.start && o.1 == end))
            .map(|o| o.0);
    }
}

/// The steps CUDA-graph launches give where nothing else marks them: a model served with CUDA
/// graphs (SGLang's and vLLM's decode) replays one graph per forward step, so each launch
/// opens a step that lasts until the next launch (what the host does in between, and the
/// kernels it launches eagerly, belong to it); the last launch opens none, since nothing says
/// where its step ends. A model captured piecewise (several graphs per forward) gives one
/// step per piece: `--step-marker` then names the real step.
pub(crate) fn graph_marks(mut launches: Vec<i64>) -> Vec<Mark> {
    launches.sort_unstable();
    launches
        .windows(2)
        .enumerate()
        .map(|(i, w)| Mark {
            start: w[0],
            dur: w[1] - w[0],
            name: format!("graph launch {}", i + 1),
            number: None,
            on_gpu: false,
            begin: None,
        })
        .collect()
}

/// Picks the marker set and orders it by start: custom, then ProfilerStep, then SGLang, then
/// the CUDA-graph launches ([`graph_marks`]). CPU-side marks are preferred to GPU-side copies.
pub(crate) fn choose(
    custom: Vec<Mark>,
    profiler: Vec<Mark>,
    sglang: Vec<Mark>,
    graphs: Vec<i64>,
    use_custom: bool,
) -> (String, Vec<Mark>) {
    let (source, marks) = if use_custom {
        ("step-marker", custom)
    } else if !profiler.is_empty() {
        ("ProfilerStep", profiler)
    } else if !sglang.is_empty() {
        // SGLang's and vLLM's forward annotations (`trace::read::steps`): one engine or the other.
        let vllm = sglang.iter().any(|m| m.name.starts_with("execute_"));
        (
            if vllm {
                "vllm execute_..."
            } else {
                "sglang step[...]"
            },
            sglang,
        )
    } else if graphs.len() > 1 {
        ("CUDA-graph launches", graph_marks(graphs))
    } else {
        ("none", Vec::new())
    };
    let any_cpu = marks.iter().any(|m| !m.on_gpu);
    let mut marks: Vec<Mark> = marks
        .into_iter()
        .filter(|m| !any_cpu || !m.on_gpu)
        .collect();
    marks.sort_by_key(|m| (m.start, std::cmp::Reverse(m.dur)));
    (source.to_string(), outermost(marks, |m| (m.start, m.dur)))
}

/// One step per iteration: what lies inside an earlier kept one is the same iteration (SGLang
/// nests its `step[…]` annotation inside a forward span; vLLM's `execute_…` can hold another),
/// not a step of its own. `items` sorted by start (longest first on equal starts); `span`
/// gives (start, duration).
pub(crate) fn outermost<T>(items: Vec<T>, span: impl Fn(&T) -> (i64, i64)) -> Vec<T> {
    let mut out: Vec<T> = Vec::with_capacity(items.len());
    let mut open_end = i64::MIN;
    for it in items {
        let (s, d) = span(&it);
        let e = s.saturating_add(d.max(0));
        if s >= open_end || e > open_end {
            open_end = e;
            out.push(it);
        }
    }
    out
}

/// Index of the window (sorted by start) that contains `t`, if any.
pub(crate) fn window_of(marks: &[Mark], t: i64) -> Option<usize> {
    open_at(marks, t, marks.partition_point(|m| m.start <= t))
}

/// [`window_of`] for times that mostly come in ascending order (a sweep over ops sorted by
/// start or correlation): the windows starting at or before the last time are tried first,
/// and searched for only when the time left them. The same answers as [`window_of`].
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct WindowCursor {
    /// `marks.partition_point(|m| m.start <= t)` for the last `t`.
    k: usize,
}

impl WindowCursor {
    pub(crate) fn window_of(&mut self, marks: &[Mark], t: i64) -> Option<usize> {
        let k = self.k;
        let holds = (k == 0 || marks.get(k - 1).is_some_and(|m| m.start <= t))
            && marks.get(k).is_none_or(|m| m.start > t);
        if !holds {
            self.k = marks.partition_point(|m| m.start <= t);
        }
        open_at(marks, t, self.k)
    }
}

/// The window holding `t` among the `k` first (those starting at or before `t`): the latest,
/// else an earlier one still open (nesting).
fn open_at(marks: &[Mark], t: i64, k: usize) -> Option<usize> {
    (0..k)
        .rev()
        .take(4)
        .find(|&i| t < marks[i].start + marks[i].dur.max(1))
}

/// One step of one rank.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct StepFig {
    pub name: String,
    pub number: Option<i64>,
    /// Start on the common clock (file time + base time).
    pub start_ns: Ns,
    /// The annotation's duration (CPU time of the step).
    pub dur_ns: Ns,
    /// GPU busy (union of the step's ops); in CPU-only traces the step's duration.
    pub busy_ns: Ns,
    /// GPU busy without communication; in CPU-only traces duration minus `c10d::` time.
    pub work_ns: Ns,
    /// Sum of op durations per class (class ids of the classifier).
    #[serde(skip)]
    pub class_ns: Vec<i64>,
    /// What the step was asked to do (batch, launches), see [`super::work`].
    #[serde(default)]
    pub work: StepWork,
}

/// Gives each step the most frequent GEMM token count among the GEMM ops that start in it
/// (ties: the larger). `shapes`: (CPU start, tokens), as the collector's spool gives them back.
pub(crate) fn assign_shapes(
    shapes: impl IntoIterator<Item = anyhow::Result<(i64, i64)>>,
    windows: &[Mark],
    work: &mut [StepWork],
) -> anyhow::Result<()> {
    let mut counts: Vec<std::collections::BTreeMap<u64, u64>> =
        vec![Default::default(); work.len()];
    for s in shapes {
        let (start, m) = s?;
        let m = m.max(0) as u64;
        if let Some(c) = window_of(windows, start).and_then(|i| counts.get_mut(i)) {
            *c.entry(m).or_default() += 1;
        }
    }
    for (w, c) in work.iter_mut().zip(counts) {
        w.shape_tokens = c.into_iter().max_by_key(|&(m, n)| (n, m)).map(|(m, _)| m);
    }
    Ok(())
}

/// Adds CPU-side message sizes (`record_param_comms`: (start, nelems)) to the steps that hold
/// them; the GPU-side sums ([`super::sweep::fold`]) are replaced when any CPU-side one exists.
pub(crate) fn assign_nelems(
    cpu: impl Iterator<Item = anyhow::Result<(i64, i64)>>,
    windows: &[Mark],
    work: &mut [StepWork],
) -> anyhow::Result<()> {
    let mut any = false;
    for r in cpu {
        let (start, n) = r?;
        if !any {
            any = true;
            for w in work.iter_mut() {
                w.nelems = Some(0);
            }
        }
        if let Some(w) = window_of(windows, start).and_then(|i| work.get_mut(i)) {
            w.nelems = w.nelems.map(|x| x.saturating_add(n.max(0) as u64));
        }
    }
    Ok(())
}

/// Gives each step (`windows`, as [`window_of`] sees them) the batches of the
/// annotations that start in it. CPU-side annotations win over GPU-side copies.
pub(crate) fn assign(marks: &[WorkMark], windows: &[Mark], work: &mut [StepWork]) {
    let any_cpu = marks.iter().any(|m| !m.on_gpu);
    let mut sorted: Vec<&WorkMark> = marks.iter().filter(|m| !any_cpu || !m.on_gpu).collect();
    sorted.sort_by_key(|m| (m.start, std::cmp::Reverse(m.dur)));
    for m in outermost(sorted, |m| (m.start, m.dur)) {
        if let Some(i) = window_of(windows, m.start) {
            if let Some(w) = work.get_mut(i) {
                w.add(m.source, m.batch);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::collect::work::{Batch, WorkSource};

    fn mark(start: i64, dur: i64) -> Mark {
        Mark {
            start,
            dur,
            name: String::new(),
            number: None,
            on_gpu: false,
            begin: None,
        }
    }

    #[test]
    fn windows_find_their_step() {
        let m = mark;
        let marks = vec![m(0, 10), m(10, 10), m(30, 5)];
        assert_eq!(window_of(&marks, 0), Some(0));
        assert_eq!(window_of(&marks, 10), Some(1));
        assert_eq!(window_of(&marks, 25), None);
        assert_eq!(window_of(&marks, 34), Some(2));
        assert_eq!(window_of(&marks, -1), None);
        // The cursor answers as the search, in any order of times.
        let mut cur = WindowCursor::default();
        for t in [-1, 0, 3, 10, 34, 25, 9, 40, 100, 2, 34, -5, 11] {
            assert_eq!(cur.window_of(&marks, t), window_of(&marks, t), "t = {t}");
        }
    }

    #[test]
    fn batches_add_up_in_their_step() {
        let w = |start| mark(start, 100);
        let windows = vec![w(0), w(100)];
        let m = |start, on_gpu, seqs, tokens| WorkMark {
            start,
            dur: 5,
            on_gpu,
            source: WorkSource::Sglang,
            batch: Batch { seqs, tokens },
        };
        let marks = vec![
            m(10, false, 2, Some(20)),
            m(50, false, 1, Some(5)),
            m(120, false, 4, Some(4)),
            m(10, true, 99, Some(99)),
        ];
        let mut work = vec![StepWork::default(); 2];
        assign(&marks, &windows, &mut work);
        assert_eq!((work[0].seqs, work[0].tokens), (Some(3), Some(25)));
        assert_eq!((work[1].seqs, work[1].tokens), (Some(4), Some(4)));
        // An annotation inside another (a `step[…]` inside a forward span) is the same
        // iteration: its batch counts once.
        let nested = vec![
            WorkMark {
                dur: 40,
                ..m(10, false, 2, Some(20))
            },
            m(12, false, 2, Some(20)),
            m(120, false, 4, Some(4)),
        ];
        let mut work = vec![StepWork::default(); 2];
        assign(&nested, &windows, &mut work);
        assert_eq!((work[0].seqs, work[0].tokens), (Some(2), Some(20)));
    }

    #[test]
    fn nested_marks_are_one_step() {
        let m = mark;
        // Two iterations, each a forward span with a step annotation inside; a step that
        // only overlaps the previous one's end is its own.
        let (_, marks) = choose(
            vec![],
            vec![],
            vec![m(0, 100), m(10, 50), m(200, 100), m(205, 90), m(290, 50)],
            vec![],
            false,
        );
        let kept: Vec<(i64, i64)> = marks.iter().map(|m| (m.start, m.dur)).collect();
        assert_eq!(kept, vec![(0, 100), (200, 100), (290, 50)]);
    }
}
