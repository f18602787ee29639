//! `rankprof nsys list|start|stop`: Nsight Systems sessions of a server launched under
//! `nsys launch` / `nsys profile`.
//!
//! Wraps `nsys sessions list` (a table with the columns `ID TIME STATE LAUNCH NAME`; states
//! `Launched`, `DelayedCollection`, `Collection`, `Generation`), `nsys start --session=NAME` and
//! `nsys stop --session=NAME`. nsys is run with an argument vector, never through a shell, so a
//! session name cannot inject anything.
//!
//! Every nsys call has a time limit ([`NSYS_TIMEOUT`] for `sessions list` and `start`,
//! [`NSYS_STOP_TIMEOUT`] for `stop`, which writes the report; both can be changed): a call
//! past it is killed and reported as such. Its output goes to temporary files, not pipes, so
//! a grandchild that keeps them open cannot hold rankprof up either.

use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use serde::Serialize;

use super::options::seconds;

/// Longest `nsys sessions list` or `nsys start` may run before it is killed (by default).
pub const NSYS_TIMEOUT: Duration = Duration::from_secs(60);

/// Longest `nsys stop` may run before it is killed (by default): it writes the report.
pub(crate) const NSYS_STOP_TIMEOUT: Duration = Duration::from_secs(600);

/// Most bytes of nsys output kept per stream.
const OUTPUT_LIMIT: u64 = 1 << 20;

/// Which sessions to act on and how to run nsys, independent of the command line.
#[derive(Debug, Clone, Default)]
pub struct NsysOptions {
    /// A session ID or NAME as `nsys sessions list` shows it.
    pub session: Option<String>,
    /// Every session (start: those not collecting; stop: those collecting).
    pub all: bool,
    /// The nsys binary (default: `$RANKPROF_NSYS`, else `nsys` on PATH).
    pub nsys: Option<PathBuf>,
    /// Extra arguments for `nsys start` / `nsys stop`.
    pub extra: Vec<String>,
    /// Seconds `nsys sessions list` and `nsys start` may run (`None`: [`NSYS_TIMEOUT`]).
    pub timeout: Option<f64>,
    /// Seconds `nsys stop` may run (`None`: [`NSYS_STOP_TIMEOUT`]).
    pub stop_timeout: Option<f64>,
}

impl NsysOptions {
    /// How long one nsys call for `action` (`list`, `start`, `stop`) may run.
    pub fn limit(&self, action: &str) -> Duration {
        match (action, self.timeout, self.stop_timeout) {
            ("stop", _, Some(s)) => seconds(s),
            ("stop", _, None) => NSYS_STOP_TIMEOUT,
            (_, Some(s), _) => seconds(s),
            (_, None, _) => NSYS_TIMEOUT,
        }
    }
}

/// One row of `nsys sessions list`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Session {
    pub id: String,
    pub time: String,
    pub state: String,
    pub launch: String,
    pub name: String,
}

impl Session {
    /// Collecting now, or about to (a `--delay`ed start).
    pub(crate) fn is_collecting(&self) -> bool {
        self.state == "Collection" || self.state == "DelayedCollection"
    }
    /// Launched and waiting for `nsys start`.
    pub(crate) fn is_startable(&self) -> bool {
        self.state == "Launched"
    }
}

