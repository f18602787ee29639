//! `merge` on real SGLang and HTA traces and on hand-made ones. Figures come from
//! tests/check_merge.py (plain Python over the whole JSON) or are worked out by hand here.

mod common;

use std::path::{Path, PathBuf};

use common::{kineto, python, shared, write_gz};
use rankprof::merge::Align;
use rankprof::merge::{gather, merge_group, MergeOptions};
use rankprof::trace::{read_trace, Ns};

fn merge_dir(dir: &Path, out: &Path, opts: &MergeOptions) -> rankprof::merge::MergeResult {
    let d = gather(Some(dir), &[], false, None, None).unwrap();
    assert_eq!(d.groups.len(), 1, "{:?}", d.groups);
    merge_group(&d.groups[0], out, opts).unwrap()
}

fn inputs(dir: &Path) -> Vec<PathBuf> {
    let d = gather(Some(dir), &[], false, None, None).unwrap();
    d.groups[0].files.iter().map(|f| f.path.clone()).collect()
}

fn check(out: &Path, ins: &[PathBuf], extra: &[&str]) -> serde_json::Value {
    let mut args: Vec<&Path> = vec![out];
    args.extend(ins.iter().map(PathBuf::as_path));
    python("check_merge.py", &args, extra)
}

/// The rank labels the checker found in a merged trace, sorted.
fn labels(c: &serde_json::Value) -> Vec<String> {
    c["per_label"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect()
}

fn sum(v: &serde_json::Value) -> u64 {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap())
        .sum()
}

#[test]
fn real_sglang_tp2dp2_counts_labels_and_ids() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = shared("sglang-cpu/tp2dp2");
    let out = tmp.path().join("m.trace.json.gz");
    let res = merge_dir(&dir, &out, &MergeOptions::default());
    let c = check(&out, &inputs(&dir), &[]);
    assert_eq!(
        c["output_events"].as_u64().unwrap(),
        sum(&c["inputs_kept"]) + sum(&c["sort_index_to_add"])
    );
    assert_eq!(res.events, c["output_events"].as_u64().unwrap());
    assert_eq!(c["unlabelled"], 0);
    assert_eq!(c["shared_ids"], 0);
    assert_eq!(
        labels(&c),
        ["[TP00-DP00]", "[TP00-DP01]", "[TP01-DP00]", "[TP01-DP01]"]
    );
    assert_eq!(c["ranks"].as_array().unwrap().len(), 4);
}

#[test]
fn same_events_as_sglangs_own_merger() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("in");
    std::fs::create_dir(&dir).unwrap();
    for r in 0..2 {
        let name = format!("manual-1-TP-{r}.trace.json.gz");
        std::fs::copy(
            shared("sglang-cpu/merge_by_sglang").join(&name),
            dir.join(&name),
        )
        .unwrap();
    }
    let out = tmp.path().join("ours.trace.json.gz");
    merge_dir(&dir, &out, &MergeOptions::default());
    let theirs = shared("sglang-cpu/merge_by_sglang/merged-manual-1.trace.json.gz");
    let c = check(
        &out,
        &inputs(&dir),
        &["--same-as", theirs.to_str().unwrap()],
    );
    // Every event SGLang wrote is in ours with the same pid, tid, ph, name, cat, ts and dur.
    assert_eq!(c["diff_vs_other"], 0);
    // ...and ours keeps both ranks' distributedInfo, where SGLang kept rank 0's only.
    assert_eq!(c["ranks"], serde_json::json!(["[TP00]", "[TP01]"]));
}

#[test]
fn real_hta_pair_flows_do_not_cross_ranks() {
    let tmp = tempfile::tempdir().unwrap();
    let a = shared("hta/sampled-rank-0.json.gz");
    let b = shared("hta/sampled-rank-1.json.gz");
    let d = gather(None, &[a.clone(), b.clone()], false, None, None).unwrap();
    let out = tmp.path().join("m.json.gz");
    let res = merge_group(&d.groups[0], &out, &MergeOptions::default()).unwrap();
    let c = check(&out, &[a, b], &[]);
    assert_eq!(c["shared_ids"], 0);
    assert_eq!(
        c["output_events"].as_u64().unwrap(),
        sum(&c["inputs_kept"]) + sum(&c["sort_index_to_add"])
    );
    // No baseTimeNanoseconds: absolute times, nothing shifted.
    assert!(res.ranks.iter().all(|r| r.shift == Ns::ZERO));
    assert_eq!(res.base_ns, None);
}

