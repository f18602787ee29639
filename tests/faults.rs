//! Fault tests (issue #13, "Reliability"): every case is input that once broke a rule — invalid
//! output, silent corruption, a hang, one bad rank sinking its group, temporary files left
//! behind. Each runs under a watchdog, so a regression fails instead of hanging the suite.
//! docs/reliability.md lists the rules and which test proves each.

mod common;

use std::fs;
use std::io::Read;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime};

use common::{kineto, shared, write_gz};
use rankprof::merge::{gather, merge_group, MergeOptions};
use rankprof::trace::{read_trace, Damage, ReadReport};

const BASE: i64 = 1_700_000_000_000_000_000;

/// Runs `f` on its own thread; panics if it has not returned within `secs` (a hang).
fn within<T: Send + 'static>(secs: u64, what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(Duration::from_secs(secs)) {
        Ok(v) => v,
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("{what}: still running after {secs} s"),
        Err(mpsc::RecvTimeoutError::Disconnected) => panic!("{what}: panicked"),
    }
}

/// The rankprof binary with default SIGINT/SIGTERM dispositions (a test runner started in the
/// background may ignore SIGINT, and children inherit that).
fn bin(args: &[&str]) -> Command {
    use std::os::unix::process::CommandExt;
    let mut c = Command::new(env!("CARGO_BIN_EXE_rankprof"));
    c.args(args);
    // SAFETY: only async-signal-safe calls (signal) between fork and exec.
    unsafe {
        c.pre_exec(|| {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            libc::signal(libc::SIGTERM, libc::SIG_DFL);
            Ok(())
        });
    }
    c
}

