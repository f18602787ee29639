//! One capture from start to finish: start every server's profiler, drive load, wait (for
//! `--duration`, the load, or `num_steps`), stop, wait until the trace files stop growing,
//! then merge and analyze them ([`super::handoff`], the single hand-over to the rest of
//! rankprof). `capture start` and `capture stop` on their own are in [`super::startstop`].
//!
//! (Over ~500 lines: the capture steps.)

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use serde::Serialize;

use super::calls::{self, Call, WorkerRow};
use super::dialect::{self, Dialect};
use super::fanout::fan_out_with;
use super::flush::{self, Flushed};
use super::handoff::{merge_and_analyze, PostProcess};
use super::http::Http;
use super::options::Backend;
use super::options::{CaptureOptions, ProfileSettings, Targets};
use super::profiler::{self, Dirs};
use super::traffic::{self, LoadReport, Plan};
use super::window::{sleep_for, NumSteps, Watch};
use super::workers::{self, is_loopback, Worker};
use crate::exit;

pub(super) fn secs(s: f64) -> Duration {
    super::options::seconds(s)
}

/// Asks a server which dialect it speaks (`--backend auto`); `Err` is the failed probe.
pub(crate) fn probe(http: &Http, url: &str, timeout: Duration) -> Result<Dialect, Call> {
    let mut asked = Vec::new();
    for route in dialect::PROBE_SGLANG {
        let a = http.get(&format!("{url}{route}"), timeout);
        // No answer, or one that did not arrive whole: the server cannot be trusted to be
        // either.
        if a.failure.is_some() {
            return Err(Call::from_answer(route, &a, false, String::new()));
        }
        if let Some(d) = dialect::detect(a.status, None) {
            return Ok(d);
        }
        asked.push((route, a.status));
    }
    let b = http.get(&format!("{url}{}", dialect::PROBE_MODELS), timeout);
    match dialect::detect(None, Some((b.status, &b.body))) {
        Some(d) => Ok(d),
        None => {
            let mut c = Call::from_answer(dialect::PROBE_MODELS, &b, false, String::new());
            let show =
                |s: Option<u16>| s.map_or_else(|| "no answer".to_string(), |s| s.to_string());
            asked.push((dialect::PROBE_MODELS, b.status));
            let asked: Vec<String> = asked
                .iter()
                .map(|(r, s)| format!("{r} {}", show(*s)))
                .collect();
            c.note = format!(
                "cannot tell SGLang from vLLM ({}): pass --backend",
                asked.join(", ")
            );
            Err(c)
        }
    }
}

pub(super) fn dialect_for(
    http: &Http,
    row: &mut WorkerRow,
    backend: Backend,
    timeout: Duration,
) -> Option<Dialect> {
    let d = match backend {
        Backend::Sglang => Dialect::Sglang,
        Backend::Vllm => Dialect::Vllm,
        Backend::Auto => match probe(http, &row.url, timeout) {
            Ok(d) => d,
            Err(c) => {
                row.probe = Some(c);
                return None;
            }
        },
    };
    row.backend = Some(d);
    Some(d)
}

/// Starts one server's profiler (probing its dialect first with `--backend auto`).
pub(crate) fn start_one(
    http: &Http,
    w: &Worker,
    t: &Targets,
    p: &ProfileSettings,
    dirs: &Dirs,
) -> WorkerRow {
    let timeout = secs(t.timeout);
    let mut row = WorkerRow::new(w);
    let Some(d) = dialect_for(http, &mut row, t.backend, timeout) else {
        return row;
    };
    let body = dialect::start_body(d, p, dirs.sglang.as_deref());
    let a = http.post(
        &format!("{}{}", w.url, dialect::START),
        body.as_ref(),
        timeout,
    );
    let v = match a.status {
        Some(s) => dialect::start_verdict(d, s, &a.body, dirs.of(d)),
        None => dialect::Verdict {
            ok: false,
            note: String::new(),
        },
    };
    let mut note = v.note;
    if d == Dialect::Vllm && v.ok && p.start_step.is_some() {
        note = "--start-step not sent: vLLM's delay_iterations counts from the start request \
                (set it in --profiler-config)"
            .into();
    }
    row.start = Some(Call::from_answer(dialect::START, &a, v.ok, note));
    row
}