/// Reads the `nsys sessions list` table. Lines before the `ID … NAME` header are ignored; a line
/// after it that is not a session is an error (never a session silently lost).
pub(crate) fn parse_sessions(text: &str) -> Result<Vec<Session>> {
    let mut lines = text.lines().enumerate();
    let mut header = false;
    for (_, l) in lines.by_ref() {
        let cols: Vec<&str> = l.split_whitespace().collect();
        if cols.first() == Some(&"ID") && cols.contains(&"STATE") && cols.last() == Some(&"NAME") {
            header = true;
            break;
        }
    }
    if !header {
        // No header: no sessions ("No active sessions." or nothing at all).
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    for (i, l) in lines {
        let t: Vec<&str> = l.split_whitespace().collect();
        if t.is_empty() {
            continue;
        }
        let s = match t.len() {
            n if n >= 5 => Session {
                id: t[0].into(),
                time: t[1].into(),
                state: t[2].into(),
                launch: t[3].into(),
                name: t[4..].join(" "),
            },
            // an empty LAUNCH column
            4 => Session {
                id: t[0].into(),
                time: t[1].into(),
                state: t[2].into(),
                launch: String::new(),
                name: t[3].into(),
            },
            _ => bail!("cannot read line {} of `nsys sessions list`: {l:?}", i + 1),
        };
        if !s.id.bytes().all(|b| b.is_ascii_digit()) {
            bail!(
                "cannot read line {} of `nsys sessions list` (ID {:?} is not a number): {l:?}",
                i + 1,
                s.id
            );
        }
        out.push(s);
    }
    Ok(out)
}

/// The nsys binary: `--nsys`, `$RANKPROF_NSYS`, else `nsys` on PATH.
pub(crate) fn nsys_binary(a: &NsysOptions) -> PathBuf {
    a.nsys
        .clone()
        .or_else(|| {
            std::env::var_os("RANKPROF_NSYS")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        })
        .unwrap_or_else(|| PathBuf::from("nsys"))
}

/// What one bounded nsys call did.
#[derive(Debug)]
pub(crate) struct Ran {
    pub(crate) output: Output,
    /// It ran past its limit and was killed.
    pub(crate) timed_out: bool,
    pub(crate) limit: Duration,
}

impl Ran {
    /// stdout and stderr, trimmed, after a first line saying so when nsys was killed.
    pub(crate) fn text(&self) -> String {
        let mut s = String::new();
        if self.timed_out {
            s.push_str(&format!(
                "nsys did not finish within {} s and was killed",
                self.limit.as_secs_f64()
            ));
        }
        for part in [&self.output.stdout, &self.output.stderr] {
            let t = String::from_utf8_lossy(part);
            if !t.trim().is_empty() {
                if !s.is_empty() {
                    s.push('\n');
                }
                s.push_str(t.trim());
            }
        }
        s
    }
}

fn spawn_error(bin: &Path, e: std::io::Error) -> anyhow::Error {
    if e.kind() == std::io::ErrorKind::NotFound {
        anyhow!(
            "`{}` not found: install Nsight Systems and put nsys on PATH, or pass --nsys /path/to/nsys",
            bin.display()
        )
    } else {
        anyhow!("cannot run {}: {e}", bin.display())
    }
}

fn read_back(mut f: std::fs::File) -> Vec<u8> {
    let mut v = Vec::new();
    if f.seek(SeekFrom::Start(0)).is_ok() {
        let _ = f.take(OUTPUT_LIMIT).read_to_end(&mut v);
    }
    v
}

/// Runs nsys with these arguments for at most `limit`; past it, nsys is killed (and reaped)
/// and the result says so. `Err` only when nsys cannot be run at all.
pub(crate) fn exec_within(bin: &Path, args: &[String], limit: Duration) -> Result<Ran> {
    let out = tempfile::tempfile().context("cannot create a temporary file for nsys's output")?;
    let err = tempfile::tempfile().context("cannot create a temporary file for nsys's output")?;
    let mut child = Command::new(bin)
        .args(args)
        .stdin(Stdio::null())
        .stdout(out.try_clone()?)
        .stderr(err.try_clone()?)
        .spawn()
        .map_err(|e| spawn_error(bin, e))?;
    let end = Instant::now() + limit;
    let mut timed_out = false;
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        let Some(left) = end.checked_duration_since(Instant::now()) else {
            timed_out = true;
            // SIGKILL, then reap it: no zombie, no nsys left running.
            let _ = child.kill();
            break child.wait()?;
        };
        std::thread::sleep(left.min(Duration::from_millis(20)));
    };
    Ok(Ran {
        output: Output {
            status,
            stdout: read_back(out),
            stderr: read_back(err),
        },
        timed_out,
        limit,
    })
}

/// Runs nsys with these arguments for at most [`NSYS_TIMEOUT`]; a call past it is an error.
pub fn exec(bin: &Path, args: &[String]) -> Result<Output> {
    let ran = exec_within(bin, args, NSYS_TIMEOUT)?;
    if ran.timed_out {
        bail!("`{} {}`: {}", bin.display(), args.join(" "), ran.text());
    }
    Ok(ran.output)
}

/// `nsys sessions list`, parsed (at most [`NSYS_TIMEOUT`]).
pub fn list(bin: &Path) -> Result<Vec<Session>> {
    list_within(bin, NSYS_TIMEOUT)
}

/// `nsys sessions list`, parsed; nsys is killed after `limit`, which is an error.
pub(crate) fn list_within(bin: &Path, limit: Duration) -> Result<Vec<Session>> {
    let ran = exec_within(bin, &["sessions".into(), "list".into()], limit)?;
    if ran.timed_out {
        bail!(
            "`nsys sessions list` did not finish within {} s and was killed (is nsys hung? --timeout sets the limit)",
            limit.as_secs_f64()
        );
    }
    if !ran.output.status.success() {
        bail!(
            "`nsys sessions list` failed ({}): {}",
            ran.output.status,
            ran.text()
        );
    }
    parse_sessions(&String::from_utf8_lossy(&ran.output.stdout))
}

/// What one `nsys start`/`stop` did.
#[derive(Clone, Debug, Serialize)]
pub struct Done {
    pub session: Session,
    pub action: &'static str,
    /// nsys's exit code (`None`: killed by a signal, or at its timeout).
    pub exit: Option<i32>,
    /// nsys ran past its limit and was killed.
    pub timed_out: bool,
    pub ok: bool,
    pub output: String,
}

