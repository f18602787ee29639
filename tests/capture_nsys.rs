//! `rankprof nsys` against a stand-in `nsys` (tests/support/fake-nsys.sh) that prints the real
//! `nsys sessions list` column layout, logs every argument it gets, and can hang (then it must
//! be killed at its timeout).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use rankprof::capture::nsys;
use rankprof::capture::nsys::NsysOptions;

const SESSIONS: &str = "\
 ID      TIME       STATE               LAUNCH  NAME
 4021    00:01:12   Collection          1       profile-4021
 4188    00:00:03   DelayedCollection   1       profile-4188
 4190    00:00:01   Launched            0       my run; touch pwned
 4200    00:02:40   Generation          1       profile-4200
";

struct Fake {
    dir: tempfile::TempDir,
}

impl Fake {
    fn new(sessions: &str) -> Fake {
        let dir = tempfile::tempdir().unwrap();
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/fake-nsys.sh");
        // A link, not a copy: writing an executable while other test threads fork can make
        // running it fail with ETXTBSY. The script keeps its state beside the link ($0).
        std::os::unix::fs::symlink(&script, dir.path().join("nsys")).unwrap();
        std::fs::write(dir.path().join("sessions.txt"), sessions).unwrap();
        Fake { dir }
    }
    fn bin(&self) -> PathBuf {
        self.dir.path().join("nsys")
    }
    /// One line per nsys call: its arguments, each in brackets.
    fn calls(&self) -> Vec<String> {
        std::fs::read_to_string(self.dir.path().join("calls.log"))
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }
    fn args(&self, session: Option<&str>, all: bool) -> NsysOptions {
        NsysOptions {
            session: session.map(str::to_string),
            all,
            nsys: Some(self.bin()),
            ..Default::default()
        }
    }
}

#[test]
fn lists_sessions_in_the_real_layout() {
    let f = Fake::new(SESSIONS);
    let s = nsys::list(&f.bin()).unwrap();
    let got: Vec<(&str, &str, &str)> = s
        .iter()
        .map(|s| (s.id.as_str(), s.state.as_str(), s.name.as_str()))
        .collect();
    assert_eq!(
        got,
        [
            ("4021", "Collection", "profile-4021"),
            ("4188", "DelayedCollection", "profile-4188"),
            ("4190", "Launched", "my run; touch pwned"),
            ("4200", "Generation", "profile-4200"),
        ]
    );
    assert_eq!(f.calls(), ["[sessions][list]"]);
}

#[test]
fn stop_all_stops_the_collecting_sessions_only() {
    let f = Fake::new(SESSIONS);
    let done = nsys::act(&f.args(None, true), "stop").unwrap();
    assert!(done.iter().all(|d| d.ok));
    assert_eq!(
        f.calls(),
        [
            "[sessions][list]",
            "[stop][--session=profile-4021]",
            "[stop][--session=profile-4188]"
        ]
    );
}

#[test]
fn start_by_id_passes_the_name_as_one_argument() {
    let f = Fake::new(SESSIONS);
    let mut a = f.args(Some("4190"), false);
    a.extra = vec!["--sample=none".into()];
    let done = nsys::act(&a, "start").unwrap();
    assert_eq!(done.len(), 1);
    assert!(done[0].ok, "{:?}", done[0]);
    // no shell: the `;` stays inside the argument and nothing ran
    assert_eq!(
        f.calls()[1],
        "[start][--session=my run; touch pwned][--sample=none]"
    );
    assert!(!f.dir.path().join("pwned").exists());
    assert!(!Path::new("pwned").exists());
}

#[test]
fn unknown_session_and_failing_nsys() {
    let f = Fake::new(SESSIONS);
    let e = nsys::act(&f.args(Some("9999"), false), "stop")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("no nsys session \"9999\"") && e.contains("4021 profile-4021 (Collection)"),
        "{e}"
    );
    let e = nsys::act(&f.args(None, false), "stop")
        .unwrap_err()
        .to_string();
    assert!(e.contains("--session"), "{e}");
    // a listed session that nsys then refuses: exit code 1, nsys's words kept
    std::fs::write(f.dir.path().join("refuse.txt"), "profile-4188\n").unwrap();
    let code = rankprof::commands::run(rankprof::cli::Command::Nsys(
        rankprof::cli::capture::NsysCommand::Stop(rankprof::cli::capture::NsysStopArgs {
            nsys: rankprof::cli::capture::NsysArgs {
                all: true,
                nsys: Some(f.bin()),
                ..Default::default()
            },
            ..Default::default()
        }),
    ))
    .unwrap();
    assert_eq!(code, 1);
    let done = nsys::act(&f.args(Some("profile-4188"), false), "stop").unwrap();
    assert!(!done[0].ok);
    assert_eq!(done[0].exit, Some(1));
    assert!(
        done[0].output.contains("cannot stop now"),
        "{}",
        done[0].output
    );
    let done = nsys::act(&f.args(Some("profile-4021"), false), "stop").unwrap();
    assert!(done[0].ok);
}

