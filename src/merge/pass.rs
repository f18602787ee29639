//! One group's ranks through the merge passes: the scan pass (steps and first step, only for
//! `--align first-step`: see [`super::steps`]), the write pass (each rank into its own
//! compressed piece, in parallel; it finds the `--steps` windows itself) and its re-run for the
//! ranks whose clock shift or `--steps` window turned out different, with per-rank state
//! indexed by `k`, the rank's position among the chosen ranks. A rank whose input cannot be read is marked
//! unreadable and left out; a failed write fails the merge.

use std::path::PathBuf;

use anyhow::Result;
use rayon::prelude::*;

use super::align::{self, RankClock};
use super::filter::Filter;
use super::rank::{self, RankError, RankJob, RankOut};
use super::steps::{self, ScanInfo};
use super::{MergeOptions, RankSummary};
use crate::trace::read::steps::STEP_EVENTS;
use crate::trace::{Group, Nested, Ns, ReadReport};

/// Per-rank state of one group's merge.
pub(super) struct Ranks<'a> {
    pub g: &'a Group,
    pub opts: &'a MergeOptions,
    /// Group indices of the chosen ranks.
    pub chosen: Vec<usize>,
    /// Where the pieces go.
    pub tmp: PathBuf,
    /// Whether the pieces are written uncompressed (a `.pftrace` merge, not gzipped).
    pub raw_pieces: bool,
    pub scans: Vec<Option<ScanInfo>>,
    /// `--steps` windows, in the rank's own units.
    pub step_windows: Vec<Option<(Ns, Ns)>>,
    /// Whether `step_windows` are known (from the scan pass or a first write pass); until
    /// then a write pass with `--steps` finds each rank's window as it reads.
    pub windows_known: bool,
    /// The rank's `--steps` window changed after its first write ([`Ranks::recheck_scans`]):
    /// it is written again.
    pub window_changed: Vec<bool>,
    pub outs: Vec<Option<RankOut>>,
    /// Why a rank could not be read.
    pub unreadable: Vec<Option<String>>,
}

impl<'a> Ranks<'a> {
    pub(super) fn new(
        g: &'a Group,
        opts: &'a MergeOptions,
        chosen: Vec<usize>,
        tmp: PathBuf,
        raw_pieces: bool,
    ) -> Self {
        let n = chosen.len();
        Ranks {
            g,
            opts,
            chosen,
            tmp,
            raw_pieces,
            scans: vec![None; n],
            step_windows: vec![None; n],
            windows_known: opts.steps.is_none(),
            window_changed: vec![false; n],
            outs: (0..n).map(|_| None).collect(),
            unreadable: vec![None; n],
        }
    }

    /// Whether the plan needs each rank's steps before writing: only the first-step shifts
    /// do (the `--steps` windows are found while writing).
    pub(super) fn need_scan(&self) -> bool {
        self.opts.align == align::Align::FirstStep || self.perfetto_steps()
    }

    /// A Perfetto merge with `--steps`: its ranks' windows are found by the scan pass, since
    /// its encoding cannot hold events back (interned strings are defined in file order).
    fn perfetto_steps(&self) -> bool {
        self.opts.trace_format == super::TraceFormat::Perfetto && self.opts.steps.is_some()
    }

    /// The scan pass (when needed; it reads only the step annotations and skims every other
    /// event, see [`steps`]): each rank's steps, its `--steps` window, and the clock shifts
    /// they give. Returns the shifts the first write pass uses (zero without a scan).
    pub(super) fn scan(&mut self) -> Vec<Ns> {
        let mut first_shifts = vec![Ns::ZERO; self.chosen.len()];
        if !self.need_scan() {
            return first_shifts;
        }
        let g = self.g;
        let found: Vec<std::io::Result<ScanInfo>> = self
            .chosen
            .par_iter()
            .map(|&i| steps::scan(&g.files[i], Nested::SkimOnly(STEP_EVENTS)))
            .collect();
        for (k, r) in found.into_iter().enumerate() {
            match r {
                Ok(s) => self.scans[k] = Some(s),
                Err(e) => self.unreadable[k] = Some(format!("reading {e}")),
            }
        }
        let scans = std::mem::take(&mut self.scans);
        let found: Vec<_> = scans.iter().map(|s| s.as_ref().map(|s| &s.steps)).collect();
        self.settle_windows(&found);
        self.scans = scans;
        let live = self.live();
        let clocks: Vec<_> = live
            .iter()
            .map(|&k| {
                let s = self.scans[k].as_ref();
                self.clock(
                    k,
                    s.and_then(|s| s.report.as_ref()),
                    s.and_then(|s| s.min_ts),
                )
            })
            .collect();
        for (&k, &shift) in live
            .iter()
            .zip(&align::plan(self.opts.align, &clocks).shifts)
        {
            first_shifts[k] = shift;
        }
        first_shifts
    }