/// Runs the binary to its end, killing it (and failing) after `secs`.
fn run_bin(args: &[&str], secs: u64) -> Output {
    let child = bin(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("rankprof starts");
    let pid = child.id() as libc::pid_t;
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(Duration::from_secs(secs)) {
        Ok(out) => out.expect("rankprof runs"),
        Err(_) => {
            // SAFETY: kill(2) on our own child's pid.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            panic!("rankprof {args:?}: still running after {secs} s");
        }
    }
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn p(path: &Path) -> &str {
    path.to_str().expect("utf-8 temp path")
}

fn gunzip(path: &Path) -> Vec<u8> {
    let mut v = Vec::new();
    flate2::read::MultiGzDecoder::new(fs::File::open(path).unwrap())
        .read_to_end(&mut v)
        .unwrap();
    v
}

/// Two good SGLang-named ranks `p-TP-0`, `p-TP-1` in `dir`.
fn good_pair(dir: &Path) {
    fs::create_dir_all(dir).unwrap();
    for r in 0..2 {
        write_gz(
            &dir.join(format!("p-TP-{r}.trace.json.gz")),
            kineto(Some(BASE), 3, 10.0).as_bytes(),
        );
    }
}

fn events_of(path: &Path) -> u64 {
    read_trace(path, |_| {}).unwrap().events
}

fn mkfifo(path: &Path) {
    let ok = Command::new("mkfifo").arg(path).status().unwrap().success();
    assert!(ok, "mkfifo {}", path.display());
}

fn python_strict_load(path: &Path) {
    let code = "import gzip, json, sys\njson.load(gzip.open(sys.argv[1], 'rt', encoding='utf-8'))";
    let out = Command::new("python3")
        .args(["-c", code, p(path)])
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "Python's json.load rejects {}: {}",
        path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
}

// ---------------------------------------------------------------------------------------------
// 1. Invalid output: raw control bytes inside strings.

/// A rank whose names, args, pid and header hold raw control bytes (invalid JSON, as some
/// writers emit it), one in a string longer than the scanner's short path.
fn control_doc() -> String {
    let long = format!("{}\u{1}tail", "x".repeat(40));
    format!(
        "{{\"schemaVersion\": 1, \"distributedInfo\": {{\"backend\": \"nc\u{1}cl\", \"rank\": 0}},\n\
         \"traceEvents\": [\n\
         {{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"a\u{1}b\", \"pid\": 0, \"tid\": 7, \"ts\": 1, \"dur\": 2, \"args\": {{\"k\": \"x\u{1f}y\", \"correlation\": 5}}}},\n\
         {{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"line\nbreak\", \"pid\": \"host\tproc\", \"tid\": 1, \"ts\": 3, \"dur\": 1, \"args\": {{\"long\": \"{long}\"}}}},\n\
         {{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"clean\", \"pid\": 1, \"tid\": 1, \"ts\": 5, \"dur\": 1}}\n\
         ], \"baseTimeNanoseconds\": {BASE}}}"
    )
}

#[test]
fn raw_control_bytes_are_escaped_in_the_merged_trace() {
    within(60, "merge with control bytes", || {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("in");
        fs::create_dir(&dir).unwrap();
        write_gz(&dir.join("c-TP-0.trace.json.gz"), control_doc().as_bytes());
        write_gz(
            &dir.join("c-TP-1.trace.json.gz"),
            kineto(Some(BASE), 2, 10.0).as_bytes(),
        );
        // The reader keeps every event, counts them and names the first byte.
        let r = read_trace(&dir.join("c-TP-0.trace.json.gz"), |_| {}).unwrap();
        assert_eq!(r.events, 3);
        assert!(!r.is_damaged(), "{r}");
        assert_eq!(r.raw_control, 3, "{r}"); // the header value and two events
        let first = control_doc().find('\u{1}').unwrap() as u64;
        assert_eq!(r.first_raw_control, Some(first));
        assert!(r.notes()[0].contains(&format!(
            "hold raw control characters (U+0000-U+001F) inside strings, which JSON forbids (first at byte {first})"
        )));

        let out = t.path().join("m.trace.json.gz");
        let d = gather(Some(&dir), &[], false, None, None).unwrap();
        let res = merge_group(&d.groups[0], &out, &MergeOptions::default()).unwrap();
        assert!(!res.damaged());
        // Strict parsers accept the output: serde_json and Python's json.
        let v: serde_json::Value = serde_json::from_slice(&gunzip(&out))
            .unwrap_or_else(|e| panic!("merged output is not valid JSON: {e}"));
        python_strict_load(&out);
        let evs = v["traceEvents"].as_array().unwrap();
        let by_name = |n: &str| evs.iter().find(|e| e["name"] == n);
        let k = by_name("a\u{1}b").expect("the name round-trips as the escaped char");
        assert_eq!(k["args"]["k"], "x\u{1f}y");
        assert_eq!(k["pid"], "[TP00] 0");
        let c = by_name("line\nbreak").expect("raw newline round-trips");
        assert_eq!(c["pid"], "[TP00] host\tproc");
        assert_eq!(
            c["args"]["long"],
            format!("{}\u{1}tail", "x".repeat(40)).as_str()
        );
        assert_eq!(v["distributedInfo"]["backend"], "nc\u{1}cl");
        // Written as \u00XX escapes, not raw bytes.
        let raw = String::from_utf8(gunzip(&out)).unwrap();
        assert!(raw.contains(r#""a\u0001b""#) && raw.contains(r#""x\u001fy""#));
        // analyze reads the same rank and its JSON report is valid too.
        let a = common::analyze_files(&[dir.join("c-TP-0.trace.json.gz")], |_| {});
        let json = rankprof::report::formats::json(&a).unwrap();
        serde_json::from_str::<serde_json::Value>(&json).unwrap();
    });
}

// ---------------------------------------------------------------------------------------------
// 2. Silent corruption: gzip trailers and trailing bytes.

fn fixture_rank() -> PathBuf {
    shared("sglang-cpu/by_stage/bystage-1-TP-1-EXTEND.trace.json.gz")
}

/// Reads a corrupted copy of the fixture; asserts every event was still delivered and the
/// damage names the file and says `want`.
fn assert_trailer_damage(t: &Path, bytes: &[u8], want: &str) -> ReadReport {
    let clean = events_of(&fixture_rank());
    let path = t.join("bystage-1-TP-1-EXTEND.trace.json.gz");
    fs::write(&path, bytes).unwrap();
    let r = read_trace(&path, |_| {}).unwrap();
    assert_eq!(r.events, clean, "the events read are kept");
    let Some(Damage::Gzip { at, msg }) = &r.damage else {
        panic!("no gzip damage: {r}")
    };
    assert!(msg.contains(want), "{msg}");
    assert_eq!(*at, r.bytes, "{r}");
    let note = &r.notes()[0];
    assert!(
        note.contains(&format!(
            "{} has a broken gzip stream after byte {at}: gzip member 1 (compressed bytes 0-{})",
            path.display(),
            bytes.len()
        )),
        "{note}"
    );
    r
}

#[test]
fn gzip_crc_and_isize_fields_are_checked() {
    within(60, "gzip trailer fields", || {
        let t = tempfile::tempdir().unwrap();
        let good = fs::read(fixture_rank()).unwrap();
        let n = good.len();
        let mut crc = good.clone();
        crc[n - 7] ^= 0x10;
        assert_trailer_damage(t.path(), &crc, "CRC-32 mismatch");
        let mut isize = good.clone();
        isize[n - 3] ^= 0x01;
        assert_trailer_damage(t.path(), &isize, "ISIZE mismatch: the trailer says");

        // merge: written, the rank named damaged, exit 3; analyze: exit 3.
        let dir = t.path().join("in");
        fs::create_dir(&dir).unwrap();
        fs::write(dir.join("bystage-1-TP-1-EXTEND.trace.json.gz"), &crc).unwrap();
        fs::copy(
            shared("sglang-cpu/by_stage/bystage-1-TP-0-EXTEND.trace.json.gz"),
            dir.join("bystage-1-TP-0-EXTEND.trace.json.gz"),
        )
        .unwrap();
        let out = t.path().join("m.trace.json.gz");
        let o = run_bin(&["merge", "--profile-dir", p(&dir), "-o", p(&out)], 60);
        assert_eq!(o.status.code(), Some(3), "{}", text(&o));
        assert!(text(&o).contains("CRC-32 mismatch"), "{}", text(&o));
        assert!(out.exists());
        let o = run_bin(&["analyze", "--profile-dir", p(&dir)], 60);
        assert_eq!(o.status.code(), Some(3), "{}", text(&o));
        assert!(text(&o).contains("CRC-32 mismatch"), "{}", text(&o));
    });
}

#[test]
fn a_flipped_bit_that_still_inflates_fails_the_crc() {
    within(120, "bit-flip search", || {
        let t = tempfile::tempdir().unwrap();
        let good = fs::read(fixture_rank()).unwrap();
        let clean = events_of(&fixture_rank());
        let path = t.path().join("flip-TP-0.trace.json.gz");
        // From the middle of the deflate data on, the first bit whose flip leaves a stream that
        // inflates to the same length and to JSON the reader takes whole: only the CRC can tell.
        let mut tries = 0;
        for pos in good.len() / 2..good.len() - 8 {
            for bit in 0..8 {
                tries += 1;
                assert!(tries < 5000, "no silently-inflating bit flip found");
                let mut b = good.clone();
                b[pos] ^= 1 << bit;
                let mut out = Vec::new();
                let inflated = flate2::read::GzDecoder::new(&b[..]).read_to_end(&mut out);
                let Err(e) = inflated else { continue };
                if !e.to_string().contains("checksum") {
                    continue;
                }
                fs::write(&path, &b).unwrap();
                let r = read_trace(&path, |_| {}).unwrap();
                if r.events != clean || r.rejected > 0 {
                    continue;
                }
                // Same length (the ISIZE agrees): only the CRC caught it.
                match &r.damage {
                    Some(Damage::Gzip { msg, .. }) if msg.contains("CRC-32 mismatch") => {}
                    _ => continue,
                }
                assert!(r.is_damaged());
                assert!(r.notes()[0].contains("flip-TP-0.trace.json.gz has a broken gzip stream"));
                return;
            }
        }
        panic!("no silently-inflating bit flip found");
    });
}

#[test]
fn bytes_after_the_last_gzip_member_are_noted() {
    within(60, "trailing garbage", || {
        let t = tempfile::tempdir().unwrap();
        let good = fs::read(fixture_rank()).unwrap();
        let clean = events_of(&fixture_rank());
        // Not a gzip member: noted, not damage (every member before it checked out).
        let mut b = good.clone();
        b.extend_from_slice(&[0u8; 700]);
        b.extend_from_slice(b"garbage");
        let path = t.path().join("g-TP-0.trace.json.gz");
        fs::write(&path, &b).unwrap();
        let r = read_trace(&path, |_| {}).unwrap();
        assert_eq!(r.events, clean);
        assert!(!r.is_damaged(), "{r}");
        assert_eq!(r.trailing_garbage, Some((good.len() as u64, 707)));
        assert!(r.notes().iter().any(|n| n.contains(&format!(
            "707 bytes of trailing garbage after the last gzip member at offset {}",
            good.len()
        ))));
        // The start of a member cut short: damage.
        let mut b = good.clone();
        b.extend_from_slice(&good[..20]);
        fs::write(&path, &b).unwrap();
        let r = read_trace(&path, |_| {}).unwrap();
        assert_eq!(r.events, clean);
        assert!(matches!(r.damage, Some(Damage::Gzip { .. })), "{r}");
        assert!(r.notes()[0].contains("gzip member 2"), "{r}");
        // A second complete member is read as usual.
        let mut b = good.clone();
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut e, b" \n").unwrap();
        b.extend(e.finish().unwrap());
        fs::write(&path, &b).unwrap();
        let r = read_trace(&path, |_| {}).unwrap();
        assert_eq!(r.events, clean);
        assert!(r.notes().is_empty(), "{r}");
    });
}

// ---------------------------------------------------------------------------------------------
// 3. Hangs in discovery.

#[test]
fn recursive_discovery_survives_symlink_loops() {
    within(30, "recursive discovery with loops", || {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("prof");
        good_pair(&dir);
        symlink(".", dir.join("dot")).unwrap();
        // Two links into each other.
        fs::create_dir_all(dir.join("a")).unwrap();
        fs::create_dir_all(dir.join("b")).unwrap();
        symlink("../b", dir.join("a/to-b")).unwrap();
        symlink("../a", dir.join("b/to-a")).unwrap();
        let d = rankprof::trace::discover(&dir, true).unwrap();
        assert_eq!(d.groups.len(), 1, "{:?}", d.groups);
        assert_eq!(d.groups[0].files.len(), 2);
        assert!(
            d.notes
                .iter()
                .any(|n| n.contains("dot: a directory already searched")),
            "{:?}",
            d.notes
        );
        // Through the command too: listed once, merged once.
        let o = run_bin(&["ls", "-r", p(&dir)], 30);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        assert_eq!(text(&o).matches("p-TP-0.trace.json.gz").count(), 1);
    });
}

#[test]
fn recursive_discovery_stops_at_the_depth_cap() {
    within(30, "deep tree", || {
        let t = tempfile::tempdir().unwrap();
        let mut deep = t.path().to_path_buf();
        for _ in 0..rankprof::trace::discover::listing::MAX_DEPTH + 2 {
            deep.push("d");
        }
        good_pair(&deep);
        let mut ok = t.path().to_path_buf();
        for _ in 0..3 {
            ok.push("s");
        }
        good_pair(&ok);
        let d = rankprof::trace::discover(t.path(), true).unwrap();
        assert_eq!(d.groups.len(), 1);
        assert_eq!(d.groups[0].dir, ok);
        assert!(
            d.notes.iter().any(|n| n.contains("deeper than 32 levels")),
            "{:?}",
            d.notes
        );
    });
}

#[test]
fn the_same_file_is_listed_once() {
    within(30, "duplicates", || {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("prof");
        good_pair(&dir);
        let f = dir.join("p-TP-0.trace.json.gz");
        let d = gather(
            None,
            &[f.clone(), f.clone(), dir.join("p-TP-1.trace.json.gz")],
            false,
            None,
            None,
        )
        .unwrap();
        assert_eq!(d.groups[0].files.len(), 2);
        assert!(
            d.notes.iter().any(|n| n.contains("the same file as")),
            "{:?}",
            d.notes
        );
        // A hard link in a subdirectory: --recursive lists the file once.
        fs::create_dir(dir.join("sub")).unwrap();
        fs::hard_link(&f, dir.join("sub/p-TP-0.trace.json.gz")).unwrap();
        let d = rankprof::trace::discover(&dir, true).unwrap();
        let files: usize = d.groups.iter().map(|g| g.files.len()).sum();
        assert_eq!(files, 2, "{:?}", d.groups);
    });
}

#[test]
fn fifos_named_like_traces_are_never_opened() {
    within(60, "FIFOs", || {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("prof");
        good_pair(&dir);
        mkfifo(&dir.join("x-TP-0.trace.json.gz"));
        mkfifo(&dir.join("p-TP-2.trace.json.gz"));
        mkfifo(&dir.join("plain.json"));
        // The last line of defence: the reader refuses it at once.
        let e = rankprof::trace::read::reader::open(&dir.join("plain.json"))
            .err()
            .expect("a FIFO is refused");
        assert!(e.to_string().contains("not a regular file (a FIFO)"), "{e}");

        let d = rankprof::trace::discover(&dir, false).unwrap();
        assert_eq!(d.groups.len(), 1);
        assert_eq!(d.groups[0].files.len(), 2);
        assert_eq!(
            d.notes
                .iter()
                .filter(|n| n.contains("a FIFO, not a regular file; skipped"))
                .count(),
            3,
            "{:?}",
            d.notes
        );
        let out = t.path().join("m.trace.json.gz");
        for args in [
            vec!["merge", "--profile-dir", p(&dir), "-o", p(&out)],
            vec!["analyze", "--profile-dir", p(&dir)],
            vec!["ls", "--count", p(&dir)],
        ] {
            let o = run_bin(&args, 30);
            assert_eq!(o.status.code(), Some(0), "{args:?}: {}", text(&o));
            assert!(
                text(&o).contains("a FIFO, not a regular file"),
                "{}",
                text(&o)
            );
        }
        // Given by name: skipped with the same note; alone, nothing is left to read.
        let fifo = dir.join("x-TP-0.trace.json.gz");
        let good = dir.join("p-TP-0.trace.json.gz");
        let o = run_bin(&["merge", p(&fifo), p(&good), "-o", p(&out)], 30);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        assert!(
            text(&o).contains("a FIFO, not a regular file"),
            "{}",
            text(&o)
        );
        for args in [
            vec!["analyze", p(&fifo)],
            vec!["compare", p(&fifo), p(&good)],
            vec!["inflate", p(&fifo)],
        ] {
            let o = run_bin(&args, 30);
            assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        }
    });
}

// ---------------------------------------------------------------------------------------------
// 4. One bad rank must not sink the group.

fn unreadable_of(out: &Path) -> Vec<(String, Option<String>)> {
    let v: serde_json::Value = serde_json::from_slice(&gunzip(out)).unwrap();
    v["ranks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["label"].as_str().unwrap().to_string(),
                r["unreadable"].as_str().map(String::from),
            )
        })
        .collect()
}

#[test]
fn an_unreadable_rank_is_named_and_the_rest_merged() {
    within(120, "unreadable ranks", || {
        let t = tempfile::tempdir().unwrap();
        // (how the rank is broken, how to break it, the OS error expected)
        type Breaker = fn(&Path);
        let cases: [(&str, Breaker, &str); 3] = [
            (
                "dangling symlink",
                |f| symlink("nowhere", f).unwrap(),
                "No such file",
            ),
            (
                "symlink loop",
                |f| {
                    let other = f.with_file_name("loop-b");
                    symlink(&other, f).unwrap();
                    symlink(f, &other).unwrap();
                },
                "Too many levels of symbolic links",
            ),
            (
                "directory",
                |f| fs::create_dir(f).unwrap(),
                "not a regular file (a directory)",
            ),
        ];
        for (what, brk, os) in cases {
            let dir = t.path().join(what.replace(' ', "-"));
            good_pair(&dir);
            brk(&dir.join("p-TP-2.trace.json.gz"));
            let out = t
                .path()
                .join(format!("{}.trace.json.gz", what.replace(' ', "-")));
            let o = run_bin(&["merge", "--profile-dir", p(&dir), "-o", p(&out)], 60);
            let all = text(&o);
            assert_eq!(o.status.code(), Some(3), "{what}: {all}");
            assert!(
                all.contains("unreadable, left out: reading "),
                "{what}: {all}"
            );
            assert!(all.contains(os), "{what}: {all}");
            assert!(
                !all.contains("writing"),
                "{what}: a read error reported as a write: {all}"
            );
            let ranks = unreadable_of(&out);
            assert_eq!(ranks.len(), 3, "{what}");
            assert_eq!(ranks[0], ("[TP00]".to_string(), None));
            assert_eq!(ranks[1], ("[TP01]".to_string(), None));
            assert_eq!(ranks[2].0, "[TP02]");
            assert!(
                ranks[2].1.as_deref().unwrap_or("").contains(os),
                "{what}: {ranks:?}"
            );
            // The other ranks are all there.
            let merged = events_of(&out);
            let one = events_of(&dir.join("p-TP-0.trace.json.gz"));
            assert!(merged >= 2 * one, "{what}: {merged} events");

            // analyze: the rank named in the notes and in the JSON, exit 3.
            let o = run_bin(
                &["analyze", "--profile-dir", p(&dir), "--format", "json"],
                60,
            );
            assert_eq!(o.status.code(), Some(3), "{what}: {}", text(&o));
            let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
            let files = v["files"].as_array().unwrap();
            let bad: Vec<_> = files
                .iter()
                .filter(|f| !f["unreadable"].is_null())
                .collect();
            assert_eq!(bad.len(), 1, "{what}: {files:?}");
            assert_eq!(bad[0]["ranks"], "TP02");
            assert!(bad[0]["unreadable"].as_str().unwrap().contains(os));
            assert_eq!(v["ranks"].as_array().unwrap().len(), 2);
            assert!(v["notes"].as_array().unwrap().iter().any(|n| n
                .as_str()
                .unwrap()
                .starts_with("rank TP02 is unreadable and left out: reading ")));
        }
    });
}

#[test]
fn a_rank_deleted_after_discovery_is_named() {
    within(60, "deleted between discovery and open", || {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("prof");
        good_pair(&dir);
        write_gz(
            &dir.join("p-TP-2.trace.json.gz"),
            kineto(Some(BASE), 3, 10.0).as_bytes(),
        );
        for opts in [
            MergeOptions::default(),
            // With a scan pass first (steps / first-step alignment).
            MergeOptions {
                align: rankprof::merge::Align::FirstStep,
                ..Default::default()
            },
        ] {
            let d = gather(Some(&dir), &[], false, None, None).unwrap();
            fs::rename(dir.join("p-TP-1.trace.json.gz"), t.path().join("moved.gz")).unwrap();
            let out = t.path().join("m.trace.json.gz");
            let res = merge_group(&d.groups[0], &out, &opts).unwrap();
            fs::rename(t.path().join("moved.gz"), dir.join("p-TP-1.trace.json.gz")).unwrap();
            assert!(res.damaged());
            assert_eq!(res.ranks.len(), 3);
            let why = res.ranks[1]
                .unreadable
                .as_deref()
                .expect("rank 1 unreadable");
            assert!(
                why.starts_with("reading ") && why.contains("No such file"),
                "{why}"
            );
            assert!(res.ranks[0].unreadable.is_none() && res.ranks[2].unreadable.is_none());
            assert_eq!(res.output.as_deref(), Some(out.as_path()));
            assert_eq!(
                res.events,
                res.ranks[0].written
                    + res.ranks[2].written
                    + res.ranks[0].added
                    + res.ranks[2].added
            );
            assert_eq!(unreadable_of(&out)[1].1.as_deref(), Some(why));
        }
    });
}

#[test]
fn when_no_rank_reads_nothing_is_written_and_the_exit_is_2() {
    within(60, "all unreadable", || {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("prof");
        fs::create_dir(&dir).unwrap();
        symlink("nowhere-0", dir.join("p-TP-0.trace.json.gz")).unwrap();
        symlink("nowhere-1", dir.join("p-TP-1.trace.json.gz")).unwrap();
        let out = t.path().join("m.trace.json.gz");
        let o = run_bin(&["merge", "--profile-dir", p(&dir), "-o", p(&out)], 30);
        assert_eq!(o.status.code(), Some(2), "{}", text(&o));
        let all = text(&o);
        assert!(
            all.contains("no rank of profile p could be read; nothing written"),
            "{all}"
        );
        assert!(all.contains("[TP01]: reading "), "{all}");
        assert!(!out.exists());
        let left: Vec<_> = fs::read_dir(t.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(left.len(), 1, "{left:?}");
        let o = run_bin(&["analyze", "--profile-dir", p(&dir)], 30);
        assert_eq!(o.status.code(), Some(2), "{}", text(&o));
        assert!(
            text(&o).contains("no rank of profile p could be read"),
            "{}",
            text(&o)
        );
    });
}

// ---------------------------------------------------------------------------------------------
// 5. Interrupted merge.

fn merge_temporaries(dir: &Path) -> Vec<String> {
    fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".rankprof-merge-") || n.contains(".tmp-"))
        .collect()
}