#[test]
fn identical_ids_in_two_ranks_become_disjoint() {
    // The same real A100 trace (flows ac2g/fwdbwd, correlations) as two ranks: every id
    // collides before the merge.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("in");
    std::fs::create_dir(&dir).unwrap();
    for r in 0..2 {
        std::fs::copy(
            shared("hta/nccl-a100-rank-0.json.gz"),
            dir.join(format!("a100-rank-{r}.json.gz")),
        )
        .unwrap();
    }
    let out = tmp.path().join("m.json.gz");
    merge_dir(&dir, &out, &MergeOptions::default());
    let c = check(&out, &inputs(&dir), &[]);
    assert!(c["flow_ids"].as_u64().unwrap() > 1000, "{c}");
    assert_eq!(c["shared_ids"], 0);
    assert_eq!(
        c["output_events"].as_u64().unwrap(),
        sum(&c["inputs_kept"]) + sum(&c["sort_index_to_add"])
    );
}

#[test]
fn filters_drop_exactly_what_the_checker_drops() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = shared("sglang-cpu/tp2");
    let out = tmp.path().join("m.json.gz");
    let opts = MergeOptions {
        drop_cat: vec!["python_function".into()],
        ..Default::default()
    };
    let res = merge_dir(&dir, &out, &opts);
    let c = check(&out, &inputs(&dir), &["--drop-cat", "python_function"]);
    assert_eq!(
        c["output_events"].as_u64().unwrap(),
        sum(&c["inputs_kept"]) + sum(&c["sort_index_to_add"])
    );
    assert!(res.ranks.iter().all(|r| r.dropped > 0));

    let nccl = shared("hta/nccl-a100-rank-0.json.gz");
    let d = gather(None, std::slice::from_ref(&nccl), false, None, None).unwrap();
    let out = tmp.path().join("g.json.gz");
    merge_group(
        &d.groups[0],
        &out,
        &MergeOptions {
            gpu_only: true,
            ..Default::default()
        },
    )
    .unwrap();
    let c = check(&out, &[nccl], &["--gpu-only"]);
    assert_eq!(
        c["output_events"].as_u64().unwrap(),
        sum(&c["inputs_kept"]) + sum(&c["sort_index_to_add"])
    );

    let out = tmp.path().join("r.json.gz");
    merge_dir(
        &shared("sglang-cpu/tp2dp2"),
        &out,
        &MergeOptions {
            ranks: Some(vec![1]),
            ..Default::default()
        },
    );
    let c = python("check_merge.py", &[&out], &[]);
    assert_eq!(labels(&c), ["[TP01-DP00]"]);
}

/// Two ranks whose clocks started 2.5 ms apart; Kineto writes baseTimeNanoseconds last.
fn skewed_pair(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    write_gz(
        &dir.join("p-TP-0.trace.json.gz"),
        kineto(Some(1_700_000_000_000_000_000), 3, 10.0).as_bytes(),
    );
    write_gz(
        &dir.join("p-TP-1.trace.json.gz"),
        kineto(Some(1_700_000_000_002_500_000), 3, 10.0).as_bytes(),
    );
}

/// `ts` of the first event named `name` per rank label.
fn first_ts(out: &Path, name: &str) -> Vec<(String, Ns)> {
    let mut v: Vec<(String, Ns)> = Vec::new();
    read_trace(out, |ev| {
        let label = ev.pid.to_string();
        let label = label.split(']').next().unwrap_or("").to_string() + "]";
        if ev.name.eq_str(name) && !v.iter().any(|(l, _)| *l == label) {
            v.push((label, ev.ts.unwrap()));
        }
    })
    .unwrap();
    v.sort();
    v
}

#[test]
fn base_alignment_moves_later_clocks_later() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("in");
    skewed_pair(&dir);
    let out = tmp.path().join("m.json.gz");
    let res = merge_dir(&dir, &out, &MergeOptions::default());
    // Hand-worked: common base = rank 0's; rank 1 moves by 2_500_000 ns = 2500 µs.
    assert_eq!(res.base_ns, Some(1_700_000_000_000_000_000));
    assert_eq!(res.ranks[1].shift, Ns::new(2_500_000));
    assert_eq!(
        res.redone, 1,
        "rank 1's shift is only known after reading it"
    );
    assert_eq!(
        first_ts(&out, "ProfilerStep#0"),
        [
            ("[TP00]".to_string(), Ns::new(10_000)),
            ("[TP01]".to_string(), Ns::new(2_510_000))
        ]
    );
    let top = read_trace(&out, |_| {}).unwrap().header;
    assert_eq!(top.base_time_ns, Some(1_700_000_000_000_000_000));

    let out = tmp.path().join("n.json.gz");
    merge_dir(
        &dir,
        &out,
        &MergeOptions {
            align: Align::None,
            ..Default::default()
        },
    );
    assert_eq!(first_ts(&out, "ProfilerStep#0")[1].1, Ns::new(10_000));

    let out = tmp.path().join("f.json.gz");
    let res = merge_dir(
        &dir,
        &out,
        &MergeOptions {
            align: Align::FirstStep,
            ..Default::default()
        },
    );
    let t = first_ts(&out, "ProfilerStep#0");
    assert_eq!(t[0].1, t[1].1, "first steps start together");
    assert_eq!(res.redone, 0, "the scan pass knew the shifts");
}