    /// Sets the `--steps` windows from each rank's steps (`None`: unreadable).
    fn settle_windows(&mut self, found: &[Option<&steps::Steps>]) {
        let Some((a, b)) = self.opts.steps else {
            return;
        };
        for (k, w) in self.step_windows.iter_mut().enumerate() {
            *w = found[k].and_then(|s| s.window_of_steps(a, b));
        }
        self.windows_known = true;
    }

    /// After the first write pass: with a scan pass, the ranks it may have seen wrong checked
    /// again ([`Ranks::recheck_scans`]); without, the `--steps` windows the write pass found.
    /// Then a note for each readable rank that lacks its `--steps`.
    pub(super) fn settle_after_write(&mut self, notes: &mut Vec<String>) {
        if self.need_scan() {
            self.recheck_scans(notes);
        } else if !self.windows_known {
            let outs = std::mem::take(&mut self.outs);
            let found: Vec<_> = outs.iter().map(|o| o.as_ref().map(|o| &o.steps)).collect();
            self.settle_windows(&found);
            self.outs = outs;
        }
        let Some((a, b)) = self.opts.steps else {
            return;
        };
        for (k, &i) in self.chosen.iter().enumerate() {
            if self.step_windows[k].is_none() && self.unreadable[k].is_none() {
                notes.push(format!(
                    "{}: no steps {a}:{b} found; rank kept whole",
                    self.g.files[i].label
                ));
            }
        }
    }

    /// Every rank whose write pass read another number of events than its skimming scan (damage
    /// inside an `args` that only validation finds: see [`steps`]) is scanned again, validating,
    /// so that its shift and `--steps` window come from the events the write pass read; a
    /// window that changes marks the rank to be written again.
    fn recheck_scans(&mut self, notes: &mut Vec<String>) {
        let events = |k: usize| {
            let scanned = self.scans[k].as_ref().and_then(|s| s.report.as_ref());
            let written = self.outs[k].as_ref().map(|o| &o.report);
            (scanned.map(|r| r.events), written.map(|r| r.events))
        };
        let suspect: Vec<usize> = self
            .live()
            .into_iter()
            .filter(|&k| {
                let (scanned, written) = events(k);
                scanned != written
            })
            .collect();
        let g = self.g;
        let chosen = &self.chosen;
        let found: Vec<(usize, std::io::Result<ScanInfo>)> = suspect
            .par_iter()
            .map(|&k| (k, steps::scan(&g.files[chosen[k]], Nested::Validate)))
            .collect();
        for (k, r) in found {
            match r {
                Ok(s) => {
                    if let Some((a, b)) = self.opts.steps {
                        let w = s.steps.window_of_steps(a, b);
                        self.window_changed[k] = w != self.step_windows[k];
                        self.step_windows[k] = w;
                    }
                    self.scans[k] = Some(s);
                }
                Err(e) => notes.push(format!(
                    "{}: could not be read again to check its steps (reading {e}): its clock \
                     shift comes from a scan that read on past the damage",
                    g.files[chosen[k]].label
                )),
            }
        }
    }

    /// The ranks not (yet) found unreadable.
    pub(super) fn live(&self) -> Vec<usize> {
        (0..self.chosen.len())
            .filter(|&k| self.unreadable[k].is_none())
            .collect()
    }

    /// Rank `k`'s clock facts, from a read report and its earliest timestamp.
    pub(super) fn clock(
        &self,
        k: usize,
        report: Option<&ReadReport>,
        min_ts: Option<Ns>,
    ) -> RankClock {
        RankClock {
            base_ns: report.and_then(|r| r.header.base_time_ns),
            first_step: self.scans[k].as_ref().and_then(|s| s.steps.first_step()),
            min_ts,
        }
    }

    /// `Some(why)` when the ranks written are not one run ([`crate::trace::runs`]): each
    /// rank's first and last event on the common base (whatever `--align` asks: aligning first
    /// steps would put runs a day apart on top of each other).
    pub(super) fn not_one_run(&self, live: &[usize]) -> Option<String> {
        let base = super::align::plan(super::align::Align::Base, &self.written_clocks(live));
        let active = live.iter().zip(&base.shifts).map(|(&k, &shift)| {
            let f = &self.g.files[self.chosen[k]];
            let name = f.path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            let window = self.outs[k]
                .as_ref()
                .and_then(|o| o.min_ts.zip(o.max_ts))
                .map(|(a, b)| (a + shift, b + shift));
            (f.label.as_str(), name, window)
        });
        crate::trace::runs::apart(active, &self.g.profile_id, &short_list)
    }

