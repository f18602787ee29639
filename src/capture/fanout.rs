//! Calling many servers at once: a small blocking HTTP client (ureq) that turns every outcome —
//! an answer of any status, a refused connection, a timeout, a connection closed mid-answer —
//! into an [`Answer`], and [`fan_out`], which runs one call per worker on its own thread so a
//! slow, dead or failing worker never holds up the others (each call has its own timeout).
//! http and https (rustls); an API key goes out as `Authorization: Bearer` and nowhere else.

use std::error::Error as _;
use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::Value;

/// Most bytes of an answer body kept (bodies are only read for hints).
const BODY_LIMIT: u64 = 64 * 1024;

/// Why there is no HTTP status.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", content = "detail", rename_all = "snake_case")]
pub enum Failure {
    /// Nothing listens there.
    Refused(String),
    /// No answer within the timeout.
    Timeout(String),
    /// The connection was closed or reset before a full answer.
    Closed(String),
    /// Anything else (bad url, DNS, unsupported scheme…).
    Other(String),
}

impl Failure {
    /// Short word for the table's status column.
    pub fn word(&self) -> &'static str {
        match self {
            Failure::Refused(_) => "refused",
            Failure::Timeout(_) => "timeout",
            Failure::Closed(_) => "closed",
            Failure::Other(_) => "error",
        }
    }

    /// What it most likely means.
    pub fn hint(&self) -> String {
        match self {
            Failure::Refused(_) => {
                "connection refused: the server is down or the url is wrong".into()
            }
            Failure::Timeout(_) => {
                "no answer within the timeout: the server is busy or hung".into()
            }
            Failure::Closed(d) => {
                format!("connection closed without an answer: did the server die? ({d})")
            }
            Failure::Other(d) => d.clone(),
        }
    }
}

/// The outcome of one request.
#[derive(Clone, Debug)]
pub struct Answer {
    pub status: Option<u16>,
    /// The body (at most 64 KiB), empty when there is none.
    pub body: String,
    pub failure: Option<Failure>,
    pub elapsed: Duration,
}

impl Answer {
    pub fn is_success(&self) -> bool {
        matches!(self.status, Some(200..=299))
    }
}

/// A shared blocking client; cheap to clone, safe to use from many threads. Speaks http and
/// https (rustls, with the Mozilla root certificates of `webpki-roots`).
#[derive(Clone)]
pub struct Http {
    agent: ureq::Agent,
    /// `Authorization` header value sent with every request (`Bearer <key>`); never printed.
    auth: Option<String>,
}

impl Default for Http {
    fn default() -> Self {
        Self::new()
    }
}

impl Http {
    pub fn new() -> Self {
        let agent = ureq::AgentBuilder::new()
            .user_agent(concat!("rankprof/", env!("CARGO_PKG_VERSION")))
            .max_idle_connections_per_host(4)
            .build();
        Http { agent, auth: None }
    }

    /// A client that sends `Authorization: Bearer <key>` with every request.
    pub fn with_api_key(key: Option<&super::options::ApiKey>) -> Self {
        Http {
            auth: key.map(|k| k.bearer()),
            ..Http::new()
        }
    }

    /// The client for these targets (their API key, if any).
    pub fn for_targets(t: &super::options::Targets) -> Self {
        Http::with_api_key(t.api_key.as_ref())
    }

    /// Whether requests carry an API key.
    pub fn has_api_key(&self) -> bool {
        self.auth.is_some()
    }

    /// What a 401/403 from `server` means, without the key itself.
    pub fn refused(&self, server: &str, code: u16) -> String {
        let why = if code == 401 {
            "401 Unauthorized"
        } else {
            "403 Forbidden"
        };
        if self.has_api_key() {
            format!("{server} refused the API key ({why}): check --api-key / RANKPROF_API_KEY")
        } else {
            format!(
                "{server} requires an API key ({why}): pass --api-key KEY or set RANKPROF_API_KEY"
            )
        }
    }

    fn request(&self, method: &str, url: &str, timeout: Duration) -> ureq::Request {
        let req = self.agent.request(method, url).timeout(timeout);
        match &self.auth {
            Some(a) => req.set("Authorization", a),
            None => req,
        }
    }

    pub fn get(&self, url: &str, timeout: Duration) -> Answer {
        let t0 = Instant::now();
        let r = self.request("GET", url, timeout).call();
        finish(r, t0)
    }

    /// POST with a JSON body, or with an empty body (`Content-Length: 0`) when `body` is `None`.
    pub fn post(&self, url: &str, body: Option<&Value>, timeout: Duration) -> Answer {
        let t0 = Instant::now();
        let req = self.request("POST", url, timeout);
        let r = match body {
            Some(v) => req.send_json(v),
            None => req.send_bytes(&[]),
        };
        finish(r, t0)
    }
}

