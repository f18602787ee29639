//! `rankprof … | head`: a reader that stops early closes the pipe; every command then ends
//! quietly with exit code 0 (as ripgrep does), never with a panic or an error message. The
//! pipe's read end is closed before the command starts, so its very first write fails: the
//! case is met on every run, not by a race.

use std::os::fd::{FromRawFd, OwnedFd};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn manifest(p: &str) -> String {
    format!("{}/{p}", env!("CARGO_MANIFEST_DIR"))
}

/// A pipe whose read end is already closed: its write end, for a child's stdout.
fn closed_pipe() -> Stdio {
    let mut fds = [0i32; 2];
    // SAFETY: `pipe` fills two new descriptors; the read end is closed at once and the write end
    // is owned by the returned `Stdio` alone.
    unsafe {
        assert_eq!(libc::pipe(fds.as_mut_ptr()), 0, "pipe");
        libc::close(fds[0]);
        Stdio::from(OwnedFd::from_raw_fd(fds[1]))
    }
}

/// Runs `rankprof ARGS` into a closed pipe: (exit code, stderr).
fn into_closed_pipe(args: &[&str]) -> (Option<i32>, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_rankprof"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(closed_pipe())
        .stderr(Stdio::piped())
        .env("NO_COLOR", "1")
        .spawn()
        .expect("rankprof starts");
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        if child.try_wait().expect("wait").is_some() {
            break;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("rankprof {args:?} still runs after 120 s writing into a closed pipe");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().expect("output");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn every_command_ends_quietly_on_a_closed_pipe() {
    let tmp = tempfile::tempdir().unwrap();
    let fixtures = manifest("fixtures");
    let tp4 = manifest("fixtures/sglang-tp4");
    let merged = format!("{}/", tmp.path().display());
    let synth = tmp.path().join("synth");
    let synth = synth.to_string_lossy();
    let runs: Vec<Vec<&str>> = vec![
        vec!["ls", &fixtures, "-r", "--count"],
        vec!["ls", &tp4, "--format", "json"],
        vec!["analyze", "--profile-dir", &tp4],
        vec!["analyze", "--profile-dir", &tp4, "--format", "json"],
        vec!["analyze", "--profile-dir", &tp4, "--format", "csv"],
        vec!["merge", "--profile-dir", &tp4, "-o", &merged],
        vec!["compare", &tp4, &tp4, "--format", "markdown"],
        vec!["completions", "bash"],
        vec![
            "synth", "-o", &synth, "--tp", "2", "--steps", "2", "--layers", "1",
        ],
    ];
    for args in &runs {
        let (code, err) = into_closed_pipe(args);
        assert_eq!(
            code,
            Some(0),
            "rankprof {args:?}: exit {code:?}, stderr:\n{err}"
        );
        for bad in ["panicked", "error", "Broken pipe"] {
            assert!(!err.contains(bad), "rankprof {args:?} said {bad:?}:\n{err}");
        }
    }
}
