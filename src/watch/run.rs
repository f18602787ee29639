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

use super::poll::{Poller, Status};
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
        started_ns: r.started_ns,
        ended_ns: now_ns(),
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
           "time": timeline::utc(rec.ended_ns), "exit_code": rec.ended, "error": rec.error,
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
    let mut tl = match &path {
        Some(p) => Some(Writer::create(p)?),
        None => {
            notes.push("no --output-dir or --timeline: the polls are not kept".into());
            None
        }
    };
    let poll_timeout = o.poll_timeout.unwrap_or(o.interval / 2.0).min(o.interval);
    let header = json!({"kind": "watch", "version": 1, "t_ns": start_ns, "time": timeline::utc(start_ns),
        "interval_s": o.interval, "poll_timeout_s": poll_timeout, "router": found.router,
        "workers": found.workers.iter().map(|w| json!({"url": w.url, "dp_ranks": w.dp_ranks})).collect::<Vec<_>>(),
        "triggers": o.triggers.iter().map(ToString::to_string).collect::<Vec<_>>(),
        "trigger_now": o.trigger_now})
    .to_string();
    put(&mut tl, &header, &mut notes);
    on(Event::Started {
        workers: &found.workers,
        router: found.router.as_deref(),
        timeline: path.as_deref(),
        notes: &notes,
        line: &header,
    });

    let urls: Vec<String> = found.workers.iter().map(|w| w.url.clone()).collect();
    let mut poller = Poller::start(&http, &urls, o.targets.backend, secs(poll_timeout));
    let mut tallies: Vec<WorkerTally> = urls
        .iter()
        .map(|u| WorkerTally {
            url: u.clone(),
            ..WorkerTally::default()
        })
        .collect();
    let interval_ns = (o.interval * 1e9) as i64;
    let mut history = History::new((o.spark_window * 1e9) as i64, interval_ns);
    let mut armed: Vec<Armed> = o.triggers.iter().cloned().map(Armed::new).collect();
    let wants_capture = (o.trigger_now || !o.triggers.is_empty()) && o.max_captures > 0;
    let copts = capture_options(o);
    let mut running: Option<Running> = None;
    let mut records: Vec<CaptureRecord> = Vec::new();
    let mut fired_all: Vec<Fired> = Vec::new();
    let mut started = 0u32;
    let mut last_end: Option<Instant> = None;
    let t0 = Instant::now();
    let deadline = o.duration.map(|d| t0 + secs(d.max(0.0)));
    let stopped = || o.stop.as_ref().is_some_and(|s| s.load(Ordering::SeqCst));
    let mut seq = 0u64;

    let reason = loop {
        if stopped() {
            break "interrupted";
        }
        if o.max_polls.is_some_and(|m| seq >= m) {
            break "max-polls";
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            break "duration";
        }
        if wants_capture && running.is_none() && started >= o.max_captures {
            break "max-captures";
        }
        let p = poller.poll(seq);
        seq += 1;
        let line = p.json_line();
        put(&mut tl, &line, &mut notes);
        for (w, t) in p.workers.iter().zip(tallies.iter_mut()) {
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
                    history.push(i, r.dp, p.t_ns, r.get(o.spark));
                }
            }
        }
        let mut fire: Option<Fired> = None;
        for a in armed.iter_mut() {
            if let Some(f) = a.observe(p.t_ns, p.ranks()) {
                fire.get_or_insert(f);
            }
        }
        if o.trigger_now && started == 0 && seq == 1 {
            fire = Some(Fired {
                trigger: "--trigger-now".into(),
                value: f64::NAN,
                t_ns: p.t_ns,
                held_ns: 0,
            });
        }
        let cooldown_left = last_end
            .map(|e| o.cooldown - e.elapsed().as_secs_f64())
            .filter(|l| *l > 0.0);
        let may_fire = wants_capture
            && running.is_none()
            && started < o.max_captures
            && cooldown_left.is_none();
        on(Event::Poll {
            state: ViewState {
                poll: &p,
                history: &history,
                triggers: &armed,
                spark: o.spark,
                spark_window: o.spark_window,
                interval: o.interval,
                captures: started,
                max_captures: o.max_captures,
                capturing: running.as_ref().map(|r| r.n),
                cooldown_left,
            },
            line: &line,
        });
        if let (Some(f), true) = (fire, may_fire) {
            started += 1;
            let line =
                json!({"kind": "trigger", "t_ns": f.t_ns, "seq": p.seq, "trigger": f.trigger,
                              "value": f.value, "held_ns": f.held_ns, "capture": started})
                .to_string();
            put(&mut tl, &line, &mut notes);
            on(Event::Fired {
                fired: &f,
                n: started,
                line: &line,
            });
            for a in armed.iter_mut() {
                a.reset();
            }
            let c = copts.clone();
            let started_ns = now_ns();
            let begin =
                json!({"kind": "capture", "n": started, "phase": "start", "t_ns": started_ns,
                               "time": timeline::utc(started_ns)})
                .to_string();
            put(&mut tl, &begin, &mut notes);
            fired_all.push(f.clone());
            running = Some(Running {
                n: started,
                fired: f,
                started_ns,
                handle: std::thread::spawn(move || session::run(&c)),
            });
        }
        // Sleep until the next tick, noticing a finished capture and the stop flag.
        let next = t0 + secs(o.interval * seq as f64);
        loop {
            if running.as_ref().is_some_and(|r| r.handle.is_finished()) {
                if let Some(r) = running.take() {
                    let rec = finish(r);
                    let line = capture_line(&rec);
                    put(&mut tl, &line, &mut notes);
                    on(Event::CaptureDone {
                        record: &rec,
                        line: &line,
                    });
                    records.push(rec);
                    last_end = Some(Instant::now());
                }
            }
            let now = Instant::now();
            if now >= next || stopped() {
                break;
            }
            std::thread::sleep((next - now).min(Duration::from_millis(20)));
        }
    };
    if let Some(r) = running.take() {
        on(Event::Waiting { n: r.n });
        let rec = finish(r);
        let line = capture_line(&rec);
        put(&mut tl, &line, &mut notes);
        on(Event::CaptureDone {
            record: &rec,
            line: &line,
        });
        records.push(rec);
    }
    drop(poller);
    if wants_capture && started == 0 {
        notes.push("no trigger fired: nothing was captured".into());
    }
    let end_ns = now_ns();
    let end = json!({"kind": "end", "t_ns": end_ns, "time": timeline::utc(end_ns), "polls": seq,
                     "reason": reason})
    .to_string();
    put(&mut tl, &end, &mut notes);
    on(Event::Ended { reason, line: &end });
    let outcome = records
        .iter()
        .fold(exit::Outcome::Ok, |c, r| c.worst(r.ended));
    Ok(WatchOutcome {
        router: found.router,
        workers: tallies,
        polls: seq,
        timeline: path,
        fired: fired_all,
        captures: records,
        end_reason: reason.to_string(),
        notes,
        outcome,
    })
}