/// The merged trace as JSON.
fn load(out: &Path) -> serde_json::Value {
    let f = std::fs::File::open(out).unwrap();
    serde_json::from_reader(flate2::read::GzDecoder::new(f)).unwrap()
}

/// A rank with no events (an empty file) leaves the others on their common base, and each
/// rank's processes sort within its own hundred: the CPU process (pid 100, as in a container)
/// after the GPU (pid 0), before the next rank's. Figures worked out by hand.
#[test]
fn an_empty_rank_and_small_cpu_pids() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("in");
    skewed_pair(&dir);
    std::fs::write(dir.join("p-TP-2.trace.json.gz"), b"").unwrap();
    let out = tmp.path().join("m.json.gz");
    let res = merge_dir(&dir, &out, &MergeOptions::default());
    assert_eq!(res.base_ns, Some(1_700_000_000_000_000_000));
    assert_eq!(res.ranks[1].shift, Ns::new(2_500_000));
    assert_eq!(
        first_ts(&out, "ProfilerStep#0"),
        [
            ("[TP00]".to_string(), Ns::new(10_000)),
            ("[TP01]".to_string(), Ns::new(2_510_000))
        ]
    );
    let doc = load(&out);
    assert_eq!(
        doc["baseTimeNanoseconds"].as_i64(),
        Some(1_700_000_000_000_000_000)
    );
    let mut sort: Vec<(String, i64)> = doc["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "M" && e["name"] == "process_sort_index")
        .map(|e| {
            let pid = e["pid"].as_str().unwrap().to_string();
            (pid, e["args"]["sort_index"].as_i64().unwrap())
        })
        .collect();
    sort.sort_by_key(|p| p.1);
    let want = [
        ("[TP00] 0", 0),
        ("[TP00] 100", 99),
        ("[TP01] 0", 100),
        ("[TP01] 100", 199),
    ];
    assert_eq!(sort, want.map(|(p, i)| (p.to_string(), i)));
}

#[test]
fn steps_and_window_keep_only_their_span() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("in");
    skewed_pair(&dir);
    let out = tmp.path().join("s.json.gz");
    merge_dir(
        &dir,
        &out,
        &MergeOptions {
            steps: Some((1, 2)),
            ..Default::default()
        },
    );
    // Step 1 spans ts 110..200 (own units); kept: its annotation, launch, flow start, kernel
    // (120..160.5), flow end, python event = 6 per rank, plus the 3 metadata events.
    let mut names = std::collections::BTreeMap::new();
    read_trace(&out, |ev| {
        *names.entry(ev.name.to_string()).or_insert(0) += 1
    })
    .unwrap();
    assert_eq!(names.get("ProfilerStep#1"), Some(&2));
    assert_eq!(names.get("ProfilerStep#0"), None);
    assert_eq!(names.get("gemm_kernel"), Some(&2));
    assert_eq!(
        names.values().sum::<i32>(),
        2 * (6 + 3) + 2 /* sort index for pid 100 */
    );

    let out = tmp.path().join("w.json.gz");
    // Output units: rank 1 sits 2500 µs later, so this window holds only rank 0's step 2.
    merge_dir(
        &dir,
        &out,
        &MergeOptions {
            window: Some((Ns::new(205_000), Ns::new(300_000))),
            ..Default::default()
        },
    );
    let mut steps = Vec::new();
    read_trace(&out, |ev| {
        if ev.name.raw().starts_with("ProfilerStep") {
            steps.push((ev.pid.to_string(), ev.name.to_string()));
        }
    })
    .unwrap();
    assert_eq!(
        steps,
        [("[TP00] 100".to_string(), "ProfilerStep#2".to_string())]
    );
}

