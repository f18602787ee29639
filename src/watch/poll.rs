//! Polling every worker at once, on a deadline. Each worker has its own long-lived thread
//! (blocking HTTP through [`crate::capture::http::Http`], one shared connection pool); a poll
//! hands every idle thread a job and collects the answers until the deadline (the per-request
//! timeout plus a little). A worker that has not answered by then is marked `timeout` and the
//! poll goes on without it; while its request is still in flight it gets no new one (its row
//! says so), so a hung worker costs one thread, never the loop. A refused or closed connection
//! is `dead`; an HTTP error or an answer without load figures is `error`.
//!
//! Which route a worker answers is found once and remembered: SGLang's `GET /v1/loads`, else
//! (404) `GET /metrics` (SGLang's or vLLM's gauges), else `GET /get_load`; `--backend vllm` goes
//! to `/metrics` straight away. A remembered route that starts answering 404 is looked for
//! again on the next poll. See [`crate::load::loads`] for what each route says.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::capture::http::{Failure, Http};
use crate::capture::Backend;
use crate::load::loads::{self, Metric, RankLoad};
use crate::load::stats::Spread;
use crate::load::timeline::{now_ns, utc};
use crate::trace::Ns;

/// How long the collector waits past the per-request timeout for answers in flight.
const GRACE: Duration = Duration::from_millis(100);

/// What happened to one worker at one poll.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Load figures read.
    Ok,
    /// Connection refused or closed: the server is down or died.
    Dead,
    /// No answer within the poll timeout.
    Timeout,
    /// An HTTP error, or an answer without load figures.
    Error,
}

impl Status {
    pub fn word(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Dead => "dead",
            Status::Timeout => "timeout",
            Status::Error => "error",
        }
    }
}

/// One worker's answer to one poll.
#[derive(Clone, Debug, Serialize)]
pub struct WorkerPoll {
    pub url: String,
    pub status: Status,
    /// The route that answered (`/v1/loads`, `/metrics`, `/get_load`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<&'static str>,
    pub ms: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ranks: Vec<RankLoad>,
}

impl WorkerPoll {
    fn failed(url: &str, status: Status, error: String, ms: u64) -> WorkerPoll {
        WorkerPoll {
            url: url.to_string(),
            status,
            source: None,
            ms,
            error: Some(error),
            ranks: Vec::new(),
        }
    }
}

/// One poll of every worker.
#[derive(Clone, Debug, Serialize)]
pub struct Poll {
    pub kind: &'static str,
    pub seq: u64,
    /// Unix time when the poll started.
    pub t_ns: Ns,
    pub time: String,
    /// Wall time of the whole poll, ms.
    pub ms: u64,
    pub workers: Vec<WorkerPoll>,
    /// Per metric, how uneven it is across the ranks that answered.
    pub imbalance: BTreeMap<&'static str, Spread>,
}

impl Poll {
    /// Every DP rank that answered.
    pub fn ranks(&self) -> impl Iterator<Item = &RankLoad> {
        self.workers
            .iter()
            .filter(|w| w.status == Status::Ok)
            .flat_map(|w| w.ranks.iter())
    }

    /// The JSON line of this poll (timeline and `--json`).
    pub fn json_line(&self) -> String {
        serde_json::to_string(self)
            .unwrap_or_else(|e| format!(r#"{{"kind":"error","error":"{e}"}}"#))
    }
}

/// The routes, in the order they are tried.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Route {
    Loads,
    Metrics,
    GetLoad,
}

impl Route {
    fn path(self) -> &'static str {
        match self {
            Route::Loads => "/v1/loads",
            Route::Metrics => "/metrics",
            Route::GetLoad => "/get_load",
        }
    }
}

/// What a worker's thread remembers between polls.
struct WorkerState {
    url: String,
    backend: Backend,
    route: Option<Route>,
    /// vLLM's generated-token counters at the last poll (for throughput).
    prev_gen: Option<(Instant, BTreeMap<u32, f64>)>,
}

enum Tried {
    Done(WorkerPoll),
    /// The route is not there (404/405) or says nothing about load: try the next.
    Next(String),
}

