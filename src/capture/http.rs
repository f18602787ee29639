//! A small blocking HTTP client (ureq 2) that turns every outcome — an answer of any status, a
//! refused connection, a timeout, a connection closed mid-answer, a body too large — into an
//! [`Answer`]; it never returns an error. http and https (rustls, trusting the Mozilla roots
//! and the `--ca-cert` ones, [`super::tls`]); an API key goes out as `Authorization: Bearer`
//! and nowhere else.
//!
//! Every wait is bounded: ureq's per-request `timeout` is a deadline for connecting, sending,
//! the headers **and the whole body** (each read gets the time left), and host names are looked
//! up on a helper thread for at most [`DNS_TIMEOUT`]. Bodies are read whole up to
//! [`MAX_BODY_BYTES`]; a body cut short, timed out or larger than that is a [`Failure`] next to
//! its status, so an answer counts as a success only when it arrived complete.

use std::error::Error as _;
use std::io::{self, Read};
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::Value;

/// Most bytes of an answer body read (64 MiB). A router listing thousands of workers answers a
/// few MB; a larger body is refused with [`Failure::TooLarge`] rather than held in memory.
pub(crate) const MAX_BODY_BYTES: u64 = 64 * 1024 * 1024;

/// Longest a host name lookup may take (ureq 2 applies no deadline to DNS).
pub(crate) const DNS_TIMEOUT: Duration = Duration::from_secs(10);

/// Why there is no (complete) answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", content = "detail", rename_all = "snake_case")]
pub enum Failure {
    /// Nothing listens there.
    Refused(String),
    /// No (complete) answer within the timeout.
    Timeout(String),
    /// The connection was closed or reset before a full answer.
    Closed(String),
    /// The body is larger than the limit ([`MAX_BODY_BYTES`]).
    TooLarge(String),
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
            Failure::TooLarge(_) => "too large",
            Failure::Other(_) => "error",
        }
    }

    /// What it most likely means when there was no answer at all.
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
            Failure::TooLarge(d) | Failure::Other(d) => d.clone(),
        }
    }

    /// What it means when the status line and headers came but the body did not arrive whole.
    pub fn partial_hint(&self, status: u16) -> String {
        match self {
            Failure::Timeout(_) => format!(
                "HTTP {status}, but the body did not arrive within the timeout: the server hung \
                 mid-answer (the answer is not trusted)"
            ),
            Failure::Closed(d) => format!(
                "HTTP {status}, but the connection closed before the body was complete: did the \
                 server die? (the answer is not trusted; {d})"
            ),
            Failure::Refused(d) | Failure::Other(d) => {
                format!("HTTP {status}, but reading the body failed: {d}")
            }
            Failure::TooLarge(d) => format!("HTTP {status}, but {d}"),
        }
    }
}

/// The outcome of one request.
#[derive(Clone, Debug)]
pub struct Answer {
    pub status: Option<u16>,
    /// The body (at most [`MAX_BODY_BYTES`], or what arrived of it), empty when there is none.
    pub body: String,
    /// Set when there is no answer, or when its body did not arrive whole.
    pub failure: Option<Failure>,
    pub elapsed: Duration,
}

impl Answer {
    /// A 2xx answer that arrived complete.
    pub fn is_success(&self) -> bool {
        matches!(self.status, Some(200..=299)) && self.failure.is_none()
    }

    /// Why this answer cannot be trusted (`None`: it arrived whole): the failure's hint, which
    /// names the status when there was one.
    pub fn failure_hint(&self) -> Option<String> {
        let f = self.failure.as_ref()?;
        Some(match self.status {
            Some(s) => f.partial_hint(s),
            None => f.hint(),
        })
    }
}

/// A shared blocking client; cheap to clone, safe to use from many threads. Speaks http and
/// https (rustls, with the Mozilla root certificates of `webpki-roots`).
#[derive(Clone)]
pub struct Http {
    agent: ureq::Agent,
    body_limit: u64,
    /// `Authorization` header value sent with every request (`Bearer <key>`); never printed.
    auth: Option<String>,
}

impl Default for Http {
    fn default() -> Self {
        Self::new()
    }
}