/// Stops one server's profiler: `/stop_profile`, SGLang's `/end_profile` after a 404.
pub(crate) fn stop_one(
    http: &Http,
    row: &mut WorkerRow,
    backend: Backend,
    auto_stop: Option<u64>,
    timeout: Duration,
    dirs: &Dirs,
) {
    let d = match row.backend {
        Some(d) => d,
        None => match dialect_for(http, row, backend, timeout) {
            Some(d) => d,
            None => return,
        },
    };
    let mut route = dialect::STOP;
    loop {
        let a = http.post(&format!("{}{route}", row.url), None, timeout);
        let Some(status) = a.status else {
            row.stop = Some(Call::from_answer(route, &a, false, String::new()));
            return;
        };
        if dialect::retry_stop_on_old_route(d, route, status) {
            route = dialect::STOP_OLD;
            continue;
        }
        let v = dialect::stop_verdict(d, status, &a.body, auto_stop, dirs.of(d));
        row.stop = Some(Call::from_answer(route, &a, v.ok, v.note));
        return;
    }
}

/// Calls `f` on every worker at once; a wait longer than `t.notice_after` names the servers
/// still awaited.
pub(super) fn each_worker<R: Send>(
    found: &[Worker],
    label: &str,
    t: &Targets,
    f: impl Fn(&Worker) -> R + Sync,
) -> Vec<R> {
    fan_out_with(
        found,
        label,
        secs(t.notice_after),
        |w: &Worker| w.url.clone(),
        f,
    )
}

/// The result of `capture run`.
#[derive(Debug, Serialize)]
pub struct RunOutcome {
    pub command: &'static str,
    pub router: Option<String>,
    pub workers: Vec<WorkerRow>,
    pub load: Option<LoadReport>,
    pub traces: Vec<Flushed>,
    /// Where the traces of this capture are (the step folder with `--step`).
    pub trace_dir: Option<PathBuf>,
    pub post: Option<PostProcess>,
    pub notes: Vec<String>,
    /// How it ended (serialized as its exit code).
    #[serde(rename = "exit_code")]
    pub outcome: exit::Outcome,
}

/// Where load goes: the router, else every started server, round-robin.
fn load_plan(
    http: &Http,
    a: &CaptureOptions,
    router: Option<&str>,
    rows: &[WorkerRow],
) -> Result<Plan, String> {
    let started: Vec<(String, Dialect)> = rows
        .iter()
        .filter(|r| r.start.as_ref().is_some_and(|c| c.ok))
        .filter_map(|r| r.backend.map(|d| (r.url.clone(), d)))
        .collect();
    let Some((_, first)) = started.first().cloned() else {
        return Err("no server started".into());
    };
    let mut model = a.model.clone();
    if model.is_none() {
        // Ask a server, not the router: a router may not know the served model name.
        if let Some((base, _)) = started.iter().find(|(_, d)| *d == Dialect::Vllm) {
            let url = format!("{base}{}", dialect::PROBE_MODELS);
            model = dialect::first_model(&http.get(&url, secs(a.targets.timeout)).body);
            if model.is_none() {
                return Err(format!(
                    "cannot read the model name from {url}: pass --model"
                ));
            }
        }
    }
    let targets = match router {
        Some(r) => vec![(r.to_string(), first)],
        None => started,
    };
    let timeout = secs(a.targets.timeout.max(300.0));
    Ok(Plan {
        targets,
        model,
        requests: a.requests,
        concurrency: a.concurrency.unwrap_or(32).max(1),
        prompt: a.prompt.clone(),
        max_tokens: a.max_tokens,
        timeout,
    })
}

/// `capture run`: the capture's steps in order (start, load and wait, stop, flush, move,
/// hand-off), as docs/capture.md lists them.
pub fn run(a: &CaptureOptions) -> Result<RunOutcome> {
    let p = &profiler::settings(a.profiler, &a.profile)?;
    if p.output_dir.is_none() && !a.no_merge {
        bail!("capture run needs --output-dir: a directory the servers write to and this machine can read (or --no-merge)");
    }
    if a.requests == 0 && a.duration.is_none() && p.num_steps.is_none() {
        bail!("capture run needs to know when to stop: give --requests N, --duration SECS or --num-steps N");
    }
    let http = Http::for_targets(&a.targets);
    let found = workers::resolve(&http, &a.targets)?;
    let dirs = Dirs::new(p)?;
    let mut notes = found.notes.clone();
    let steps = Steps {
        a,
        p,
        all_local: found.workers.iter().all(|w| is_loopback(&w.url)),
        // Snapshot before starting: files already there are not this capture's.
        watches: profiler::watches(a.profiler, &dirs),
        sent: profiler::request_dirs(a.profiler, &dirs),
        http,
    };

    let mut rows = each_worker(&found.workers, "start", &a.targets, |w| {
        start_one(&steps.http, w, &a.targets, p, &steps.sent)
    });
    notes.extend(profiler::start_notes(a.profiler, &rows));
    let load = steps.drive_and_stop(&mut rows, found.router.as_deref(), &mut notes);
    let mut code = calls::outcome(&rows);
    let mut traces = steps.wait_for_files(&rows, &mut notes, &mut code);
    move_into_step(&dirs, &mut traces)?;
    let trace_dir = profiler::trace_dir(a.profiler, &dirs);
    let post = if a.no_merge {
        None
    } else {
        hand_off(trace_dir.as_deref(), &traces, &mut notes, &mut code)
    };
    if let Some(l) = &load {
        load_verdict(l, &mut notes, &mut code);
    }
    Ok(RunOutcome {
        command: "capture run",
        router: found.router,
        workers: rows,
        load,
        traces,
        trace_dir,
        post,
        notes,
        outcome: code,
    })
}

