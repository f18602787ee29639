//! Outputs are checked writable before the work (issue #43, item 5): an output in a place no
//! file can be created in fails at once — exit 2, the reason and the fix on stderr, nothing on
//! stdout (no analysis was run, no merge written). `/proc` stands for a read-only place: even
//! root cannot create a file there, as tests may run as root.

use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_rankprof");

fn run(args: &[&str]) -> (i32, String, String) {
    let o = Command::new(BIN)
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("rankprof runs");
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[cfg(target_os = "linux")]
#[test]
fn an_output_that_cannot_be_written_fails_before_the_work() {
    let tp4 = "fixtures/sglang-tp4";
    let cases: [(&[&str], &str); 5] = [
        (
            &["analyze", "--profile-dir", tp4, "--html", "/proc/r.html"],
            "name a file in a writable directory",
        ),
        (
            &[
                "analyze",
                "--profile-dir",
                tp4,
                "--save-summary",
                "/proc/s.json",
            ],
            "name a file in a writable directory",
        ),
        (
            &["analyze", "--profile-dir", tp4, "--csv-dir", "/proc/sys"],
            "name a writable directory",
        ),
        (
            &["merge", "--profile-dir", tp4, "-o", "/proc/"],
            "name a writable directory",
        ),
        (
            &["compare", tp4, tp4, "-o", "/proc/c.md"],
            "name a file in a writable directory",
        ),
    ];
    for (args, fix) in cases {
        let (code, out, err) = run(args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(out.is_empty(), "{args:?} did the work first: {out}");
        assert!(
            err.contains("cannot write in /proc") && err.contains(fix),
            "{args:?}: {err}"
        );
    }
}

/// `man DIR` makes DIR, not a chain of missing parents (a mistyped path is an error, and
/// nothing is created); `--top-n -1` is refused in words (clap suggested `-- -1`, which fails
/// too).
#[test]
fn mistyped_paths_and_negative_counts_are_refused_in_words() {
    let tmp = tempfile::tempdir().unwrap();
    let deep = tmp.path().join("missing/man1");
    let (code, _, err) = run(&["man", deep.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("does not exist"), "{err}");
    assert!(!tmp.path().join("missing").exists());
    let one = tmp.path().join("man1");
    let (code, _, err) = run(&["man", one.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(one.join("rankprof.1").is_file());
    for cmd in [
        &[
            "analyze",
            "--profile-dir",
            "fixtures/sglang-tp4",
            "--top-n",
            "-1",
        ][..],
        &[
            "compare",
            "fixtures/sglang-tp4",
            "fixtures/sglang-tp4",
            "--top-n",
            "-1",
        ][..],
    ] {
        let (code, out, err) = run(cmd);
        assert_eq!(code, 2, "{cmd:?}");
        assert!(out.is_empty());
        assert!(
            err.contains("-1 is negative") && !err.contains("-- -1"),
            "{err}"
        );
    }
}

/// One folder given alone is the profile folder, as for `ls DIR`: `analyze DIR` and `merge DIR`
/// do what `--profile-dir DIR` does (they refused a positional folder).
#[test]
fn a_folder_alone_is_the_profile_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = "fixtures/sglang-tp4";
    let (code, by_flag, err) = run(&["analyze", "--profile-dir", dir, "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    let (code, positional, err) = run(&["analyze", dir, "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    let verdict = |s: &str| -> serde_json::Value {
        serde_json::from_str::<serde_json::Value>(s).unwrap()["verdict"].clone()
    };
    assert_eq!(verdict(&positional), verdict(&by_flag));
    let out = tmp.path().join("m.trace.json.gz");
    let (code, _, err) = run(&["merge", dir, "-o", out.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(out.is_file());
}