/// Looks `netloc` (`host:port`) up on a helper thread, for at most [`DNS_TIMEOUT`]; an IP
/// address needs no lookup. A lookup that hangs is left to finish on its own thread.
fn resolve_bounded(netloc: &str) -> io::Result<Vec<SocketAddr>> {
    if let Ok(a) = netloc.parse::<SocketAddr>() {
        return Ok(vec![a]);
    }
    let (tx, rx) = mpsc::channel();
    let owned = netloc.to_string();
    std::thread::Builder::new()
        .name("rankprof-dns".into())
        .spawn(move || {
            let r = owned.to_socket_addrs().map(Iterator::collect::<Vec<_>>);
            let _ = tx.send(r);
        })?;
    match rx.recv_timeout(DNS_TIMEOUT) {
        Ok(r) => r,
        Err(_) => Err(io::Error::new(
            io::ErrorKind::TimedOut,
            format!(
                "looking up {netloc} timed out after {} s",
                DNS_TIMEOUT.as_secs()
            ),
        )),
    }
}

impl Http {
    pub fn new() -> Self {
        Http::with_tls(None)
    }

    /// A client that also trusts the certificate authorities of `ca` (`--ca-cert`) for https.
    pub(crate) fn with_tls(ca: Option<&super::tls::CaCert>) -> Self {
        let b = ureq::AgentBuilder::new()
            .user_agent(concat!("rankprof/", env!("CARGO_PKG_VERSION")))
            .max_idle_connections_per_host(4)
            .resolver(resolve_bounded);
        let b = match ca {
            Some(c) => b.tls_config(c.client_config()),
            None => b,
        };
        Http {
            agent: b.build(),
            body_limit: MAX_BODY_BYTES,
            auth: None,
        }
    }

    /// The client for these targets (their API key and CA certificates, if any).
    pub(crate) fn for_targets(t: &super::options::Targets) -> Self {
        Http {
            auth: t.api_key.as_ref().map(|k| k.bearer()),
            ..Http::with_tls(t.ca_cert.as_ref())
        }
    }

    /// Whether requests carry an API key.
    pub(crate) fn has_api_key(&self) -> bool {
        self.auth.is_some()
    }

