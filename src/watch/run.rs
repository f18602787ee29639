//! The watch loop: find the workers once, then every `interval` poll them all, stream the poll
//! to the timeline, update the sparkline history and the triggers, and report the poll. When a
//! trigger fires (and no capture is running, the cooldown is over, and fewer than
//! `max_captures` ran), a capture starts on its own thread through
//! [`crate::capture::session::run`] while polling goes on, so the timeline covers the capture
//! window. The loop ends at `duration`, `max_polls`, the stop flag (Ctrl-C), or once the last
//! allowed capture is done; a capture still running is waited for (it stops its profilers
//! itself).

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use serde_json::json;

use super::poll::{Poll, Poller, Status};
use super::trigger::{Armed, Fired};
use super::{
    CaptureRecord, Event, ViewState, WatchOptions, WatchOutcome, WorkerTally, DEFAULT_CAPTURE_SECS,
};
use crate::capture::http::Http;
use crate::capture::profiler::{self, Dirs};
use crate::capture::session::{self, RunOutcome};
use crate::capture::{workers, CaptureOptions};
use crate::exit;
use crate::load::timeline::{self, now_ns, History, Writer};
use crate::trace::Ns;

fn secs(s: f64) -> Duration {
    Duration::try_from_secs_f64(s).unwrap_or(Duration::from_millis(1))
}

/// Rejects settings no watch can honour (usage errors).
fn validate(o: &WatchOptions) -> Result<()> {
    if !(o.interval.is_finite() && o.interval >= 0.01) {
        bail!("--interval must be at least 0.01 s");
    }
    if let Some(t) = o.poll_timeout {
        if !(t.is_finite() && t > 0.0) {
            bail!("--poll-timeout must be a positive number of seconds");
        }
    }
    if !(o.max_capture_secs.is_finite() && o.max_capture_secs > 0.0) {
        bail!("--max-capture-secs must be a positive number of seconds");
    }
    if !(o.cooldown.is_finite() && o.cooldown >= 0.0) {
        bail!("--cooldown must be 0 or more seconds");
    }
    let wants_capture = (o.trigger_now || !o.triggers.is_empty()) && o.max_captures > 0;
    if wants_capture && o.capture.profile.output_dir.is_none() {
        bail!("a trigger captures a profile: give --output-dir (a directory the servers write to and this machine can read)");
    }
    Ok(())
}

/// The capture a trigger runs: the watch's targets, no load of its own, profiling at most
/// `max_capture_secs`.
pub(crate) fn capture_options(o: &WatchOptions) -> CaptureOptions {
    let mut c = o.capture.clone();
    c.targets = o.targets.clone();
    c.requests = 0;
    let cap = o.max_capture_secs;
    match (c.duration, c.profile.num_steps) {
        (Some(d), _) => c.duration = Some(d.min(cap)),
        // SGLang stops by itself after num_steps; the wait for that is cut to the cap.
        (None, Some(_)) => c.flush_timeout = c.flush_timeout.min(cap),
        (None, None) => c.duration = Some(DEFAULT_CAPTURE_SECS.min(cap)),
    }
    c
}

/// Where the timeline goes: `--timeline`, else `watch-<UTC>.jsonl` where this watch's captures
/// put their traces (so merge and analyze find it beside them); and a note when `--timeline`
/// puts it elsewhere.
fn timeline_path(o: &WatchOptions, t_ns: i64) -> Result<(Option<PathBuf>, Option<String>)> {
    let dirs = Dirs::new(&o.capture.profile)?;
    let trace_dir = profiler::trace_dir(o.capture.profiler, &dirs);
    let Some(p) = &o.timeline else {
        return Ok((trace_dir.map(|d| timeline::default_path(&d, t_ns)), None));
    };
    let parent = p
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(std::path::Path::new("."));
    let note = match (&trace_dir, std::path::absolute(parent)) {
        (Some(d), Ok(abs)) if *d != abs => Some(format!(
            "the timeline {} is not beside the traces ({}): merge and analyze will not find it",
            p.display(),
            d.display()
        )),
        _ => None,
    };
    Ok((Some(p.clone()), note))
}

