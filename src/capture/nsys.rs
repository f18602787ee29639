//! `rankprof nsys list|start|stop`: Nsight Systems sessions of a server launched under
//! `nsys launch` / `nsys profile`.
//!
//! Wraps `nsys sessions list` (a table with the columns `ID TIME STATE LAUNCH NAME`; states
//! `Launched`, `DelayedCollection`, `Collection`, `Generation`), `nsys start --session=NAME` and
//! `nsys stop --session=NAME`. nsys is run with an argument vector, never through a shell, so a
//! session name cannot inject anything.

use std::path::PathBuf;
use std::process::{Command, Output};

use anyhow::{anyhow, bail, Result};
use serde::Serialize;

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
    pub fn is_collecting(&self) -> bool {
        self.state == "Collection" || self.state == "DelayedCollection"
    }
    /// Launched and waiting for `nsys start`.
    pub fn is_startable(&self) -> bool {
        self.state == "Launched"
    }
}

/// Reads the `nsys sessions list` table. Lines before the `ID … NAME` header are ignored; a line
/// after it that is not a session is an error (never a session silently lost).
pub fn parse_sessions(text: &str) -> Result<Vec<Session>> {
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
pub fn nsys_binary(a: &NsysOptions) -> PathBuf {
    a.nsys
        .clone()
        .or_else(|| {
            std::env::var_os("RANKPROF_NSYS")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        })
        .unwrap_or_else(|| PathBuf::from("nsys"))
}

/// Runs nsys with these arguments.
pub fn exec(bin: &PathBuf, args: &[String]) -> Result<Output> {
    Command::new(bin).args(args).output().map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            anyhow!(
                "`{}` not found: install Nsight Systems and put nsys on PATH, or pass --nsys /path/to/nsys",
                bin.display()
            )
        } else {
            anyhow!("cannot run {}: {e}", bin.display())
        }
    })
}

fn text(o: &Output) -> String {
    let mut s = String::from_utf8_lossy(&o.stdout).trim().to_string();
    let e = String::from_utf8_lossy(&o.stderr);
    if !e.trim().is_empty() {
        if !s.is_empty() {
            s.push('\n');
        }
        s.push_str(e.trim());
    }
    s
}

/// `nsys sessions list`, parsed.
pub fn list(bin: &PathBuf) -> Result<Vec<Session>> {
    let o = exec(bin, &["sessions".into(), "list".into()])?;
    if !o.status.success() {
        bail!("`nsys sessions list` failed ({}): {}", o.status, text(&o));
    }
    parse_sessions(&String::from_utf8_lossy(&o.stdout))
}

/// What one `nsys start`/`stop` did.
#[derive(Clone, Debug, Serialize)]
pub struct Done {
    pub session: Session,
    pub action: &'static str,
    pub exit: Option<i32>,
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
pub fn act(a: &NsysOptions, action: &'static str) -> Result<Vec<Done>> {
    let bin = nsys_binary(a);
    let sessions = list(&bin)?;
    let chosen = pick(&sessions, a, action)?;
    let mut out = Vec::new();
    for s in chosen {
        let mut args = vec![action.to_string(), format!("--session={}", s.name)];
        args.extend(a.extra.iter().cloned());
        let o = exec(&bin, &args)?;
        out.push(Done {
            session: s.clone(),
            action,
            exit: o.status.code(),
            ok: o.status.success(),
            output: text(&o),
        });
    }
    Ok(out)
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