#[test]
fn no_sessions() {
    let f = Fake::new("No active sessions.\n");
    assert!(nsys::list(&f.bin()).unwrap().is_empty());
    let e = nsys::act(&f.args(None, true), "stop")
        .unwrap_err()
        .to_string();
    assert!(e.contains("there are none"), "{e}");
}

fn rankprof(path_env: &str, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_rankprof"))
        .args(args)
        .env("PATH", path_env)
        .env_remove("RANKPROF_NSYS")
        .output()
        .unwrap()
}

#[test]
fn nsys_is_found_on_path_and_missing_nsys_is_a_clear_error() {
    let f = Fake::new(SESSIONS);
    let path = format!("{}:/usr/bin:/bin", f.dir.path().display());
    let out = rankprof(&path, &["nsys", "list", "--json"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["sessions"].as_array().unwrap().len(), 4);
    assert_eq!(v["sessions"][1]["state"], "DelayedCollection");

    let empty = tempfile::tempdir().unwrap();
    let out = rankprof(empty.path().to_str().unwrap(), &["nsys", "stop", "--all"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("`nsys` not found") && err.contains("--nsys"),
        "{err}"
    );
}

/// The pid the hung fake nsys wrote, and whether that process is still alive (a reaped process
/// has no /proc entry; a zombie would say `State: Z`).
fn hung_alive(f: &Fake) -> (u32, bool) {
    let pid: u32 = std::fs::read_to_string(f.dir.path().join("hung.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let alive = status
        .lines()
        .find(|l| l.starts_with("State:"))
        .is_some_and(|l| !l.contains("Z"));
    (pid, alive)
}

#[test]
fn a_hung_nsys_list_is_killed_at_its_timeout() {
    let f = Fake::new(SESSIONS);
    std::fs::write(f.dir.path().join("hang.txt"), "sessions\n").unwrap();
    let mut a = f.args(None, true);
    a.timeout = Some(0.5);
    let t0 = Instant::now();
    let e = nsys::act(&a, "stop").unwrap_err().to_string();
    assert!(t0.elapsed() < Duration::from_secs(3), "{:?}", t0.elapsed());
    assert!(
        e.contains("`nsys sessions list` did not finish within 0.5 s and was killed"),
        "{e}"
    );
    let (pid, alive) = hung_alive(&f);
    assert!(!alive, "nsys (pid {pid}) was left running");
    // from the command line: exit code 2 and the same words
    let out = Command::new(env!("CARGO_BIN_EXE_rankprof"))
        .args(["nsys", "list", "--timeout", "0.3", "--nsys"])
        .arg(f.bin())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("was killed"));
    assert!(!hung_alive(&f).1);
}

#[test]
fn a_hung_nsys_stop_fails_its_session_and_is_killed() {
    let f = Fake::new(SESSIONS);
    std::fs::write(f.dir.path().join("hang.txt"), "stop\n").unwrap();
    let mut a = f.args(Some("profile-4021"), false);
    // list/start keep their own limit; stop gets --stop-timeout
    a.stop_timeout = Some(0.5);
    assert_eq!(a.limit("list"), nsys::NSYS_TIMEOUT);
    let t0 = Instant::now();
    let done = nsys::act(&a, "stop").unwrap();
    assert!(t0.elapsed() < Duration::from_secs(3), "{:?}", t0.elapsed());
    assert_eq!(done.len(), 1);
    assert!(!done[0].ok && done[0].timed_out);
    assert_eq!(done[0].exit, None);
    assert!(
        done[0]
            .output
            .starts_with("nsys did not finish within 0.5 s and was killed"),
        "{}",
        done[0].output
    );
    // what it printed before hanging is kept
    assert!(
        done[0].output.contains("nsys stop: hanging"),
        "{}",
        done[0].output
    );
    let (pid, alive) = hung_alive(&f);
    assert!(!alive, "nsys (pid {pid}) was left running");
}