/// Writes one line to the timeline; on an error, notes it and stops writing.
fn put(tl: &mut Option<Writer>, line: &str, notes: &mut Vec<String>) {
    if let Some(w) = tl.as_mut() {
        if let Err(e) = w.line(line) {
            notes.push(format!(
                "cannot write the timeline {}: {e}",
                w.path.display()
            ));
            *tl = None;
        }
    }
}

struct Running {
    n: u32,
    fired: Fired,
    started_ns: i64,
    handle: JoinHandle<Result<RunOutcome>>,
}

fn finish(r: Running) -> CaptureRecord {
    let (outcome, error) = match r.handle.join() {
        Ok(Ok(o)) => (Some(o), None),
        Ok(Err(e)) => (None, Some(format!("{e:#}"))),
        Err(_) => (None, Some("the capture thread panicked".to_string())),
    };
    CaptureRecord {
        n: r.n,
        fired: r.fired,
        started_ns: Ns::new(r.started_ns),
        ended_ns: Ns::new(now_ns()),
        ended: outcome
            .as_ref()
            .map_or(exit::Outcome::Failed, |o| o.outcome),
        error,
        outcome,
    }
}

fn capture_line(rec: &CaptureRecord) -> String {
    let o = rec.outcome.as_ref();
    json!({"kind": "capture", "n": rec.n, "phase": "done", "t_ns": rec.ended_ns,
           "time": timeline::utc(rec.ended_ns.get()), "exit_code": rec.ended, "error": rec.error,
           "trace_dir": o.and_then(|o| o.trace_dir.clone()),
           "merged": o.and_then(|o| o.post.as_ref()).map(|p| p.merged.clone()).unwrap_or_default()})
    .to_string()
}

/// Watches until an end condition; see the module doc.
pub fn watch(o: &WatchOptions, on: &mut dyn FnMut(Event<'_>)) -> Result<WatchOutcome> {
    validate(o)?;
    let http = Http::for_targets(&o.targets);
    let found = workers::resolve(&http, &o.targets)?;
    let start_ns = now_ns();
    let mut notes = found.notes.clone();
    let (path, note) = timeline_path(o, start_ns)?;
    notes.extend(note);
    let tl = match &path {
        Some(p) => Some(Writer::create(p)?),
        None => {
            notes.push("no --output-dir or --timeline: the polls are not kept".into());
            None
        }
    };
    let poll_timeout = o.poll_timeout.unwrap_or(o.interval / 2.0).min(o.interval);
    let urls: Vec<String> = found.workers.iter().map(|w| w.url.clone()).collect();
    let mut w = Watch::new(o, tl, notes, &urls);
    let header = json!({"kind": "watch", "version": 1, "t_ns": start_ns, "time": timeline::utc(start_ns),
        "interval_s": o.interval, "poll_timeout_s": poll_timeout, "router": found.router,
        "workers": found.workers.iter().map(|w| json!({"url": w.url, "dp_ranks": w.dp_ranks})).collect::<Vec<_>>(),
        "triggers": o.triggers.iter().map(ToString::to_string).collect::<Vec<_>>(),
        "trigger_now": o.trigger_now})
    .to_string();
    w.put(&header);
    on(Event::Started {
        workers: &found.workers,
        router: found.router.as_deref(),
        timeline: path.as_deref(),
        notes: &w.notes,
        line: &header,
    });
    let mut poller = Poller::start(&http, &urls, o.targets.backend, secs(poll_timeout));
    let t0 = Instant::now();
    let reason = loop {
        if let Some(reason) = w.end_reason(t0) {
            break reason;
        }
        let p = poller.poll(w.seq);
        w.seq += 1;
        let line = p.json_line();
        w.put(&line);
        w.take_in(&p);
        let fire = w.fire(&p);
        let cooldown_left = w.cooldown_left();
        let may_fire = w.may_fire(cooldown_left);
        on(Event::Poll {
            state: w.view(&p, cooldown_left),
            line: &line,
        });
        if let (Some(f), true) = (fire, may_fire) {
            w.start_capture(f, p.seq, on);
        }
        w.sleep_until(t0 + secs(o.interval * w.seq as f64), on);
    };
    if let Some(r) = w.running.take() {
        on(Event::Waiting { n: r.n });
        w.done(r, on);
    }
    drop(poller);
    Ok(w.end(reason, found.router, path, on))
}

/// One watch under way: what the loop carries from one poll to the next.
struct Watch<'o> {
    o: &'o WatchOptions,
    tl: Option<Writer>,
    notes: Vec<String>,
    tallies: Vec<WorkerTally>,
    history: History,
    armed: Vec<Armed>,
    /// A trigger (or `--trigger-now`) may start captures.
    wants_capture: bool,
    copts: CaptureOptions,
    running: Option<Running>,
    records: Vec<CaptureRecord>,
    fired: Vec<Fired>,
    /// Captures started.
    started: u32,
    last_end: Option<Instant>,
    /// Polls made.
    seq: u64,
}