impl WorkerState {
    fn routes(&self) -> &'static [Route] {
        match (self.route, self.backend) {
            (Some(Route::Loads), _) => &[Route::Loads],
            (Some(Route::Metrics), _) => &[Route::Metrics],
            (Some(Route::GetLoad), _) => &[Route::GetLoad],
            (None, Backend::Vllm) => &[Route::Metrics],
            (None, _) => &[Route::Loads, Route::Metrics, Route::GetLoad],
        }
    }

    fn poll(&mut self, http: &Http, deadline: Instant) -> WorkerPoll {
        let t0 = Instant::now();
        let ms = || t0.elapsed().as_millis() as u64;
        let mut missing = Vec::new();
        for &route in self.routes() {
            let Some(left) = deadline.checked_duration_since(Instant::now()) else {
                return WorkerPoll::failed(
                    &self.url,
                    Status::Timeout,
                    "no answer within the poll timeout".into(),
                    ms(),
                );
            };
            match self.try_route(http, route, left.max(Duration::from_millis(1))) {
                Tried::Done(mut w) => {
                    w.ms = ms();
                    if w.status == Status::Ok {
                        self.route = Some(route);
                    }
                    return w;
                }
                Tried::Next(why) => missing.push(why),
            }
        }
        // A remembered route that went away is looked for again next time.
        self.route = None;
        WorkerPoll::failed(
            &self.url,
            Status::Error,
            format!("no load figures: {}", missing.join("; ")),
            ms(),
        )
    }

    fn try_route(&mut self, http: &Http, route: Route, timeout: Duration) -> Tried {
        let url = self.url.clone();
        let url = url.as_str();
        let a = http.get(&format!("{url}{}", route.path()), timeout);
        let Some(status) = a.status else {
            let (st, hint) = match &a.failure {
                Some(f @ (Failure::Refused(_) | Failure::Closed(_))) => (Status::Dead, f.hint()),
                Some(f @ Failure::Timeout(_)) => (Status::Timeout, f.hint()),
                Some(f) => (Status::Error, f.hint()),
                None => (Status::Error, "no answer".into()),
            };
            return Tried::Done(WorkerPoll::failed(url, st, hint, 0));
        };
        if matches!(status, 404 | 405) {
            return Tried::Next(format!("{} {status}", route.path()));
        }
        if !(200..300).contains(&status) {
            return Tried::Done(WorkerPoll::failed(
                url,
                Status::Error,
                format!("{} answered HTTP {status}", route.path()),
                0,
            ));
        }
        let ranks = match route {
            Route::Loads => loads::parse_v1_loads(&a.body),
            Route::GetLoad => loads::parse_get_load(&a.body),
            Route::Metrics => {
                let m = loads::parse_metrics(&a.body);
                if m.ranks.is_empty() {
                    return Tried::Next("/metrics has no sglang: or vllm: load gauges".into());
                }
                let mut ranks = m.ranks;
                self.vllm_throughput(&mut ranks, m.gen_tokens);
                Ok(ranks)
            }
        };
        match ranks {
            Ok(ranks) => Tried::Done(WorkerPoll {
                url: url.to_string(),
                status: Status::Ok,
                source: Some(route.path()),
                ms: 0,
                error: None,
                ranks,
            }),
            Err(e) => Tried::Next(format!("{}: {e:#}", route.path())),
        }
    }

    /// Throughput from vLLM's generated-token counter: its rise since the last poll.
    fn vllm_throughput(&mut self, ranks: &mut [RankLoad], gen: BTreeMap<u32, f64>) {
        if gen.is_empty() {
            return;
        }
        let now = Instant::now();
        if let Some((t, prev)) = &self.prev_gen {
            let dt = now.duration_since(*t).as_secs_f64();
            for r in ranks.iter_mut().filter(|r| r.throughput.is_none()) {
                if let (Some(a), Some(b)) = (prev.get(&r.dp), gen.get(&r.dp)) {
                    if dt > 0.0 && b >= a {
                        r.fold(Metric::Throughput, (b - a) / dt);
                    }
                }
            }
        }
        self.prev_gen = Some((now, gen));
    }
}

