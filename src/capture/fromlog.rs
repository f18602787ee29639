//! The router address in a training log: verl, slime and SGLang print `Router launched at
//! HOST:PORT` (sometimes coloured, sometimes as `SGLang router launched at …`) when they start
//! one; `--from-log` takes the last such line.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::sync::OnceLock;

use anyhow::{Context, Result};
use regex::Regex;

fn ansi_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r"\x1b\[[0-9;?]*[A-Za-z]").expect("static regex"))
}

fn launched_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(
            r"(?i)router launched at\s+(?:https?://)?([A-Za-z0-9_.\-]+|\[[0-9A-Fa-f:.]+\]):(\d+)",
        )
        .expect("static regex")
    })
}

/// The router address in one log line (`Router launched at 10.0.0.1:3521, Prometheus port: …`,
/// `SGLang router launched at …`), as `http://HOST:PORT`.
pub(crate) fn router_in_line(line: &str) -> Option<String> {
    let clean = ansi_re().replace_all(line, "");
    let c = launched_re().captures(&clean)?;
    Some(format!("http://{}:{}", &c[1], &c[2]))
}

/// The last router address in a log file, read line by line (training logs can be large and
/// need not be UTF-8).
pub(crate) fn router_from_log(path: &Path) -> Result<Option<String>> {
    let f = File::open(path).with_context(|| format!("cannot open log {}", path.display()))?;
    let mut r = BufReader::new(f);
    let mut buf = Vec::new();
    let mut last = None;
    loop {
        buf.clear();
        let n = r
            .read_until(b'\n', &mut buf)
            .with_context(|| format!("cannot read log {}", path.display()))?;
        if n == 0 {
            break;
        }
        if memchr::memmem::find(&buf, b"aunched at").is_some() {
            if let Some(u) = router_in_line(&String::from_utf8_lossy(&buf)) {
                last = Some(u);
            }
        }
    }
    Ok(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn router_line_in_logs() {
        assert_eq!(
            router_in_line(
                "(RolloutManager pid=1) Router launched at 10.1.2.3:3521, Prometheus port: 4153"
            )
            .as_deref(),
            Some("http://10.1.2.3:3521")
        );
        assert_eq!(
            router_in_line("\x1b[36mSGLang router launched at 127.0.0.1:30000\x1b[0m").as_deref(),
            Some("http://127.0.0.1:30000")
        );
        assert_eq!(
            router_in_line("Router launched at [::1]:8000").as_deref(),
            Some("http://[::1]:8000")
        );
        assert_eq!(
            router_in_line("Router launched at http://host-a:80.").as_deref(),
            Some("http://host-a:80")
        );
        assert_eq!(router_in_line("router failed to launch"), None);
    }

    #[test]
    fn last_router_line_of_a_log_wins() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("train.log");
        let mut text = b"Router launched at 10.0.0.1:3000, Prometheus port: 1\n".to_vec();
        text.extend_from_slice(b"\xff\xfe binary junk\n");
        text.extend_from_slice(
            b"step 1 loss 0.3\nRouter launched at 10.0.0.2:3999, Prometheus port: 2\nrestarting\n",
        );
        std::fs::write(&p, text).unwrap();
        assert_eq!(
            router_from_log(&p).unwrap().as_deref(),
            Some("http://10.0.0.2:3999")
        );
        std::fs::write(&p, "nothing here\n").unwrap();
        assert_eq!(router_from_log(&p).unwrap(), None);
        assert!(router_from_log(&dir.path().join("missing.log")).is_err());
    }
}
