//! `rankprof watch`: arguments → [`WatchOptions`] (the trigger strings parsed here, so a bad one
//! is a usage error naming its column), Ctrl-C, the live view, the capture outcomes printed as
//! `capture run` prints them, the exit code (0 ok; 1 a capture failed; 2 usage or no workers;
//! 3 a capture merged damaged input).
//!
//! Output: on a terminal (and without `--json`) a table redrawn in place after every poll
//! ([`crate::report::watch`]); otherwise one JSON line per poll on stdout (the timeline's lines,
//! and one line per trigger and capture, the capture's with its whole outcome).
//!
//! Ctrl-C comes through the `ctrlc` crate: small, widely used and kept up, portable (a SIGINT
//! handler on Unix, a console handler on Windows), and its handler runs on its own thread, so
//! it can simply set the flag the watch loop checks between polls. The first Ctrl-C ends the
//! watch after the current poll (a capture in flight is finished: it stops its profilers); a
//! second one exits at once with 130.

use std::io::{IsTerminal, Write};
use std::sync::atomic::Ordering;

use anyhow::{anyhow, Result};
use serde_json::json;

use crate::capture::CaptureOptions;
use crate::cli::watch::WatchArgs;
use crate::watch::{self, trigger, Event, Metric, WatchOptions};

/// The library's options from the command line.
pub fn options(a: &WatchArgs) -> Result<WatchOptions> {
    let triggers = a
        .trigger
        .iter()
        .map(|t| trigger::parse(t).map_err(|e| anyhow!("{e}")))
        .collect::<Result<Vec<_>>>()?;
    let spark = Metric::from_name(&a.spark).ok_or_else(|| {
        anyhow!(
            "--spark {:?}: expected running, waiting, tokens, token_usage or throughput",
            a.spark
        )
    })?;
    let targets = super::capture::targets(&a.targets);
    Ok(WatchOptions {
        capture: CaptureOptions {
            targets: targets.clone(),
            profile: super::capture::profile(&a.profile),
            duration: a.capture_duration,
            flush_timeout: a.flush_timeout,
            settle: a.settle,
            stop_timeout: a.stop_timeout,
            ..CaptureOptions::default()
        },
        targets,
        interval: a.interval,
        poll_timeout: a.poll_timeout,
        duration: a.duration,
        max_polls: a.max_polls,
        triggers,
        trigger_now: a.trigger_now,
        cooldown: a.cooldown,
        max_captures: a.max_captures,
        max_capture_secs: a.max_capture_secs,
        timeline: a.timeline.clone(),
        spark,
        ..WatchOptions::default()
    })
}

/// Prints the events: a live table on a terminal, JSON lines otherwise.
struct Printer {
    json: bool,
    /// Lines of the table last drawn (to redraw it in place).
    drawn: usize,
    width: usize,
}

impl Printer {
    fn out(&self, s: &str) {
        let mut o = std::io::stdout().lock();
        let _ = o.write_all(s.as_bytes());
        let _ = o.flush();
    }

    fn event(&mut self, e: Event<'_>) {
        match e {
            Event::Started {
                workers,
                router,
                timeline,
                notes,
                line,
            } => {
                for n in notes {
                    eprintln!("note: {n}");
                }
                if self.json {
                    self.out(&format!("{line}\n"));
                    return;
                }
                let dps: usize = workers.iter().map(|w| w.dp_ranks.len().max(1)).sum();
                eprintln!(
                    "watching {} workers{}{}",
                    workers.len(),
                    router.map(|r| format!(" behind {r}")).unwrap_or_default(),
                    if dps > workers.len() {
                        format!(" ({dps} DP workers listed)")
                    } else {
                        String::new()
                    }
                );
                if let Some(t) = timeline {
                    eprintln!("timeline: {}", t.display());
                }
            }
            Event::Poll { state, line } => {
                if self.json {
                    self.out(&format!("{line}\n"));
                } else if state.capturing.is_none() {
                    let text = crate::report::watch::render(&state, self.width);
                    let up = if self.drawn > 0 {
                        format!("\x1b[{}A\x1b[J", self.drawn)
                    } else {
                        String::new()
                    };
                    self.drawn = text.lines().count();
                    self.out(&format!("{up}{text}"));
                }
            }
            Event::Fired { fired, n, line } => {
                if self.json {
                    self.out(&format!("{line}\n"));
                } else {
                    self.out(&format!(
                        "trigger fired: {} (value {:.2}, held {:.1} s): capture {n} starts\n",
                        fired.trigger,
                        fired.value,
                        fired.held_ns.get() as f64 / 1e9
                    ));
                    self.drawn = 0;
                }
            }
            Event::Waiting { n } => {
                eprintln!("waiting for capture {n} to finish (it stops the profilers itself)…");
            }
            Event::CaptureDone { record, line } => {
                if self.json {
                    let mut v: serde_json::Value =
                        serde_json::from_str(line).unwrap_or_else(|_| json!({}));
                    v["outcome"] = json!(record.outcome);
                    self.out(&format!("{v}\n"));
                } else {
                    match (&record.outcome, &record.error) {
                        (Some(o), _) => {
                            if let Err(e) = super::capture::print_run(o, false) {
                                eprintln!("error: {e:#}");
                            }
                        }
                        (None, e) => eprintln!(
                            "capture {} failed: {}",
                            record.n,
                            e.as_deref().unwrap_or("?")
                        ),
                    }
                    self.drawn = 0;
                }
            }
            Event::Ended { line, .. } => {
                if self.json {
                    self.out(&format!("{line}\n"));
                }
            }
        }
    }
}

/// Runs `rankprof watch`; the exit code is the worst capture's (0 when none ran).
pub(crate) fn run(a: &WatchArgs) -> Result<i32> {
    let mut opts = options(a)?;
    if let Some(flag) = super::interrupt::ctrl_c("stopping after this poll") {
        flag.store(false, Ordering::SeqCst);
        opts.stop = Some(flag);
    }
    let tty = std::io::stdout().is_terminal();
    // The terminal's width (a pseudo-terminal may say 0: then 160).
    let width = comfy_table::Table::new()
        .width()
        .filter(|w| *w >= 20)
        .map_or(160, usize::from);
    let mut p = Printer {
        json: a.targets.json || !tty,
        drawn: 0,
        width,
    };
    let o = watch::watch(&opts, &mut |e| p.event(e))?;
    eprint!("{}", crate::report::watch::summary(&o));
    Ok(o.outcome.code())
}