#[test]
fn damaged_rank_is_merged_as_far_as_it_reads() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("in");
    std::fs::create_dir(&dir).unwrap();
    let good = kineto(Some(1_700_000_000_000_000_000), 4, 10.0);
    write_gz(&dir.join("d-TP-0.trace.json.gz"), good.as_bytes());
    // Rank 1: cut inside the 10th event (3 metadata + 6 per step: events 1-9 complete).
    let cut = good.match_indices("},\n{").nth(8).unwrap().0 + 20;
    write_gz(&dir.join("d-TP-1.trace.json.gz"), &good.as_bytes()[..cut]);
    let out = tmp.path().join("m.json.gz");
    let res = merge_dir(&dir, &out, &MergeOptions::default());
    assert!(res.damaged());
    assert_eq!(res.ranks[1].read, 9);
    assert!(
        res.ranks[1].notes[0].starts_with("salvaged 9 events;"),
        "{:?}",
        res.ranks[1].notes
    );
    assert!(res.ranks[1].notes[0].contains(&format!("truncated at byte {cut}")));
    assert!(out.exists());
    // The cut removed rank 1's baseTimeNanoseconds (written after the events); its times are
    // plainly relative, so it keeps the common base instead of being taken as absolute.
    assert_eq!(res.base_ns, Some(1_700_000_000_000_000_000));
    assert_eq!(res.ranks[1].shift, Ns::ZERO);
    assert!(
        res.notes
            .iter()
            .any(|n| n.starts_with("[TP01] has no baseTimeNanoseconds")),
        "{:?}",
        res.notes
    );

    // Through the command: exit code 3 (partial); with --strict, 1 and nothing written.
    let run = |strict: bool, o: &Path| {
        let mut argv = vec!["rankprof".into(), "merge".into(), "--profile-dir".into()];
        argv.push(dir.clone().into_os_string());
        argv.extend([
            "-o".into(),
            o.as_os_str().to_owned(),
            "-j".into(),
            "1".into(),
        ]);
        if strict {
            argv.push("--strict".into());
        }
        let cli = <rankprof::cli::Cli as clap::Parser>::try_parse_from(argv).unwrap();
        rankprof::commands::run(cli.command).unwrap()
    };
    let o2 = tmp.path().join("cmd.json.gz");
    assert_eq!(run(false, &o2), 3);
    assert!(o2.exists());
    let o3 = tmp.path().join("strict.json.gz");
    assert_eq!(run(true, &o3), 1);
    assert!(!o3.exists());
}

#[test]
fn refuses_to_overwrite_an_input() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("in");
    skewed_pair(&dir);
    let target = dir.join("p-TP-1.trace.json.gz");
    let before = std::fs::read(&target).unwrap();
    let d = gather(Some(&dir), &[], false, None, None).unwrap();
    let err = merge_group(&d.groups[0], &target, &MergeOptions::default()).unwrap_err();
    assert!(
        err.to_string().contains("refusing to overwrite the input"),
        "{err}"
    );
    assert_eq!(std::fs::read(&target).unwrap(), before);
}

/// SGLang's own merger (`merge_profiles`) writes `merged-<id>.trace.json.gz`, rankprof's
/// default name, beside the ranks: `merge` keeps that file byte for byte and writes its own
/// merged trace beside it under another name, saying so; a merged trace rankprof wrote there
/// itself is replaced in place.
#[test]
fn keeps_sglangs_own_merged_trace() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let src = shared("sglang-cpu/merge_by_sglang");
    let theirs = dir.join("merged-manual-1.trace.json.gz");
    for name in [
        "manual-1-TP-0.trace.json.gz",
        "manual-1-TP-1.trace.json.gz",
        "merged-manual-1.trace.json.gz",
    ] {
        std::fs::copy(src.join(name), dir.join(name)).unwrap();
    }
    let before = std::fs::read(&theirs).unwrap();
    let merge = || {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_rankprof"))
            .args(["merge", "--profile-dir"])
            .arg(dir)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let ours = dir.join("merged-manual-1.rankprof.trace.json.gz");
    for _ in 0..2 {
        let err = merge();
        assert!(err.contains("was not written by rankprof"), "{err}");
        assert_eq!(std::fs::read(&theirs).unwrap(), before);
        let c = check(&ours, &inputs(dir), &[]);
        assert_eq!(c["ranks"], serde_json::json!(["[TP00]", "[TP01]"]));
    }
    // Without SGLang's file, rankprof's default name; merged again, the same file replaced.
    std::fs::remove_file(&theirs).unwrap();
    std::fs::remove_file(&ours).unwrap();
    for _ in 0..2 {
        let err = merge();
        assert!(!err.contains("was not written by rankprof"), "{err}");
        assert!(theirs.exists() && !ours.exists());
        let c = check(&theirs, &inputs(dir), &[]);
        assert_eq!(c["ranks"], serde_json::json!(["[TP00]", "[TP01]"]));
    }
}