impl<'o> Watch<'o> {
    fn new(o: &'o WatchOptions, tl: Option<Writer>, notes: Vec<String>, urls: &[String]) -> Self {
        let interval_ns = (o.interval * 1e9) as i64;
        Watch {
            o,
            tl,
            notes,
            tallies: urls
                .iter()
                .map(|u| WorkerTally {
                    url: u.clone(),
                    ..WorkerTally::default()
                })
                .collect(),
            history: History::new((o.spark_window * 1e9) as i64, interval_ns),
            armed: o.triggers.iter().cloned().map(Armed::new).collect(),
            wants_capture: (o.trigger_now || !o.triggers.is_empty()) && o.max_captures > 0,
            copts: capture_options(o),
            running: None,
            records: Vec::new(),
            fired: Vec::new(),
            started: 0,
            last_end: None,
            seq: 0,
        }
    }

    /// Writes one line to the timeline ([`put`]).
    fn put(&mut self, line: &str) {
        put(&mut self.tl, line, &mut self.notes);
    }

    fn stopped(&self) -> bool {
        self.o
            .stop
            .as_ref()
            .is_some_and(|s| s.load(Ordering::SeqCst))
    }

    /// Why the watch ends before the next poll, if it does: the stop flag, `max_polls`,
    /// `duration` (from `t0`), or the last allowed capture done.
    fn end_reason(&self, t0: Instant) -> Option<&'static str> {
        let o = self.o;
        if self.stopped() {
            Some("interrupted")
        } else if o.max_polls.is_some_and(|m| self.seq >= m) {
            Some("max-polls")
        } else if o
            .duration
            .is_some_and(|d| Instant::now() >= t0 + secs(d.max(0.0)))
        {
            Some("duration")
        } else if self.wants_capture && self.running.is_none() && self.started >= o.max_captures {
            Some("max-captures")
        } else {
            None
        }
    }

    /// A poll taken into the workers' tallies and the sparklines' history.
    fn take_in(&mut self, p: &Poll) {
        for (w, t) in p.workers.iter().zip(self.tallies.iter_mut()) {
            match w.status {
                Status::Ok => t.ok += 1,
                Status::Dead => t.dead += 1,
                Status::Timeout => t.timeout += 1,
                Status::Error => t.error += 1,
            }
            if w.error.is_some() {
                t.last_error = w.error.clone();
            }
        }
        for (i, w) in p.workers.iter().enumerate() {
            if w.status == Status::Ok {
                for r in &w.ranks {
                    self.history
                        .push(i, r.dp, p.t_ns.get(), r.get(self.o.spark));
                }
            }
        }
    }

    /// The trigger that fires at this poll: the first of those that fire (every trigger sees
    /// the poll), or `--trigger-now` at the first poll.
    fn fire(&mut self, p: &Poll) -> Option<Fired> {
        let mut fire: Option<Fired> = None;
        for a in self.armed.iter_mut() {
            if let Some(f) = a.observe(p.t_ns.get(), p.ranks()) {
                fire.get_or_insert(f);
            }
        }
        if self.o.trigger_now && self.started == 0 && self.seq == 1 {
            fire = Some(Fired {
                trigger: "--trigger-now".into(),
                value: f64::NAN,
                t_ns: p.t_ns,
                held_ns: Ns::ZERO,
            });
        }
        fire
    }

    /// Seconds of the cooldown after the last capture still to run.
    fn cooldown_left(&self) -> Option<f64> {
        self.last_end
            .map(|e| self.o.cooldown - e.elapsed().as_secs_f64())
            .filter(|l| *l > 0.0)
    }

    /// Whether a trigger may start a capture now: none running, fewer than `max_captures`
    /// started, the cooldown over.
    fn may_fire(&self, cooldown_left: Option<f64>) -> bool {
        self.wants_capture
            && self.running.is_none()
            && self.started < self.o.max_captures
            && cooldown_left.is_none()
    }

    /// What the view shows after poll `p`.
    fn view<'a>(&'a self, p: &'a Poll, cooldown_left: Option<f64>) -> ViewState<'a> {
        let o = self.o;
        ViewState {
            poll: p,
            history: &self.history,
            triggers: &self.armed,
            spark: o.spark,
            spark_window: o.spark_window,
            interval: o.interval,
            captures: self.started,
            max_captures: o.max_captures,
            capturing: self.running.as_ref().map(|r| r.n),
            cooldown_left,
        }
    }

    /// Starts a capture on its own thread for trigger `f` (fired at poll `seq`); the
    /// triggers are re-armed.
    fn start_capture(&mut self, f: Fired, seq: u64, on: &mut dyn FnMut(Event<'_>)) {
        self.started += 1;
        let n = self.started;
        let line = json!({"kind": "trigger", "t_ns": f.t_ns, "seq": seq, "trigger": f.trigger,
                          "value": f.value, "held_ns": f.held_ns, "capture": n})
        .to_string();
        self.put(&line);
        on(Event::Fired {
            fired: &f,
            n,
            line: &line,
        });
        for a in self.armed.iter_mut() {
            a.reset();
        }
        let c = self.copts.clone();
        let started_ns = now_ns();
        let begin = json!({"kind": "capture", "n": n, "phase": "start", "t_ns": started_ns,
                           "time": timeline::utc(started_ns)})
        .to_string();
        self.put(&begin);
        self.fired.push(f.clone());
        self.running = Some(Running {
            n,
            fired: f,
            started_ns,
            handle: std::thread::spawn(move || session::run(&c)),
        });
    }

    /// Sleeps until `next` (the next poll's time) or the stop flag, taking in a capture that
    /// finishes meanwhile.
    fn sleep_until(&mut self, next: Instant, on: &mut dyn FnMut(Event<'_>)) {
        loop {
            if self
                .running
                .as_ref()
                .is_some_and(|r| r.handle.is_finished())
            {
                if let Some(r) = self.running.take() {
                    self.done(r, on);
                    self.last_end = Some(Instant::now());
                }
            }
            let now = Instant::now();
            if now >= next || self.stopped() {
                break;
            }
            std::thread::sleep((next - now).min(Duration::from_millis(20)));
        }
    }

    /// A capture's end (waited for), written to the timeline, reported and kept.
    fn done(&mut self, r: Running, on: &mut dyn FnMut(Event<'_>)) {
        let rec = finish(r);
        let line = capture_line(&rec);
        self.put(&line);
        on(Event::CaptureDone {
            record: &rec,
            line: &line,
        });
        self.records.push(rec);
    }

    /// The end line and what the watch comes to.
    fn end(
        mut self,
        reason: &'static str,
        router: Option<String>,
        timeline: Option<PathBuf>,
        on: &mut dyn FnMut(Event<'_>),
    ) -> WatchOutcome {
        if self.wants_capture && self.started == 0 {
            self.notes
                .push("no trigger fired: nothing was captured".into());
        }
        let end_ns = now_ns();
        let end = json!({"kind": "end", "t_ns": end_ns, "time": timeline::utc(end_ns),
                         "polls": self.seq, "reason": reason})
        .to_string();
        self.put(&end);
        on(Event::Ended { reason, line: &end });
        let outcome = self
            .records
            .iter()
            .fold(exit::Outcome::Ok, |c, r| c.worst(r.ended));
        WatchOutcome {
            router,
            workers: self.tallies,
            polls: self.seq,
            timeline,
            fired: self.fired,
            captures: self.records,
            end_reason: reason.to_string(),
            notes: self.notes,
            outcome,
        }
    }
}