    /// The clocks of the ranks written so far (`live`, in order).
    pub(super) fn written_clocks(&self, live: &[usize]) -> Vec<RankClock> {
        live.iter()
            .map(|&k| {
                let o = self.outs[k].as_ref();
                self.clock(k, o.map(|o| &o.report), o.and_then(|o| o.min_ts))
            })
            .collect()
    }

    fn job(&self, k: usize, shift: Ns) -> RankJob {
        let i = self.chosen[k];
        let f = &self.g.files[i];
        // The window is in output units; the rank's own units are shifted back.
        let outer = self.opts.window.map(|(lo, hi)| (lo - shift, hi - shift));
        let find_steps = self.opts.steps.filter(|_| !self.windows_known);
        let window = match find_steps {
            Some(_) => outer,
            None => steps::intersect(self.step_windows[k], outer),
        };
        RankJob {
            index: i,
            nranks: self.g.files.len(),
            label: f.label.clone(),
            sort_base: f.id.sort_index_base(),
            path: f.path.clone(),
            shift,
            filter: Filter {
                drop_cat: self.opts.drop_cat.clone(),
                gpu_only: self.opts.gpu_only,
                window,
            },
            find_steps,
            level: self.opts.level,
            piece_path: self.tmp.join(format!("rank-{i}.deflate")),
            perfetto: self.opts.trace_format == super::TraceFormat::Perfetto,
            raw: self.raw_pieces,
        }
    }

    /// Runs the write pass of ranks `ks` with their shifts: an unreadable input marks its
    /// rank, a failed write fails the merge (with `what` as context).
    pub(super) fn write_pass(&mut self, ks: &[usize], shift: &[Ns], what: &str) -> Result<()> {
        let bar = crate::progress::bar(ks.len() as u64, "merge");
        bar.set_message("ranks");
        let done: Vec<(usize, Result<RankOut, RankError>)> = ks
            .par_iter()
            .map(|&k| {
                let r = rank::write_rank(&self.job(k, shift[k]));
                bar.inc(1);
                (k, r)
            })
            .collect();
        bar.finish_and_clear();
        for (k, r) in done {
            match r {
                Ok(o) => self.outs[k] = Some(o),
                Err(RankError::Read(e)) => {
                    self.outs[k] = None;
                    self.unreadable[k] = Some(format!("reading {e}"));
                }
                Err(e @ RankError::Write(_)) => {
                    return Err(anyhow::Error::new(e).context(what.to_string()))
                }
            }
        }
        Ok(())
    }

    /// Every chosen rank's line in the result.
    pub(super) fn summaries(&self) -> Vec<RankSummary> {
        self.chosen
            .iter()
            .enumerate()
            .map(|(k, &i)| {
                let f = &self.g.files[i];
                match (&self.outs[k], &self.unreadable[k]) {
                    (Some(o), _) => RankSummary {
                        label: f.label.clone(),
                        path: f.path.clone(),
                        read: o.report.events,
                        written: o.written,
                        dropped: o.dropped,
                        added: o.added,
                        shift: o.shift,
                        base_ns: o.report.header.base_time_ns,
                        notes: o.report.notes(),
                        damaged: o.report.is_damaged(),
                        stopped_early: o.report.stopped_early(),
                        unreadable: None,
                    },
                    (None, u) => {
                        let why = u.clone().unwrap_or_else(|| "reading failed".into());
                        RankSummary {
                            label: f.label.clone(),
                            path: f.path.clone(),
                            read: 0,
                            written: 0,
                            dropped: 0,
                            added: 0,
                            shift: Ns::ZERO,
                            base_ns: None,
                            notes: vec![format!("unreadable, left out: {why}")],
                            damaged: true,
                            stopped_early: None,
                            unreadable: Some(why),
                        }
                    }
                }
            })
            .collect()
    }

    /// Every chosen rank (its group index) with its pass, or why it could not be read.
    pub(super) fn entries(&self) -> Vec<(usize, Result<&RankOut, &str>)> {
        self.chosen
            .iter()
            .enumerate()
            .map(|(k, &i)| {
                let r = match (&self.outs[k], &self.unreadable[k]) {
                    (Some(o), _) => Ok(o),
                    (None, u) => Err(u.as_deref().unwrap_or("reading failed")),
                };
                (i, r)
            })
            .collect()
    }
}

/// Labels as a short list: all of them up to six, else the first three, "…" and the last.
fn short_list(labels: &[&str]) -> String {
    match labels {
        [a, b, c, .., z] if labels.len() > 6 => {
            format!("{a}, {b}, {c}, …, {z} ({} ranks)", labels.len())
        }
        _ => labels.join(", "),
    }
}