fn pick<'a>(sessions: &'a [Session], a: &NsysOptions, action: &str) -> Result<Vec<&'a Session>> {
    let names = || {
        if sessions.is_empty() {
            "there are none".to_string()
        } else {
            let v: Vec<String> = sessions
                .iter()
                .map(|s| format!("{} {} ({})", s.id, s.name, s.state))
                .collect();
            format!("sessions: {}", v.join(", "))
        }
    };
    if let Some(want) = &a.session {
        return match sessions.iter().find(|s| &s.id == want || &s.name == want) {
            Some(s) => Ok(vec![s]),
            None => bail!("no nsys session {want:?}; {}", names()),
        };
    }
    if !a.all {
        bail!(
            "which session? give --session ID|NAME or --all; {}",
            names()
        );
    }
    let chosen: Vec<&Session> = sessions
        .iter()
        .filter(|s| {
            if action == "start" {
                s.is_startable()
            } else {
                s.is_collecting()
            }
        })
        .collect();
    if chosen.is_empty() {
        let want = if action == "start" {
            "Launched"
        } else {
            "Collection or DelayedCollection"
        };
        bail!("no session to {action} (none is {want}); {}", names());
    }
    Ok(chosen)
}

/// Runs `nsys start|stop --session=NAME [extra…]` on each chosen session.
/// A call past its limit is killed and counts as failed (`exit: None`).
pub fn act(a: &NsysOptions, action: &'static str) -> Result<Vec<Done>> {
    let bin = nsys_binary(a);
    let sessions = list_within(&bin, a.limit("list"))?;
    let chosen = pick(&sessions, a, action)?;
    let mut out = Vec::new();
    for s in chosen {
        let mut args = vec![action.to_string(), format!("--session={}", s.name)];
        args.extend(a.extra.iter().cloned());
        let ran = exec_within(&bin, &args, a.limit(action))?;
        out.push(Done {
            session: s.clone(),
            action,
            exit: if ran.timed_out {
                None
            } else {
                ran.output.status.code()
            },
            timed_out: ran.timed_out,
            ok: !ran.timed_out && ran.output.status.success(),
            output: ran.text(),
        });
    }
    Ok(out)
}

/// The reports (`*.nsys-rep`) nsys says it wrote: the lines of its output that are a path to
/// one (`Generated:` is followed by the report's path, indented), that exist now.
pub(crate) fn reports_written(output: &str) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    for l in output.lines() {
        let t = l.trim();
        if t.ends_with(".nsys-rep") && !t.starts_with('[') {
            let p = PathBuf::from(t);
            if p.is_file() && !out.contains(&p) {
                out.push(p);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const LISTED: &str = "\
 ID      TIME       STATE               LAUNCH  NAME
 4021    00:01:12   Collection          1       profile-4021
 4188    00:00:03   DelayedCollection   1       profile-4188
 4190    00:00:01   Launched            0       my run
";

    #[test]
    fn parses_the_session_table() {
        let s = parse_sessions(LISTED).unwrap();
        assert_eq!(s.len(), 3);
        assert_eq!(
            s[0],
            Session {
                id: "4021".into(),
                time: "00:01:12".into(),
                state: "Collection".into(),
                launch: "1".into(),
                name: "profile-4021".into()
            }
        );
        assert!(s[1].is_collecting());
        assert_eq!(s[2].name, "my run");
        assert!(s[2].is_startable());
        assert!(parse_sessions("").unwrap().is_empty());
        assert!(parse_sessions("No active sessions.\n").unwrap().is_empty());
        assert!(parse_sessions(" ID TIME STATE LAUNCH NAME\n garbage\n").is_err());
        assert!(parse_sessions(" ID TIME STATE LAUNCH NAME\n x 00:01 Collection 1 p\n").is_err());
    }

    #[test]
    fn finds_the_reports_written() {
        let dir = tempfile::tempdir().unwrap();
        let rep = dir.path().join("run_0.nsys-rep");
        std::fs::write(&rep, "x").unwrap();
        let text = format!(
            "Generating '/tmp/nsys-report-1.qdstrm'\n[1/1] [====100%] run_0.nsys-rep\n\
             Generated:\n    {}\n    {}/gone.nsys-rep\n",
            rep.display(),
            dir.path().display()
        );
        assert_eq!(reports_written(&text), [rep]);
        assert!(reports_written("nsys stop: ok\n").is_empty());
    }

    #[test]
    fn picks_sessions() {
        let s = parse_sessions(LISTED).unwrap();
        let by = |session: Option<&str>, all: bool, action: &str| {
            let a = NsysOptions {
                session: session.map(str::to_string),
                all,
                ..Default::default()
            };
            pick(&s, &a, action).map(|v| v.iter().map(|s| s.name.clone()).collect::<Vec<_>>())
        };
        assert_eq!(by(Some("4188"), false, "stop").unwrap(), ["profile-4188"]);
        assert_eq!(
            by(Some("profile-4021"), false, "stop").unwrap(),
            ["profile-4021"]
        );
        assert_eq!(
            by(None, true, "stop").unwrap(),
            ["profile-4021", "profile-4188"]
        );
        assert_eq!(by(None, true, "start").unwrap(), ["my run"]);
        let e = by(Some("nope"), false, "stop").unwrap_err().to_string();
        assert!(e.contains("4021 profile-4021 (Collection)"), "{e}");
        assert!(by(None, false, "stop").is_err());
    }
}
