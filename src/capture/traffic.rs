//! Load while profiling: N generation requests (`/generate` for SGLang, `/v1/completions` for
//! vLLM), a fixed number in flight at once, spread round-robin over the targets (the router
//! when there is one, so requests are balanced as in production).

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;

use super::dialect::{self, Dialect};
use super::http::Http;
use super::workers::excerpt;

/// What to send.
#[derive(Clone, Debug)]
pub(crate) struct Plan {
    /// Base urls and the dialect each speaks.
    pub(crate) targets: Vec<(String, Dialect)>,
    /// vLLM's model name.
    pub(crate) model: Option<String>,
    pub(crate) requests: u64,
    pub(crate) concurrency: usize,
    pub(crate) prompt: String,
    pub(crate) max_tokens: u64,
    pub(crate) timeout: Duration,
}

/// What happened.
#[derive(Clone, Debug, Default, Serialize)]
pub struct LoadReport {
    pub sent: u64,
    pub ok: u64,
    pub failed: u64,
    pub first_error: Option<String>,
    pub ms: u64,
}

/// Sends the requests; returns early (after the ones in flight) once `cancel` is set.
pub(crate) fn drive(http: &Http, plan: &Plan, cancel: &AtomicBool) -> LoadReport {
    let t0 = Instant::now();
    if plan.targets.is_empty() || plan.requests == 0 {
        return LoadReport::default();
    }
    let bar = ProgressBar::new(plan.requests);
    bar.set_style(
        ProgressStyle::with_template("{prefix:>8} [{bar:30}] {pos}/{len} requests")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    bar.set_prefix("load");
    let next = AtomicU64::new(0);
    let ok = AtomicU64::new(0);
    let failed = AtomicU64::new(0);
    let rr = AtomicUsize::new(0);
    let first_error: Mutex<Option<String>> = Mutex::new(None);
    let threads = plan.concurrency.clamp(1, 256).min(plan.requests as usize);
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                if cancel.load(Ordering::Relaxed)
                    || next.fetch_add(1, Ordering::Relaxed) >= plan.requests
                {
                    break;
                }
                let (base, d) =
                    &plan.targets[rr.fetch_add(1, Ordering::Relaxed) % plan.targets.len()];
                let (path, body) =
                    dialect::load_request(*d, &plan.prompt, plan.max_tokens, plan.model.as_deref());
                let a = http.post(&format!("{base}{path}"), Some(&body), plan.timeout);
                if a.is_success() {
                    ok.fetch_add(1, Ordering::Relaxed);
                } else {
                    failed.fetch_add(1, Ordering::Relaxed);
                    if let Ok(mut g) = first_error.lock() {
                        if g.is_none() {
                            let what = match (a.failure_hint(), &a.status) {
                                (Some(hint), _) => hint,
                                (None, Some(s)) => format!("HTTP {s} {}", excerpt(&a.body, 120)),
                                (None, None) => "no answer".into(),
                            };
                            *g = Some(format!("{base}{path}: {what}"));
                        }
                    }
                }
                bar.inc(1);
            });
        }
    });
    bar.finish_and_clear();
    let ok = ok.into_inner();
    let failed = failed.into_inner();
    LoadReport {
        sent: ok + failed,
        ok,
        failed,
        first_error: first_error.into_inner().unwrap_or_default(),
        ms: t0.elapsed().as_millis() as u64,
    }
}