struct Job {
    seq: u64,
    deadline: Instant,
}

struct Slot {
    url: String,
    jobs: Sender<Job>,
    busy: Arc<AtomicBool>,
}

/// The pollers of a set of workers (one thread each, ended when this is dropped).
pub(crate) struct Poller {
    slots: Vec<Slot>,
    answers: Receiver<(usize, u64, WorkerPoll)>,
    timeout: Duration,
}

impl Poller {
    /// Starts one thread per worker url.
    pub(crate) fn start(
        http: &Http,
        urls: &[String],
        backend: Backend,
        timeout: Duration,
    ) -> Poller {
        let (tx, answers) = mpsc::channel();
        let slots = urls
            .iter()
            .enumerate()
            .map(|(i, url)| {
                let (jobs, rx) = mpsc::channel::<Job>();
                let busy = Arc::new(AtomicBool::new(false));
                let mut state = WorkerState {
                    url: url.clone(),
                    backend,
                    route: None,
                    prev_gen: None,
                };
                let (http, tx, flag) = (http.clone(), tx.clone(), busy.clone());
                std::thread::Builder::new()
                    .name(format!("watch-{i}"))
                    .spawn(move || {
                        for job in rx {
                            let w = state.poll(&http, job.deadline);
                            flag.store(false, Ordering::SeqCst);
                            if tx.send((i, job.seq, w)).is_err() {
                                break;
                            }
                        }
                    })
                    .ok();
                Slot {
                    url: url.clone(),
                    jobs,
                    busy,
                }
            })
            .collect();
        Poller {
            slots,
            answers,
            timeout,
        }
    }

    /// Polls every worker; returns by the deadline whatever happened.
    pub(crate) fn poll(&mut self, seq: u64) -> Poll {
        let t_ns = now_ns();
        let t0 = Instant::now();
        let deadline = t0 + self.timeout;
        let mut got: Vec<Option<WorkerPoll>> = vec![None; self.slots.len()];
        let mut pending = 0usize;
        for (i, s) in self.slots.iter().enumerate() {
            if s.busy.load(Ordering::SeqCst) {
                got[i] = Some(WorkerPoll::failed(
                    &s.url,
                    Status::Timeout,
                    "still no answer to an earlier poll".into(),
                    0,
                ));
                continue;
            }
            s.busy.store(true, Ordering::SeqCst);
            if s.jobs.send(Job { seq, deadline }).is_err() {
                s.busy.store(false, Ordering::SeqCst);
                got[i] = Some(WorkerPoll::failed(
                    &s.url,
                    Status::Error,
                    "poller thread ended".into(),
                    0,
                ));
                continue;
            }
            pending += 1;
        }
        let wait_until = deadline + GRACE;
        while pending > 0 {
            let Some(left) = wait_until.checked_duration_since(Instant::now()) else {
                break;
            };
            match self.answers.recv_timeout(left) {
                Ok((i, s, w)) if s == seq && got[i].is_none() => {
                    got[i] = Some(w);
                    pending -= 1;
                }
                Ok(_) => {} // a late answer to an earlier poll
                Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => break,
            }
        }
        let timeout_ms = self.timeout.as_millis() as u64;
        let workers: Vec<WorkerPoll> = got
            .into_iter()
            .zip(&self.slots)
            .map(|(w, s)| {
                w.unwrap_or_else(|| {
                    WorkerPoll::failed(
                        &s.url,
                        Status::Timeout,
                        format!("no answer within {timeout_ms} ms"),
                        timeout_ms,
                    )
                })
            })
            .collect();
        let mut p = Poll {
            kind: "poll",
            seq,
            t_ns: Ns::new(t_ns),
            time: utc(t_ns),
            ms: t0.elapsed().as_millis() as u64,
            workers,
            imbalance: BTreeMap::new(),
        };
        for m in Metric::ALL {
            if let Some(s) = Spread::of_metric(p.ranks(), m) {
                p.imbalance.insert(m.name(), s);
            }
        }
        p
    }
}
