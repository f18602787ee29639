//! A minimal HTTP/1.1 server for tests: 127.0.0.1 only, one thread per connection, every
//! request recorded (method, path, body), answered by a handler that may also close the
//! socket without answering, or send the headers and only part of the body (then hang or
//! close). `Connection: close` on every answer.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

#[derive(Clone, Debug)]
pub struct Request {
    pub method: String,
    pub path: String,
    pub body: String,
    /// The `Authorization` header, if any.
    pub authorization: Option<String>,
    /// When it arrived.
    pub at: Instant,
}

pub enum Reply {
    Answer {
        status: u16,
        content_type: &'static str,
        body: String,
    },
    /// Close the connection without a word (a dying server).
    Close,
    /// The status line and headers promise `declared` body bytes, only `sent` follow; then the
    /// socket stays open for `hold` (a hung server) and is closed (a server that died).
    Partial {
        status: u16,
        declared: usize,
        sent: String,
        hold: Duration,
    },
}

impl Reply {
    pub fn json(status: u16, v: &serde_json::Value) -> Reply {
        Reply::Answer {
            status,
            content_type: "application/json",
            body: v.to_string(),
        }
    }
    pub fn text(status: u16, body: &str) -> Reply {
        Reply::Answer {
            status,
            content_type: "text/plain; charset=utf-8",
            body: body.to_string(),
        }
    }
}

type Handler = dyn Fn(&Request) -> Reply + Send + Sync;

pub struct Server {
    pub port: u16,
    pub url: String,
    log: Arc<Mutex<Vec<Request>>>,
    stop: Arc<AtomicBool>,
    accept: Option<JoinHandle<()>>,
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        404 => "Not Found",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "Status",
    }
}

fn read_request(stream: &TcpStream) -> Option<(String, String, String, Option<String>)> {
    let mut r = BufReader::new(stream);
    let mut line = String::new();
    r.read_line(&mut line).ok()?;
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_string();
    let path = parts.next()?.to_string();
    let mut len = 0usize;
    let mut chunked = false;
    let mut authorization = None;
    loop {
        let mut h = String::new();
        if r.read_line(&mut h).ok()? == 0 {
            return None;
        }
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        let (k, v) = h.split_once(':')?;
        let k = k.trim().to_ascii_lowercase();
        let v = v.trim();
        if k == "authorization" {
            authorization = Some(v.to_string());
        } else if k == "content-length" {
            len = v.parse().ok()?;
        } else if k == "transfer-encoding" && v.eq_ignore_ascii_case("chunked") {
            chunked = true;
        }
    }
    let mut body = Vec::new();
    if chunked {
        loop {
            let mut size = String::new();
            r.read_line(&mut size).ok()?;
            let n = usize::from_str_radix(size.trim(), 16).ok()?;
            let mut chunk = vec![0; n + 2];
            r.read_exact(&mut chunk).ok()?;
            if n == 0 {
                break;
            }
            body.extend_from_slice(&chunk[..n]);
        }
    } else {
        body.resize(len, 0);
        r.read_exact(&mut body).ok()?;
    }
    Some((
        method,
        path,
        String::from_utf8_lossy(&body).into_owned(),
        authorization,
    ))
}

fn serve(mut stream: TcpStream, log: &Mutex<Vec<Request>>, handler: &Handler) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    let Some((method, path, body, authorization)) = read_request(&stream) else {
        return;
    };
    let req = Request {
        method,
        path,
        body,
        authorization,
        at: Instant::now(),
    };
    log.lock().unwrap().push(req.clone());
    match handler(&req) {
        Reply::Answer {
            status,
            content_type,
            body,
        } => {
            let head = format!(
                "HTTP/1.1 {status} {}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                reason(status),
                body.len()
            );
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(body.as_bytes());
            let _ = stream.flush();
            let _ = stream.shutdown(Shutdown::Write);
            // Let the client read everything before the socket goes.
            let mut sink = [0u8; 256];
            let _ = stream.set_read_timeout(Some(Duration::from_millis(200)));
            while matches!(stream.read(&mut sink), Ok(n) if n > 0) {}
        }
        Reply::Close => {
            let _ = stream.shutdown(Shutdown::Both);
        }
        Reply::Partial {
            status,
            declared,
            sent,
            hold,
        } => {
            let head = format!(
                "HTTP/1.1 {status} {}\r\nContent-Type: application/json\r\nContent-Length: {declared}\r\nConnection: close\r\n\r\n",
                reason(status)
            );
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(sent.as_bytes());
            let _ = stream.flush();
            // bounded: a test never waits on this thread
            std::thread::sleep(hold.min(Duration::from_secs(10)));
            let _ = stream.shutdown(Shutdown::Both);
        }
    }
}

impl Server {
    pub fn start(handler: impl Fn(&Request) -> Reply + Send + Sync + 'static) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let port = listener.local_addr().unwrap().port();
        let log: Arc<Mutex<Vec<Request>>> = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let handler: Arc<Handler> = Arc::new(handler);
        let accept = {
            let (log, stop) = (log.clone(), stop.clone());
            std::thread::spawn(move || {
                for conn in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(conn) = conn else { continue };
                    let (log, handler) = (log.clone(), handler.clone());
                    std::thread::spawn(move || serve(conn, &log, &*handler));
                }
            })
        };
        Server {
            port,
            url: format!("http://127.0.0.1:{port}"),
            log,
            stop,
            accept: Some(accept),
        }
    }

    /// Every request so far.
    pub fn requests(&self) -> Vec<Request> {
        self.log.lock().unwrap().clone()
    }

    /// Forgets the requests recorded so far (so a long benchmark's memory is its subject's).
    pub fn forget(&self) {
        self.log.lock().unwrap().clear();
    }

    /// Requests to `path` with `method`.
    pub fn calls(&self, method: &str, path: &str) -> Vec<Request> {
        self.requests()
            .into_iter()
            .filter(|r| r.method == method && r.path == path)
            .collect()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        if let Some(h) = self.accept.take() {
            let _ = h.join();
        }
    }
}

/// A port nothing listens on (bound, then released).
pub fn dead_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}