/// What the steps of one `capture run` share.
struct Steps<'a> {
    a: &'a CaptureOptions,
    p: &'a ProfileSettings,
    http: Http,
    /// Every server on this machine: the folders they write to are this machine's.
    all_local: bool,
    /// The trace folders, as they were before the start.
    watches: Vec<Watch>,
    /// The folders the servers are asked to write into.
    sent: Dirs,
}

impl Steps<'_> {
    /// Whether Ctrl-C was pressed.
    fn interrupted(&self) -> bool {
        self.a
            .interrupt
            .as_ref()
            .is_some_and(|f| f.load(Ordering::SeqCst))
    }

    /// The settle time and the flush timeout of the waits for files.
    fn flush_waits(&self) -> (Duration, Duration) {
        (secs(self.a.settle), secs(self.a.flush_timeout))
    }

    /// Where some server started profiling: drives the load (if asked), waits (for
    /// `--duration`, the load, or `num_steps`), then stops every server that needs it. The
    /// load's report, if there was load.
    fn drive_and_stop(
        &self,
        rows: &mut [WorkerRow],
        router: Option<&str>,
        notes: &mut Vec<String>,
    ) -> Option<LoadReport> {
        let a = self.a;
        let started = rows
            .iter()
            .filter(|r| r.start.as_ref().is_some_and(|c| c.ok))
            .count();
        if started == 0 {
            notes.push("no server started profiling".into());
            return None;
        }
        let plan = if a.requests > 0 {
            match load_plan(&self.http, a, router, rows) {
                Ok(plan) => Some(plan),
                Err(e) => {
                    notes.push(format!("load skipped: {e}"));
                    None
                }
            }
        } else {
            None
        };
        let interrupted = || self.interrupted();
        let cancel = AtomicBool::new(false);
        std::thread::scope(|s| {
            let handle = plan
                .as_ref()
                .map(|plan| s.spawn(|| traffic::drive(&self.http, plan, &cancel)));
            if let Some(d) = a.duration {
                sleep_for(secs(d), &interrupted);
                cancel.store(true, Ordering::Relaxed);
            } else if let Some(h) = handle.as_ref() {
                while !h.is_finished() && !interrupted() {
                    std::thread::sleep(Duration::from_millis(50));
                }
            } else if self.p.num_steps.is_some() {
                // No load of our own: wait until the servers have profiled num_steps (vLLM's
                // max_iterations) and written them.
                let (settle, flush_timeout) = self.flush_waits();
                let w = NumSteps {
                    by_stage: self.p.profile_by_stage,
                    all_local: self.all_local,
                    settle,
                    flush_timeout,
                };
                notes.extend(w.wait(&self.watches, rows, &interrupted));
            }
            self.stop_all(rows);
            cancel.store(true, Ordering::Relaxed);
            handle.and_then(|h| h.join().ok())
        })
    }

    /// Sends the stop to every server that needs it, at once.
    fn stop_all(&self, rows: &mut [WorkerRow]) {
        let a = self.a;
        let needs_stop: Vec<usize> = (0..rows.len()).filter(|&i| rows[i].needs_stop()).collect();
        let stopped = fan_out_with(
            &needs_stop,
            "stop",
            secs(a.targets.notice_after),
            |&i| rows[i].url.clone(),
            |&i| {
                let mut r = rows[i].clone();
                // A server that did not answer the start in time gets the short timeout.
                let started = r.start.as_ref().is_some_and(|c| c.ok);
                let t = if started {
                    secs(a.stop_timeout)
                } else {
                    secs(a.targets.timeout)
                };
                stop_one(
                    &self.http,
                    &mut r,
                    a.targets.backend,
                    self.p.num_steps,
                    t,
                    &self.sent,
                );
                r
            },
        );
        for (i, r) in needs_stop.into_iter().zip(stopped) {
            rows[i] = r;
        }
    }

    /// Waits for the files of every server that stopped, folder by folder; none after a
    /// Ctrl-C (the stops are all sent) or with `--no-merge`.
    fn wait_for_files(
        &self,
        rows: &[WorkerRow],
        notes: &mut Vec<String>,
        code: &mut exit::Outcome,
    ) -> Vec<Flushed> {
        // Read once: a Ctrl-C during the stops also skips the wait.
        if self.interrupted() {
            notes.push(
                "interrupted (Ctrl-C): the started servers were sent the stop; their traces were \
                 not waited for (merge them later with `rankprof merge`)"
                    .into(),
            );
            *code = code.worst(exit::Outcome::Failed);
            return Vec::new();
        }
        if self.a.no_merge {
            return Vec::new();
        }
        let mut traces = Vec::new();
        for w in &self.watches {
            let expect = rows
                .iter()
                .filter(|r| w.serves(r) && r.stop.as_ref().is_some_and(|c| c.ok))
                .count();
            if expect == 0 {
                continue;
            }
            if !w.dir.is_dir() && !self.all_local {
                notes.push(format!(
                    "{} is not on this machine: the traces stay on the servers (use a shared directory to collect them)",
                    w.dir.display()
                ));
                continue;
            }
            let f = w.wait(expect, self.flush_waits(), |_: &Path| true, &|| false);
            if !f.complete {
                let what = match w.files {
                    flush::Files::Traces => "trace files",
                    flush::Files::NsysReports => "Nsight Systems reports",
                };
                notes.push(format!(
                    "only {} {what} (of at least {expect}) appeared in {} within --flush-timeout{}",
                    f.rank_files(),
                    w.dir.display(),
                    w.missing_hint()
                ));
                *code = code.worst(exit::Outcome::Failed);
            }
            traces.push(f);
        }
        traces
    }
}