fn read_body(resp: ureq::Response) -> (String, Option<Failure>) {
    use std::io::Read;
    let mut buf = Vec::new();
    match resp.into_reader().take(BODY_LIMIT).read_to_end(&mut buf) {
        Ok(_) => (String::from_utf8_lossy(&buf).into_owned(), None),
        Err(e) => (
            String::from_utf8_lossy(&buf).into_owned(),
            Some(io_failure(&e)),
        ),
    }
}

fn io_failure(e: &io::Error) -> Failure {
    use io::ErrorKind as K;
    let d = e.to_string();
    match e.kind() {
        K::TimedOut | K::WouldBlock => Failure::Timeout(d),
        K::ConnectionRefused => Failure::Refused(d),
        K::ConnectionReset | K::ConnectionAborted | K::UnexpectedEof | K::BrokenPipe => {
            Failure::Closed(d)
        }
        _ if d.contains("timed out") => Failure::Timeout(d),
        _ => Failure::Other(d),
    }
}

fn transport_failure(t: &ureq::Transport) -> Failure {
    let mut src = t.source();
    while let Some(e) = src {
        if let Some(io) = e.downcast_ref::<io::Error>() {
            return io_failure(io);
        }
        src = e.source();
    }
    let d = t.to_string();
    match t.kind() {
        ureq::ErrorKind::ConnectionFailed if d.contains("refused") => Failure::Refused(d),
        _ if d.contains("timed out") => Failure::Timeout(d),
        ureq::ErrorKind::Io | ureq::ErrorKind::BadStatus | ureq::ErrorKind::BadHeader => {
            Failure::Closed(d)
        }
        ureq::ErrorKind::UnknownScheme => {
            Failure::Other(format!("{d} (only http:// and https:// are supported)"))
        }
        _ => Failure::Other(d),
    }
}

fn finish(r: Result<ureq::Response, ureq::Error>, t0: Instant) -> Answer {
    match r {
        Ok(resp) | Err(ureq::Error::Status(_, resp)) => {
            let status = resp.status();
            let (body, failure) = read_body(resp);
            Answer {
                status: Some(status),
                body,
                failure,
                elapsed: t0.elapsed(),
            }
        }
        Err(ureq::Error::Transport(t)) => Answer {
            status: None,
            body: String::new(),
            failure: Some(transport_failure(&t)),
            elapsed: t0.elapsed(),
        },
    }
}

/// Most threads [`fan_out`] runs at once.
pub const MAX_PARALLEL: usize = 256;

/// Runs `f` on every item, all at once (up to [`MAX_PARALLEL`] threads), and returns the results
/// in item order. Shows a progress bar labelled `label` on stderr when stderr is a terminal.
pub fn fan_out<T, R, F>(items: &[T], label: &str, f: F) -> Vec<R>
where
    T: Sync,
    R: Send,
    F: Fn(&T) -> R + Sync,
{
    let n = items.len();
    if n == 0 {
        return Vec::new();
    }
    let bar = crate::progress::bar(n as u64, label);
    let next = AtomicUsize::new(0);
    let slots: Mutex<Vec<Option<R>>> = Mutex::new((0..n).map(|_| None).collect());
    std::thread::scope(|s| {
        for _ in 0..n.min(MAX_PARALLEL) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= n {
                    break;
                }
                let r = f(&items[i]);
                if let Ok(mut g) = slots.lock() {
                    g[i] = Some(r);
                }
                bar.inc(1);
            });
        }
    });
    bar.finish_and_clear();
    let slots = match slots.into_inner() {
        Ok(v) => v,
        Err(poisoned) => poisoned.into_inner(),
    };
    // Every slot is filled unless `f` panicked, and then the scope above re-raised the panic.
    slots.into_iter().flatten().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    #[test]
    fn fan_out_keeps_order_and_runs_at_once() {
        let items: Vec<u64> = (0..40).collect();
        let t0 = Instant::now();
        let out = fan_out(&items, "test", |i| {
            std::thread::sleep(Duration::from_millis(50));
            i * 2
        });
        assert_eq!(out, items.iter().map(|i| i * 2).collect::<Vec<_>>());
        // 40 sequential sleeps would be 2 s; all at once is ~50 ms.
        assert!(
            t0.elapsed() < Duration::from_millis(1500),
            "{:?}",
            t0.elapsed()
        );
    }

    #[test]
    fn refused_connection_is_a_failure_not_an_error() {
        let port = {
            let l = TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let a = Http::new().get(
            &format!("http://127.0.0.1:{port}/health"),
            Duration::from_secs(2),
        );
        assert_eq!(a.status, None);
        assert!(
            matches!(a.failure, Some(Failure::Refused(_))),
            "{:?}",
            a.failure
        );
    }

    #[test]
    fn silent_server_times_out() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        // accepts (the kernel does) but never answers
        let a = Http::new().get(
            &format!("http://127.0.0.1:{port}/"),
            Duration::from_millis(300),
        );
        assert!(
            matches!(a.failure, Some(Failure::Timeout(_))),
            "{:?}",
            a.failure
        );
        assert!(a.elapsed < Duration::from_secs(5));
        drop(l);
    }
}