#[test]
fn sigterm_and_sigint_mid_merge_leave_nothing_behind() {
    within(300, "interrupted merges", || {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("prof");
        let o = run_bin(
            &["synth", "-o", p(&dir), "--tp", "4", "--target-mb", "40"],
            120,
        );
        assert!(o.status.success(), "{}", text(&o));
        for (sig, code) in [(libc::SIGTERM, 143), (libc::SIGINT, 130)] {
            let out = dir.join("merged-interrupted.trace.json.gz");
            let mut child = bin(&[
                "merge",
                "--profile-dir",
                p(&dir),
                "-o",
                p(&out),
                "--level",
                "9",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
            // Wait until the merge is under way (its temporary directory exists).
            let t0 = Instant::now();
            while !merge_temporaries(&dir)
                .iter()
                .any(|n| n.starts_with(".rankprof-merge-"))
            {
                assert!(
                    child.try_wait().unwrap().is_none(),
                    "the merge ended before it could be interrupted"
                );
                assert!(
                    t0.elapsed() < Duration::from_secs(60),
                    "no temporary directory appeared"
                );
                std::thread::sleep(Duration::from_millis(5));
            }
            std::thread::sleep(Duration::from_millis(100));
            // SAFETY: kill(2) on our own child's pid.
            unsafe { libc::kill(child.id() as libc::pid_t, sig) };
            let t1 = Instant::now();
            let status = loop {
                if let Some(s) = child.try_wait().unwrap() {
                    break s;
                }
                if t1.elapsed() > Duration::from_secs(10) {
                    let _ = child.kill();
                    panic!("merge still running 10 s after signal {sig}");
                }
                std::thread::sleep(Duration::from_millis(10));
            };
            assert_eq!(status.code(), Some(code), "signal {sig}: {status:?}");
            assert_eq!(
                merge_temporaries(&dir),
                Vec::<String>::new(),
                "signal {sig}"
            );
            assert!(!out.exists(), "no partial output");
        }
    });
}

#[test]
fn stale_merge_directories_are_swept_and_fresh_ones_kept() {
    within(60, "stale temporaries", || {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("prof");
        good_pair(&dir);
        let old = dir.join(".rankprof-merge-old");
        let fresh = dir.join(".rankprof-merge-fresh");
        let old_file = dir.join(".rankprof-merge-not-a-dir");
        for d in [&old, &fresh] {
            fs::create_dir(d).unwrap();
            fs::write(d.join("rank-0.deflate"), b"x").unwrap();
        }
        fs::write(&old_file, b"x").unwrap();
        let two_days = SystemTime::now() - Duration::from_secs(2 * 24 * 3600);
        for f in [&old, &old_file] {
            fs::File::open(f).unwrap().set_modified(two_days).unwrap();
        }
        let out = dir.join("merged.trace.json.gz");
        let d = gather(Some(&dir), &[], false, None, None).unwrap();
        let res = merge_group(&d.groups[0], &out, &MergeOptions::default()).unwrap();
        assert!(!old.exists(), "a day-old temporary directory is removed");
        assert!(fresh.exists(), "a fresh one may belong to a running merge");
        assert!(old_file.exists(), "only directories are ours");
        assert!(
            res.notes
                .iter()
                .any(|n| n.starts_with("removed 1 stale temporary directories")),
            "{:?}",
            res.notes
        );
        assert!(out.exists());
    });
}
