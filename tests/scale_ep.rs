//! Synthetic scale with SGLang's DP attention × EP (#11 item 4): `synth --dp-attention` writes
//! the files a `--tp 256 --dp 64 --ep 64 --enable-dp-attention` run writes (256 ranks, EP 64,
//! attention TP 4), with one hot-expert rank and one rank whose dispatch/combine is slow;
//! `analyze` (terminal grouped view, `--group-by ep`, `--format json`) names both, and the JSON's
//! EP figures for the planted ranks equal tests/check_attribution.py's.
//!
//! 256 ranks keep the test under a minute on CI's 2 cores; 1,024 ranks (`--dp 64 --tp 16 --ep 64
//! --dp-attention`) are measured by hand in docs/benchmarks.md, "Many ranks".

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

const HOT: u32 = 37; // DP 9, TP 37, EP 9
const SLOW: u32 = 200; // DP 50, TP 200, EP 50

fn rankprof(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_rankprof"))
        .args(args)
        .output()
        .expect("rankprof runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// 256 ranks of SGLang DP attention × EP 64 with the two plants; 3 steps of 2 layers.
fn write_set(dir: &Path) {
    let (hot, slow) = (HOT.to_string(), SLOW.to_string());
    let (rc, _, err) = rankprof(&[
        "synth",
        "-o",
        dir.to_str().unwrap(),
        "--dp",
        "64",
        "--tp",
        "4",
        "--ep",
        "64",
        "--dp-attention",
        "--steps",
        "3",
        "--layers",
        "2",
        "--record-shapes",
        // Every DP rank gets the same batches: the EP peers' work outside the MoE layers is
        // then alike, and only the plants stand out.
        "--same-batches",
        "--hot-expert-rank",
        &hot,
        "--work-factor",
        "2",
        "--slow-rank",
        &slow,
        "--slow-class",
        "comm",
        "--factor",
        "3",
    ]);
    assert_eq!(rc, 0, "{err}");
}

fn label(rank: u32) -> String {
    // Attention TP 4, EP 64 over 256 ranks: DP index = EP index = rank / 4.
    let d = rank / 4;
    format!("TP{rank:02}-DP{d:02}-EP{d:02}")
}

#[test]
fn dp_attention_ep64_names_both_plants() {
    let t = tempfile::tempdir().unwrap();
    write_set(t.path());

    // The files and distributedInfo a real DP-attention run writes.
    let mut names: Vec<String> = std::fs::read_dir(t.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names.len(), 256);
    for r in [0u32, 3, 4, HOT, SLOW, 255] {
        let name = format!("synth-TP-{r}-DP-{}-EP-{}.trace.json.gz", r / 4, r / 4);
        assert!(names.contains(&name), "{name} missing");
    }
    let head = head_of(
        &t.path()
            .join(format!("synth-TP-{HOT}-DP-9-EP-9.trace.json.gz")),
    );
    assert!(
        head.contains(&format!(r#""rank": {HOT}, "world_size": 256"#)),
        "{head}"
    );
    // Its attention TP group and its MoE EP group (one rank of each EP slice: stride 4).
    assert!(head.contains(r#""ranks": [36, 37, 38, 39]"#), "{head}");
    let ep: Vec<String> = (0..64).map(|e| (1 + 4 * e).to_string()).collect();
    assert!(
        head.contains(&format!(r#""ranks": [{}]"#, ep.join(", "))),
        "{head}"
    );

    let dir = t.path().to_str().unwrap();
    let (hot, slow) = (label(HOT), label(SLOW));

    // Terminal: the grouped view (256 ranks), the verdict names both plants and causes.
    let (rc, out, err) = rankprof(&["analyze", "--profile-dir", dir, "-j", "2"]);
    assert!(rc == 0 || rc == 1, "{rc} {err}");
    // The verdict: the indented lines under the profile's heading, up to the first blank line.
    let verdict = out
        .lines()
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .collect::<Vec<_>>()
        .join("\n");
    assert!(
        verdict
            .trim_start()
            .starts_with("Imbalanced, hot experts: rank"),
        "{verdict}"
    );
    assert!(verdict.contains(&hot) && verdict.contains(&slow), "{out}");
    assert!(verdict.contains("hot experts"), "{verdict}");
    assert!(verdict.contains("slow dispatch/combine"), "{verdict}");
    assert!(out.contains("256 ranks"), "{out}");
    // The hot-expert rank's replica is not called a slower device (#9): the EP split told it.
    assert!(!verdict.contains("slower device or host"), "{verdict}");
    assert!(
        !out.contains("missing from the grid"),
        "DP attention's grid is TP"
    );

    // --group-by ep: 64 EP groups; the hot-expert rank's group is the furthest from the median.
    let (rc, out, err) = rankprof(&[
        "analyze",
        "--profile-dir",
        dir,
        "-j",
        "2",
        "--group-by",
        "ep",
    ]);
    assert!(rc == 0 || rc == 1, "{rc} {err}");
    let lines: Vec<&str> = out.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.starts_with("By EP group (the 10 of 64 furthest"))
        .unwrap_or_else(|| panic!("no EP groups: {out}"));
    let first_row = lines[at + 4];
    assert!(
        first_row.starts_with("│ EP9 ") && first_row.contains(&hot),
        "{first_row}"
    );

    // JSON: the EP records of the planted ranks against the independent checker.
    let (rc, out, err) = rankprof(&[
        "analyze",
        "--profile-dir",
        dir,
        "-j",
        "2",
        "--format",
        "json",
    ]);
    assert!(rc == 0 || rc == 1, "{rc} {err}");
    let a: Value = serde_json::from_str(&out).expect("JSON");
    let ep = a["ep"].as_array().expect("ep records");
    assert_eq!(ep.len(), 256);
    let rec = |l: &str| -> &Value {
        ep.iter()
            .find(|e| e["rank"] == l)
            .unwrap_or_else(|| panic!("{l} not in ep"))
    };
    assert_eq!(rec(&hot)["cause"], "hot experts");
    assert_eq!(rec(&slow)["cause"], "slow dispatch/combine");
    let gaps: Vec<&str> = ep
        .iter()
        .filter(|e| e["cause"] != "balanced")
        .map(|e| e["rank"].as_str().unwrap())
        .collect();
    assert_eq!(gaps, vec![hot.as_str(), slow.as_str()], "only the plants");

    // The attribution table agrees with the EP split: the hot-expert rank's records (and its
    // replica's) say hot experts, none says slower device.
    let recs = a["attribution"]["records"].as_array().expect("records");
    let about_hot: Vec<&Value> = recs
        .iter()
        .filter(|r| r["cause"] != "balanced" && (r["who"] == hot.as_str() || r["who"] == "DP09"))
        .collect();
    assert!(!about_hot.is_empty(), "{recs:#?}");
    assert!(
        about_hot.iter().all(|r| r["cause"] == "hot-experts"),
        "{about_hot:#?}"
    );

    let files: Vec<PathBuf> = common::attrib::files_in(t.path());
    let c = common::attrib::checker(&files);
    let checked = |r: u32| -> &Value {
        let path = files
            .iter()
            .find(|f| {
                let name = f.file_name().unwrap().to_str().unwrap();
                name.contains(&format!("-TP-{r}-"))
            })
            .unwrap();
        &c["ranks"][path.to_str().unwrap()]
    };
    for (r, l) in [(HOT, &hot), (SLOW, &slow)] {
        let want = checked(r);
        let got = rec(l);
        assert_eq!(want["ep_peers"], 252, "{l}: peers of another EP index");
        assert_eq!(got["peers"].as_array().unwrap().len(), 252, "{l}");
        for k in ["dispatch_ns", "expert_ns", "routed_tokens"] {
            assert_eq!(got["parts"][k].as_f64(), want["ep"][k].as_f64(), "{l} {k}");
            assert_eq!(
                got["peers_parts"][k].as_f64(),
                want["ep_peer_median"][k].as_f64(),
                "{l} peers' {k}"
            );
        }
        let close = |a: &Value, b: &Value| (a.as_f64().unwrap() - b.as_f64().unwrap()).abs() < 1e-9;
        assert!(close(
            &got["dispatch_ratio"],
            &want["ep_ratio"]["dispatch_ns"]
        ));
        assert!(close(&got["expert_ratio"], &want["ep_ratio"]["expert_ns"]));
        assert!(close(
            &got["routed_ratio"],
            &want["ep_ratio"]["routed_tokens"]
        ));
    }
    let hot_c = &checked(HOT)["ep_ratio"];
    assert!(
        (hot_c["routed_tokens"].as_f64().unwrap() - 2.0).abs() < 0.1,
        "{hot_c}"
    );
    let slow_c = &checked(SLOW)["ep_ratio"];
    assert!(slow_c["dispatch_ns"].as_f64().unwrap() > 2.5, "{slow_c}");
    assert!(
        (slow_c["expert_ns"].as_f64().unwrap() - 1.0).abs() < 0.05,
        "{slow_c}"
    );
}

/// The first 64 KiB of a gzip trace, as text (its `distributedInfo` is near the start).
fn head_of(path: &Path) -> String {
    use std::io::Read;
    let f = std::fs::File::open(path).unwrap();
    let mut s = String::new();
    flate2::read::GzDecoder::new(f)
        .take(1 << 16)
        .read_to_string(&mut s)
        .unwrap();
    s
}