    /// What a 401/403 from `server` means, without the key itself.
    pub(crate) fn refused(&self, server: &str, code: u16) -> String {
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

    #[cfg(test)]
    /// The same client with another body limit (tests).
    pub(crate) fn with_body_limit(mut self, bytes: u64) -> Self {
        self.body_limit = bytes;
        self
    }

    /// GET; `timeout` bounds the whole request, body included.
    pub(crate) fn get(&self, url: &str, timeout: Duration) -> Answer {
        let t0 = Instant::now();
        let r = self.request("GET", url, timeout).call();
        self.finish(r, t0)
    }

    /// POST with a JSON body, or with an empty body (`Content-Length: 0`) when `body` is `None`;
    /// `timeout` bounds the whole request, body included.
    pub(crate) fn post(&self, url: &str, body: Option<&Value>, timeout: Duration) -> Answer {
        let t0 = Instant::now();
        let req = self.request("POST", url, timeout);
        let r = match body {
            Some(v) => req.send_json(v),
            None => req.send_bytes(&[]),
        };
        self.finish(r, t0)
    }

    fn finish(&self, r: Result<ureq::Response, ureq::Error>, t0: Instant) -> Answer {
        match r {
            Ok(resp) | Err(ureq::Error::Status(_, resp)) => {
                let status = resp.status();
                let (body, failure) = read_body(resp, self.body_limit);
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
}

fn too_large(limit: u64) -> Failure {
    Failure::TooLarge(format!(
        "the answer is larger than {} MiB ({limit} bytes), the most rankprof reads",
        limit / (1024 * 1024)
    ))
}

/// The whole body, or what arrived of it and why the rest did not.
fn read_body(resp: ureq::Response, limit: u64) -> (String, Option<Failure>) {
    let declared = resp
        .header("content-length")
        .and_then(|v| v.trim().parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit) {
        return (String::new(), Some(too_large(limit)));
    }
    let mut buf = Vec::new();
    let r = resp
        .into_reader()
        .take(limit.saturating_add(1))
        .read_to_end(&mut buf);
    let failure = match r {
        Err(e) => Some(io_failure(&e)),
        Ok(_) if buf.len() as u64 > limit => {
            buf.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
            Some(too_large(limit))
        }
        Ok(_) => None,
    };
    (String::from_utf8_lossy(&buf).into_owned(), failure)
}

fn io_failure(e: &io::Error) -> Failure {
    use io::ErrorKind as K;
    let d = e.to_string();
    if let Some(rustls::Error::InvalidCertificate(c)) =
        e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>())
    {
        return Failure::Other(format!(
            "the server's TLS certificate is not trusted ({c:?}): for a private certificate \
             authority pass --ca-cert PEM or set RANKPROF_CA_CERT"
        ));
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::net::{Shutdown, TcpListener};

    /// Serves one connection: reads the request head, then writes `head` and `body` and, with
    /// `hold`, keeps the socket open that long before closing it.
    fn one_shot(head: String, body: Vec<u8>, hold: Duration) -> (u16, std::thread::JoinHandle<()>) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let h = std::thread::spawn(move || {
            let Ok((mut s, _)) = l.accept() else { return };
            let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
            let mut seen = Vec::new();
            let mut b = [0u8; 1024];
            while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
                match s.read(&mut b) {
                    Ok(n) if n > 0 => seen.extend_from_slice(&b[..n]),
                    _ => return,
                }
            }
            let _ = s.write_all(head.as_bytes());
            let _ = s.write_all(&body);
            let _ = s.flush();
            std::thread::sleep(hold);
            let _ = s.shutdown(Shutdown::Both);
        });
        (port, h)
    }

    fn head(len: usize) -> String {
        format!("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len}\r\nConnection: close\r\n\r\n")
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

    #[test]
    fn bodies_over_64_kib_are_read_whole() {
        let body = vec![b'x'; 200 * 1024];
        let (port, h) = one_shot(head(body.len()), body, Duration::ZERO);
        let a = Http::new().get(&format!("http://127.0.0.1:{port}/"), Duration::from_secs(5));
        h.join().unwrap();
        assert!(a.is_success(), "{:?}", a.failure);
        assert_eq!(a.body.len(), 200 * 1024);
    }

    #[test]
    fn a_body_over_the_limit_is_an_error_that_says_so() {
        // declared too large: refused before reading
        let (port, h) = one_shot(head(5000), vec![b'x'; 5000], Duration::ZERO);
        let http = Http::new().with_body_limit(4096);
        let a = http.get(&format!("http://127.0.0.1:{port}/"), Duration::from_secs(5));
        h.join().unwrap();
        assert_eq!(a.status, Some(200));
        assert!(!a.is_success());
        assert!(
            matches!(&a.failure, Some(Failure::TooLarge(d)) if d.contains("4096 bytes")),
            "{:?}",
            a.failure
        );
        // no length given (read until close): stopped at the limit
        let raw = "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n".to_string();
        let (port, h) = one_shot(raw, vec![b'y'; 10_000], Duration::ZERO);
        let a = http.get(&format!("http://127.0.0.1:{port}/"), Duration::from_secs(5));
        h.join().unwrap();
        assert!(matches!(a.failure, Some(Failure::TooLarge(_))), "{a:?}");
        assert_eq!(a.body.len(), 4096);
        assert!(a.failure_hint().unwrap().contains("HTTP 200, but"));
        assert_eq!(MAX_BODY_BYTES, 64 << 20);
    }

    #[test]
    fn a_body_cut_short_or_stalled_is_a_failure() {
        // 10 of 1000 bytes, then the server closes
        let (port, h) = one_shot(head(1000), b"{\"a\":12345".to_vec(), Duration::ZERO);
        let a = Http::new().get(&format!("http://127.0.0.1:{port}/"), Duration::from_secs(5));
        h.join().unwrap();
        assert_eq!(a.status, Some(200));
        assert!(!a.is_success());
        assert!(matches!(a.failure, Some(Failure::Closed(_))), "{a:?}");
        assert!(a
            .failure_hint()
            .unwrap()
            .contains("before the body was complete"));
        // 10 of 1000 bytes, then nothing for longer than the timeout
        let (port, h) = one_shot(
            head(1000),
            b"{\"a\":12345".to_vec(),
            Duration::from_millis(1500),
        );
        let t0 = Instant::now();
        let a = Http::new().get(
            &format!("http://127.0.0.1:{port}/"),
            Duration::from_millis(400),
        );
        assert!(t0.elapsed() < Duration::from_secs(2), "{:?}", t0.elapsed());
        assert_eq!(a.status, Some(200));
        assert!(matches!(a.failure, Some(Failure::Timeout(_))), "{a:?}");
        assert!(a
            .failure_hint()
            .unwrap()
            .contains("did not arrive within the timeout"));
        h.join().unwrap();
    }

    #[test]
    fn names_are_looked_up_and_addresses_are_not() {
        assert_eq!(
            resolve_bounded("127.0.0.1:80").unwrap(),
            vec!["127.0.0.1:80".parse::<SocketAddr>().unwrap()]
        );
        assert!(resolve_bounded("localhost:80")
            .unwrap()
            .iter()
            .all(|a| a.ip().is_loopback()));
    }
}