/// vLLM writes into its own directory: this capture's files are moved into the step folder.
fn move_into_step(dirs: &Dirs, traces: &mut [Flushed]) -> Result<()> {
    let Some(step) = &dirs.step else {
        return Ok(());
    };
    for f in traces
        .iter_mut()
        .filter(|f| Some(&f.dir) != dirs.sglang.as_ref())
    {
        std::fs::create_dir_all(step)
            .with_context(|| format!("cannot create {}", step.display()))?;
        for (path, _) in f.files.iter_mut() {
            let Some(name) = path.file_name() else {
                continue;
            };
            let to = step.join(name);
            std::fs::rename(&*path, &to)
                .with_context(|| format!("cannot move {} to {}", path.display(), to.display()))?;
            *path = to;
        }
        f.dir = step.clone();
    }
    Ok(())
}

/// The capture's rank files merged and analyzed in `trace_dir` ([`merge_and_analyze`]), when
/// there are any.
fn hand_off(
    trace_dir: Option<&Path>,
    traces: &[Flushed],
    notes: &mut Vec<String>,
    code: &mut exit::Outcome,
) -> Option<PostProcess> {
    if !traces.iter().any(|f| f.rank_files() > 0) {
        return None;
    }
    let dir = trace_dir?;
    let files: Vec<PathBuf> = traces
        .iter()
        .flat_map(|f| f.files.iter().map(|(p, _)| p.clone()))
        .filter(|p| !crate::trace::is_merged_trace(p))
        .collect();
    let pp = merge_and_analyze(dir, &files);
    notes.extend(pp.notes());
    *code = code.worst(pp.outcome());
    Some(pp)
}

/// What the load's failures say: a note, and a failed capture when every request failed
/// (the profile is of a server without the load it was for).
fn load_verdict(l: &LoadReport, notes: &mut Vec<String>, code: &mut exit::Outcome) {
    if l.failed > 0 {
        notes.push(format!(
            "{} of {} load requests failed; first: {}",
            l.failed,
            l.sent,
            l.first_error.as_deref().unwrap_or("?")
        ));
    }
    if l.sent > 0 && l.failed == l.sent {
        *code = code.worst(exit::Outcome::Failed);
    }
}
