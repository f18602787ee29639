//! Rank discovery: file names as SGLang, vLLM and others write them, grouping, and the
//! fallbacks. Expected identities are read off the names by hand.

mod common;

use std::path::{Path, PathBuf};

use common::{kineto, shared, write_gz};
use rankprof::trace::discover::names::parse_name;
use rankprof::trace::discover::rankfile::Naming;
use rankprof::trace::{discover, discover_files};

/// (name, naming, key, stage, tp, dp, pp, ep, rank)
type Case = (
    &'static str,
    Naming,
    &'static str,
    Option<&'static str>,
    [Option<u32>; 5],
);

#[test]
fn file_names() {
    use Naming::*;
    const N: Option<u32> = None;
    let cases: &[Case] = &[
        (
            "1795212416.246168-TP-0.trace.json.gz",
            Sglang,
            "1795212416.246168",
            None,
            [Some(0), N, N, N, N],
        ),
        (
            "1795213098.719915-TP-1-DP-1.trace.json.gz",
            Sglang,
            "1795213098.719915",
            None,
            [Some(1), Some(1), N, N, N],
        ),
        (
            "bystage-1-TP-0-EXTEND.trace.json.gz",
            Sglang,
            "bystage-1",
            Some("EXTEND"),
            [Some(0), N, N, N, N],
        ),
        (
            "bystage-1-TP-1-DECODE.trace.json.gz",
            Sglang,
            "bystage-1",
            Some("DECODE"),
            [Some(1), N, N, N, N],
        ),
        (
            "myprefix-1712.5-TP-3-DP-2-PP-1-EP-7.trace.json.gz",
            Sglang,
            "myprefix-1712.5",
            None,
            [Some(3), Some(2), Some(1), Some(7), N],
        ),
        (
            "abc-TP-2-PP-1.trace.json.gz",
            Sglang,
            "abc",
            None,
            [Some(2), N, Some(1), N, N],
        ),
        (
            "abc-TP-2-EP-3-prefill.trace.json.gz",
            Sglang,
            "abc",
            Some("prefill"),
            [Some(2), N, N, Some(3), N],
        ),
        (
            "abc-TP-0-decode.trace.json",
            Sglang,
            "abc",
            Some("decode"),
            [Some(0), N, N, N, N],
        ),
        (
            "dp0_pp0_tp1_dcp0_ep0_rank1.1763000000000000000.pt.trace.json.gz",
            Vllm,
            "vllm",
            None,
            [Some(1), Some(0), Some(0), Some(0), Some(1)],
        ),
        (
            "run7_dp1_pp0_tp0_dcp0_ep2_rank2.1763000000000000001.pt.trace.json.gz",
            Vllm,
            "run7",
            None,
            [Some(0), Some(1), Some(0), Some(2), Some(2)],
        ),
        (
            "dp0_pp1_tp3_rank7.1763.pt.trace.json",
            Vllm,
            "vllm",
            None,
            [Some(3), Some(0), Some(1), N, Some(7)],
        ),
        (
            "llama-rank-3.1763000000000000000.pt.trace.json.gz",
            Vllm,
            "llama",
            None,
            [N, N, N, N, Some(3)],
        ),
        // vLLM, dense model (no EP group: the name falls back to the global rank).
        (
            "rank1.1763000000000000000.pt.trace.json.gz",
            Vllm,
            "rank",
            None,
            [N, N, N, N, Some(1)],
        ),
        (
            "run.v2_rank3.1763000000000000007.pt.trace.json",
            Vllm,
            "run.v2",
            None,
            [N, N, N, N, Some(3)],
        ),
        // SGLang up to 0.5.1 by stage: `-{ForwardMode.__str__()}`, 1 = EXTEND, 2 = DECODE.
        (
            "1755000000.5-TP-1-1.trace.json.gz",
            Sglang,
            "1755000000.5",
            Some("EXTEND"),
            [Some(1), N, N, N, N],
        ),
        (
            "p-1755000000.5-TP-0-2.trace.json.gz",
            Sglang,
            "p-1755000000.5",
            Some("DECODE"),
            [Some(0), N, N, N, N],
        ),
        (
            "1755000000.5-TP-0-ForwardMode.EXTEND.trace.json.gz",
            Sglang,
            "1755000000.5",
            Some("EXTEND"),
            [Some(0), N, N, N, N],
        ),
        (
            "sampled-rank-1.json.gz",
            Generic,
            "sampled",
            None,
            [N, N, N, N, Some(1)],
        ),
        (
            "cpu-only-rank-34.pt.trace.json.gz",
            Generic,
            "cpu-only",
            None,
            [N, N, N, N, Some(34)],
        ),
        (
            "trace_rank_5_step10.json",
            Generic,
            "trace-step10",
            None,
            [N, N, N, N, Some(5)],
        ),
        (
            "rank3.json.gz",
            Generic,
            "trace",
            None,
            [N, N, N, N, Some(3)],
        ),
        (
            "host-a_worker12.pt.trace.json.gz",
            Generic,
            "host-a",
            None,
            [N, N, N, N, Some(12)],
        ),
    ];
    for &(name, naming, key, stage, [tp, dp, pp, ep, rank]) in cases {
        let p = parse_name(name).unwrap_or_else(|| panic!("{name} not recognised"));
        assert_eq!(p.naming, naming, "{name}");
        assert_eq!(p.key, key, "{name}");
        assert_eq!(p.stage.as_deref(), stage, "{name}");
        assert_eq!(
            [p.id.tp, p.id.dp, p.id.pp, p.id.ep, p.id.rank],
            [tp, dp, pp, ep, rank],
            "{name}"
        );
    }
    for name in [
        "config.json",
        "merged-x.json.gz.txt",
        "notes.txt",
        "TP-0.trace.json.gz",
    ] {
        assert!(
            parse_name(name).is_none(),
            "{name} should not be a rank file"
        );
    }
}

#[test]
fn real_sglang_dirs_group_by_profile_and_stage() {
    let d = discover(&shared("sglang-cpu"), true).unwrap();
    let mut got: Vec<(String, Option<String>, Vec<String>)> = d
        .groups
        .iter()
        .map(|g| {
            (
                g.profile_id.clone(),
                g.stage.clone(),
                g.files.iter().map(|f| f.label.clone()).collect(),
            )
        })
        .collect();
    got.sort();
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    assert_eq!(
        got,
        vec![
            ("1795212416.246168".into(), None, s(&["[TP00]"])),
            ("1795212682.6326063".into(), None, s(&["[TP00]", "[TP01]"])),
            // DP-major order, as SGLang's sort index: names win over distributedInfo.rank,
            // which repeats across the two DP replicas.
            (
                "1795213098.719915".into(),
                None,
                s(&["[TP00-DP00]", "[TP01-DP00]", "[TP00-DP01]", "[TP01-DP01]"])
            ),
            (
                "bystage-1".into(),
                Some("DECODE".into()),
                s(&["[TP00]", "[TP01]"])
            ),
            (
                "bystage-1".into(),
                Some("EXTEND".into()),
                s(&["[TP00]", "[TP01]"])
            ),
            ("manual-1".into(), None, s(&["[TP00]", "[TP01]"])),
        ]
    );
    // SGLang's own merged output sits in merge_by_sglang/ and is never picked up.
    assert!(d
        .notes
        .iter()
        .any(|n| n.contains("merged-manual-1") && n.contains("skipped")));
    // Without --recursive the top folder holds no rank files.
    assert!(discover(&shared("sglang-cpu"), false)
        .unwrap()
        .groups
        .is_empty());
}

fn touch(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    write_gz(&p, text.as_bytes());
    p
}

#[test]
fn vllm_sessions_frontend_and_missing_ranks() {
    let t = tempfile::tempdir().unwrap();
    let k = kineto(Some(0), 1, 1.0);
    // Two profiling sessions of a TP=2 server, and the frontend's own trace.
    for (r, ns) in [(0, 100), (1, 101), (0, 900), (1, 902)] {
        touch(
            t.path(),
            &format!("dp0_pp0_tp{r}_dcp0_ep0_rank{r}.{ns}.pt.trace.json.gz"),
            &k,
        );
    }
    touch(t.path(), "host_123.async_llm.99.pt.trace.json.gz", &k);
    let d = discover(t.path(), false).unwrap();
    assert_eq!(d.groups.len(), 2);
    assert_eq!(d.groups[0].profile_id, "vllm.100");
    assert_eq!(d.groups[1].profile_id, "vllm.900");
    assert!(d.groups.iter().all(|g| g
        .files
        .iter()
        .map(|f| f.label.as_str())
        .eq(["[TP00]", "[TP01]"])));
    assert!(d.notes.iter().any(|n| n.contains("async_llm")));

    // vLLM's CUDA-graph capture trace (capture_torch_profiler), found by -r: its own profile,
    // named in a note, the serving profiles unchanged.
    let cap = t.path().join("capture_traces");
    std::fs::create_dir(&cap).unwrap();
    touch(&cap, "graph_capture_rank_0.50.pt.trace.json.gz", &k);
    let d = discover(t.path(), true).unwrap();
    assert_eq!(d.groups.len(), 3, "{:?}", d.groups);
    assert!(d.groups[..2].iter().all(|g| g.files.len() == 2));
    assert_eq!(d.groups[2].files.len(), 1);
    assert!(d.groups[2].files[0].path.starts_with(&cap));
    let n = d
        .notes
        .iter()
        .filter(|n| n.contains("CUDA-graph capture trace"));
    assert_eq!(n.count(), 1, "{:?}", d.notes);

    // A dense model's ranks (`rank{r}`, a time stamp each): one profile, not one per file.
    let t3 = tempfile::tempdir().unwrap();
    for (r, ns) in [
        (0, 1_763_000_000_000_000_100u64),
        (1, 1_763_000_000_000_000_250),
    ] {
        touch(t3.path(), &format!("rank{r}.{ns}.pt.trace.json.gz"), &k);
    }
    let d = discover(t3.path(), false).unwrap();
    assert_eq!(d.groups.len(), 1, "{:?}", d.groups);
    assert_eq!(d.groups[0].profile_id, "rank");
    assert!(d.groups[0].missing().is_empty());
    assert!(d.groups[0]
        .files
        .iter()
        .map(|f| f.label.as_str())
        .eq(["[RANK00]", "[RANK01]"]));

    // A dense model with DP = 2: each replica counts rank{r} from 0, distributedInfo.rank is
    // global across them. One profile of four ranks (not sessions mixing replicas by time
    // stamp), with a note.
    let with_rank = |r: u32| {
        k.replacen(
            "{\"schemaVersion\": 1,",
            &format!("{{\"schemaVersion\": 1, \"distributedInfo\": {{\"rank\": {r}, \"world_size\": 4}},"),
            1,
        )
    };
    let t5 = tempfile::tempdir().unwrap();
    for (r, ns, g) in [(0, 100, 0), (0, 105, 2), (1, 110, 1), (1, 120, 3)] {
        touch(
            t5.path(),
            &format!("rank{r}.{ns}.pt.trace.json.gz"),
            &with_rank(g),
        );
    }
    let d = discover(t5.path(), false).unwrap();
    assert_eq!(d.groups.len(), 1, "{:?}", d.groups);
    let got: Vec<_> = d.groups[0]
        .files
        .iter()
        .map(|f| (f.label.clone(), f.path.file_name().unwrap().to_owned()))
        .collect();
    let want: Vec<_> = [
        ("00", "rank0.100"),
        ("01", "rank1.110"),
        ("02", "rank0.105"),
        ("03", "rank1.120"),
    ]
    .iter()
    .map(|(l, n)| (format!("[RANK{l}]"), format!("{n}.pt.trace.json.gz").into()))
    .collect();
    assert_eq!(got, want);
    assert!(d.notes.iter().any(|n| n.contains("data-parallel replicas")));
    // Two sessions of one replica (heads agree with the names): split by time stamp as before.
    let t6 = tempfile::tempdir().unwrap();
    for (r, ns) in [(0, 100), (1, 110), (0, 500), (1, 510)] {
        touch(
            t6.path(),
            &format!("rank{r}.{ns}.pt.trace.json.gz"),
            &with_rank(r),
        );
    }
    let d = discover(t6.path(), false).unwrap();
    assert_eq!(d.groups.len(), 2, "{:?}", d.groups);
    assert!(d
        .groups
        .iter()
        .all(|g| g.files.len() == 2 && g.missing().is_empty()));
    assert!(!d.notes.iter().any(|n| n.contains("data-parallel replicas")));

    // SGLang 0.5.1's stage suffixes: two stages of two ranks, not four ranks of one profile.
    let t4 = tempfile::tempdir().unwrap();
    for (tp, st) in [(0, 1), (1, 1), (0, 2), (1, 2)] {
        touch(
            t4.path(),
            &format!("17550.5-TP-{tp}-{st}.trace.json.gz"),
            &k,
        );
    }
    let d = discover(t4.path(), false).unwrap();
    let mut seen: Vec<_> = d
        .groups
        .iter()
        .map(|g| (g.stage.clone(), g.files.len()))
        .collect();
    seen.sort();
    assert_eq!(
        seen,
        [
            (Some("DECODE".to_string()), 2),
            (Some("EXTEND".to_string()), 2)
        ]
    );
    assert!(!d.notes.iter().any(|n| n.contains("without a stage")));

    // A by-stage profile stopped by hand: the stage still open has no suffix. Listed on its
    // own, with a note naming it; another id's stage-less files get no note.
    for tp in [0, 1] {
        touch(t4.path(), &format!("17550.5-TP-{tp}.trace.json.gz"), &k);
        touch(t4.path(), &format!("17999.5-TP-{tp}.trace.json.gz"), &k);
    }
    let d = discover(t4.path(), false).unwrap();
    assert_eq!(d.groups.len(), 4);
    let notes: Vec<_> = d
        .notes
        .iter()
        .filter(|n| n.contains("without a stage"))
        .collect();
    assert_eq!(notes.len(), 1, "{:?}", d.notes);
    assert!(notes[0].contains("profile 17550.5 "), "{}", notes[0]);
    assert!(notes[0].contains("DECODE/EXTEND") || notes[0].contains("EXTEND/DECODE"));

    // A TP2 x DP2 grid with one rank missing.
    let t2 = tempfile::tempdir().unwrap();
    for (tp, dp) in [(0, 0), (1, 0), (0, 1)] {
        touch(t2.path(), &format!("p-TP-{tp}-DP-{dp}.trace.json.gz"), &k);
    }
    let d = discover(t2.path(), false).unwrap();
    assert_eq!(d.groups[0].missing(), ["[TP01-DP01]"]);
}

/// A small trace whose head says `distributedInfo.rank` = `r`.
fn with_rank(r: u32) -> String {
    kineto(Some(0), 1, 1.0).replacen(
        "{\"schemaVersion\": 1,",
        &format!("{{\"schemaVersion\": 1, \"distributedInfo\": {{\"rank\": {r}}},"),
        1,
    )
}

#[test]
fn unnamed_files_use_distributed_info_then_order() {
    let t = tempfile::tempdir().unwrap();
    let a = touch(t.path(), "b.json.gz", &with_rank(1));
    let b = touch(t.path(), "a.json.gz", &with_rank(0));
    std::fs::write(t.path().join("config.json"), "{\"not\": \"a trace\"}").unwrap();
    let d = discover_files(&[a, b, t.path().join("config.json")]);
    assert_eq!(d.groups.len(), 1);
    let g = &d.groups[0];
    assert_eq!(
        g.files.iter().map(|f| f.naming).collect::<Vec<_>>(),
        [Naming::DistributedInfo; 2]
    );
    assert!(g.files[0].path.ends_with("a.json.gz") && g.files[0].label == "[RANK00]");
    // Same rank twice: fall back to file order, with a warning.
    let t2 = tempfile::tempdir().unwrap();
    let a = touch(t2.path(), "x.json.gz", &with_rank(0));
    let b = touch(t2.path(), "y.json.gz", &with_rank(0));
    let d = discover_files(&[a.clone(), b]);
    assert!(d.notes[0].contains("file-name order"));
    assert_eq!(d.groups[0].files[1].naming, Naming::FileOrder);
    assert_eq!(
        d.groups[0].profile_id,
        t2.path().file_name().unwrap().to_str().unwrap()
    );
    // One such file: no order to warn about; the profile takes the file's name.
    let d = discover_files(&[a]);
    assert!(d.notes.is_empty(), "{:?}", d.notes);
    assert_eq!(d.groups[0].profile_id, "x");
}

/// One profile's ranks written on two nodes (one directory each) are one group; the same
/// ranks in two per-step folders are two.
#[test]
fn a_profile_split_over_directories_is_one_group() {
    let t = tempfile::tempdir().unwrap();
    let k = kineto(Some(0), 1, 1.0);
    let mut listed = Vec::new();
    for (node, tps) in [("node0", [0, 1]), ("node1", [2, 3])] {
        let d = t.path().join(node);
        std::fs::create_dir(&d).unwrap();
        for tp in tps {
            listed.push(touch(&d, &format!("p-TP-{tp}.trace.json.gz"), &k));
        }
    }
    for d in [discover(t.path(), true).unwrap(), discover_files(&listed)] {
        assert_eq!(d.groups.len(), 1, "{:?}", d.groups);
        let labels: Vec<&str> = d.groups[0].files.iter().map(|f| f.label.as_str()).collect();
        assert_eq!(labels, ["[TP00]", "[TP01]", "[TP02]", "[TP03]"]);
        assert_eq!(d.groups[0].dir, t.path().join("node0"));
    }

    let t2 = tempfile::tempdir().unwrap();
    for step in ["step_1", "step_2"] {
        let d = t2.path().join(step);
        std::fs::create_dir(&d).unwrap();
        for tp in [0, 1] {
            touch(&d, &format!("p-TP-{tp}.trace.json.gz"), &k);
        }
    }
    let d = discover(t2.path(), true).unwrap();
    assert_eq!(d.groups.len(), 2, "{:?}", d.groups);
    assert!(d.groups.iter().all(|g| g.files.len() == 2));
}

/// Files named with a time stamp each: SGLang before profile ids (every rank its own
/// `time.time()`), `torch.profiler.tensorboard_trace_handler`'s `{host}_{pid}.{ns}` (ranks from
/// the heads), and vLLM sessions with a rank missing. Expected sessions read off the stamps.
#[test]
fn stamped_files_make_one_profile_per_session() {
    let k = kineto(Some(0), 1, 1.0);
    let labels = |g: &rankprof::trace::Group| -> Vec<String> {
        g.files.iter().map(|f| f.label.clone()).collect()
    };

    // SGLang 0.4: four ranks stamped within 10 ms, then a second session 100 s later.
    let t = tempfile::tempdir().unwrap();
    for (stamp, tp) in [
        ("1745000000.1234567", 0),
        ("1745000000.1251234", 1),
        ("1745000000.1302", 2),
        ("1745000000.1299876", 3),
        ("1745000100.5", 1),
        ("1745000100.51", 0),
    ] {
        touch(t.path(), &format!("{stamp}-TP-{tp}.trace.json.gz"), &k);
    }
    let d = discover(t.path(), false).unwrap();
    assert_eq!(d.groups.len(), 2, "{:?}", d.groups);
    assert_eq!(d.groups[0].profile_id, "1745000000.1234567");
    assert_eq!(
        labels(&d.groups[0]),
        ["[TP00]", "[TP01]", "[TP02]", "[TP03]"]
    );
    assert_eq!(d.groups[1].profile_id, "1745000100.5");
    assert_eq!(labels(&d.groups[1]), ["[TP00]", "[TP01]"]);
    let notes: Vec<_> = d
        .notes
        .iter()
        .filter(|n| n.contains("time stamp each"))
        .collect();
    assert_eq!(notes.len(), 2, "{:?}", d.notes);
    // SGLang's profile ids (one stamp for every rank) stay as they are.
    let t2 = tempfile::tempdir().unwrap();
    for (stamp, tp) in [
        ("1795212682.6", 0),
        ("1795212682.6", 1),
        ("1795212690.2", 0),
    ] {
        touch(t2.path(), &format!("{stamp}-TP-{tp}.trace.json.gz"), &k);
    }
    let d = discover(t2.path(), false).unwrap();
    let ids: Vec<_> = d
        .groups
        .iter()
        .map(|g| (g.profile_id.as_str(), g.files.len()))
        .collect();
    assert_eq!(ids, [("1795212682.6", 2), ("1795212690.2", 1)]);

    // torch's own names, two sessions of two ranks; the host names hold "worker3" and
    // "rank0", which are not ranks.
    let t3 = tempfile::tempdir().unwrap();
    for (host, pid, ns, r) in [
        ("gpu-worker-3", 1111, 1_712_000_000_000_000_001u64, 0),
        ("gpu-worker-3", 2222, 1_712_000_000_400_000_000, 1),
        ("trainer-rank0", 1111, 1_712_000_099_000_000_000, 0),
        ("trainer-rank0", 2222, 1_712_000_099_000_000_002, 1),
    ] {
        touch(
            t3.path(),
            &format!("{host}_{pid}.{ns}.pt.trace.json.gz"),
            &with_rank(r),
        );
    }
    let d = discover(t3.path(), false).unwrap();
    assert_eq!(d.groups.len(), 2, "{:?}", d.groups);
    let base = t3.path().file_name().unwrap().to_str().unwrap();
    for (g, (ns, host)) in d.groups.iter().zip([
        ("1712000000000000001", "gpu-worker-3"),
        ("1712000099000000000", "trainer-rank0"),
    ]) {
        assert_eq!(g.profile_id, format!("{base}.{ns}"));
        assert_eq!(labels(g), ["[RANK00]", "[RANK01]"]);
        assert!(g.files.iter().all(|f| f.naming == Naming::DistributedInfo
            && f.path
                .file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .starts_with(host)));
        assert!(g.missing().is_empty());
    }
    assert!(parse_name("gpu-worker-3_1111.1712000000000000001.pt.trace.json.gz").is_none());

    // vLLM: rank 0's file of the first session is absent; rank 1's stands alone.
    let t4 = tempfile::tempdir().unwrap();
    for (r, ns) in [
        (1, 1_712_000_010_000_000_002u64),
        (0, 1_712_000_110_000_000_001),
        (1, 1_712_000_110_000_000_002),
    ] {
        touch(
            t4.path(),
            &format!("dp0_pp0_tp{r}_dcp0_ep{r}_rank{r}.{ns}.pt.trace.json.gz"),
            &k,
        );
    }
    let d = discover(t4.path(), false).unwrap();
    let got: Vec<_> = d
        .groups
        .iter()
        .map(|g| (g.profile_id.clone(), g.missing()))
        .collect();
    assert_eq!(
        got,
        [
            (
                "vllm.1712000010000000002".to_string(),
                vec!["[TP00]".to_string()]
            ),
            ("vllm.1712000110000000001".to_string(), vec![]),
        ]
    );
    // Missing ranks are labelled as the group's own ranks are: vLLM's DP and PP of size 1
    // are not shown.
    let t5 = tempfile::tempdir().unwrap();
    for r in [0, 1, 3] {
        touch(
            t5.path(),
            &format!("dp0_pp0_tp{r}_dcp0_ep{r}_rank{r}.100.pt.trace.json.gz"),
            &k,
        );
    }
    let d = discover(t5.path(), false).unwrap();
    assert_eq!(
        labels(&d.groups[0]),
        ["[TP00-EP00]", "[TP01-EP01]", "[TP03-EP03]"]
    );
    assert_eq!(d.groups[0].missing(), ["[TP02]"]);
}

/// SGLang's CUDA-graph capture traces (`graph_capture_profile/cuda_graph_capture-{runner}-TP-{tp}
/// .json.gz`): one profile per runner with its TP ranks, one note, the serving profile apart.
#[test]
fn sglang_cuda_graph_capture_traces_are_profiles_per_runner() {
    let t = tempfile::tempdir().unwrap();
    let k = kineto(Some(0), 1, 1.0);
    let cap = t.path().join("graph_capture_profile");
    std::fs::create_dir(&cap).unwrap();
    for runner in ["CudaGraphRunner", "EAGLEDraftCudaGraphRunner"] {
        for tp in [1, 0] {
            touch(
                &cap,
                &format!("cuda_graph_capture-{runner}-TP-{tp}.json.gz"),
                &k,
            );
        }
    }
    for tp in [0, 1] {
        touch(t.path(), &format!("1795212682.6-TP-{tp}.trace.json.gz"), &k);
    }
    let d = discover(t.path(), true).unwrap();
    let mut got: Vec<_> = d
        .groups
        .iter()
        .map(|g| {
            let l: Vec<String> = g.files.iter().map(|f| f.label.clone()).collect();
            (g.profile_id.clone(), l.join(" "))
        })
        .collect();
    got.sort();
    let want = [
        ("1795212682.6", "[TP00] [TP01]"),
        ("cuda_graph_capture-CudaGraphRunner", "[TP00] [TP01]"),
        (
            "cuda_graph_capture-EAGLEDraftCudaGraphRunner",
            "[TP00] [TP01]",
        ),
    ];
    assert_eq!(got, want.map(|(a, b)| (a.to_string(), b.to_string())));
    let notes: Vec<_> = d
        .notes
        .iter()
        .filter(|n| n.contains("CUDA-graph capture"))
        .collect();
    assert_eq!(notes.len(), 1, "{:?}", d.notes);
    assert!(notes[0].contains("4 SGLang"), "{}", notes[0]);
}

/// A small trace whose head says `distributedInfo.rank` = `r` and `world_size` = `n`.
fn with_rank_of(r: u32, n: u32) -> String {
    kineto(Some(0), 1, 1.0).replacen(
        "{\"schemaVersion\": 1,",
        &format!(
            "{{\"schemaVersion\": 1, \"distributedInfo\": {{\"backend\": \"nccl\", \"rank\": {r}, \
             \"world_size\": {n}}},"
        ),
        1,
    )
}

/// Writes `name` (gzip'd when it ends in `.gz`) holding a trace of rank `r` of `n`.
fn write_rank(dir: &Path, name: &str, r: u32, n: u32) -> PathBuf {
    let p = dir.join(name);
    if name.ends_with(".gz") {
        write_gz(&p, with_rank_of(r, n).as_bytes());
    } else {
        std::fs::write(&p, with_rank_of(r, n)).unwrap();
    }
    p
}

/// Rank `r`'s stamp in ms: the ranks of one run stamp their files in no rank order, up to
/// 20 s × (n - 1) apart (each rank's handler stamps when its own trace is ready).
fn ms(r: u32, n: u32) -> u64 {
    1_712_000_000_123 + u64::from((r * 5 + 3) % n) * 20_000 + u64::from(r)
}

fn ns(r: u32, n: u32) -> u128 {
    u128::from(ms(r, n)) * 1_000_000 + 417
}

/// Training runs as their writers name them (the name forms are cited in
/// `src/trace/discover/handler.rs`): each is one profile, rank r in the file written for rank
/// r. (writer, ranks, name of rank r's file, profile id (`None`: the folder's), how ranks are
/// read.)
#[test]
fn training_run_names_make_one_profile() {
    type Name = fn(u32, u32) -> String;
    let cases: &[(&str, u32, Name, Option<&str>, Naming)] = &[
        (
            "torch's default {host}_{pid}.{ns} (Megatron-LM --use-pytorch-profiler, slime, DeepSpeed's tutorial)",
            4,
            |r, n| format!("node-{}_{}.{}.pt.trace.json", r / 2, 4000 + 13 * r, ns(r, n)),
            None,
            Naming::DistributedInfo,
        ),
        (
            "torch 1.8-1.9's default {host}_{pid}.{ms}",
            4,
            |r, n| format!("ip-10-0-0-{}_{}.{}.pt.trace.json.gz", r / 2, 700 + r, ms(r, n)),
            None,
            Naming::DistributedInfo,
        ),
        (
            "Kineto's DDP example, worker_name='worker'+str(rank)",
            4,
            |r, n| format!("worker{r}.{}.pt.trace.json", ns(r, n)),
            Some("worker"),
            Naming::Generic,
        ),
        (
            "issue 43's DDP run, worker{r}_step_12.{ms}",
            8,
            |r, n| format!("worker{r}_step_12.{}.pt.trace.json", ms(r, n)),
            Some("worker_step_12"),
            Naming::Generic,
        ),
        (
            "trainer_rank{r}_step_12.{ns}.gz",
            8,
            |r, n| format!("trainer_rank{r}_step_12.{}.pt.trace.json.gz", ns(r, n)),
            Some("trainer_rank_step_12"),
            Naming::Generic,
        ),
        (
            "rank{r}.{ms} (torch 1.8 handler)",
            4,
            |r, n| format!("rank{r}.{}.pt.trace.json", ms(r, n)),
            Some("rank"),
            Naming::Generic,
        ),
        (
            "rank_{r}.{ns}",
            4,
            |r, n| format!("rank_{r}.{}.pt.trace.json.gz", ns(r, n)),
            Some("rank"),
            Naming::Generic,
        ),
        (
            "node{n}_rank{r}.{ns}, two nodes",
            4,
            |r, n| format!("node{}_rank{r}.{}.pt.trace.json.gz", r / 2, ns(r, n)),
            Some("node_rank"),
            Naming::Generic,
        ),
        (
            "gpu{r}.{ms}",
            4,
            |r, n| format!("gpu{r}.{}.pt.trace.json", ms(r, n)),
            Some("gpu"),
            Naming::Generic,
        ),
        (
            "torchtitan iteration_{n}/rank{r}_trace.json",
            4,
            |r, _| format!("rank{r}_trace.json"),
            Some("trace"),
            Naming::Generic,
        ),
        (
            "verl prof_rank-{r}.json.gz",
            4,
            |r, _| format!("prof_rank-{r}.json.gz"),
            Some("prof"),
            Naming::Generic,
        ),
        (
            "verl before: prof_start_{a}_end_{b}_rank_{r}.json",
            4,
            |r, _| format!("prof_start_1_end_3_rank_{r}.json"),
            Some("prof_start_1_end_3"),
            Naming::Generic,
        ),
    ];
    for &(writer, n, name, id, naming) in cases {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("iteration_10");
        std::fs::create_dir(&dir).unwrap();
        let mut written = Vec::new();
        for r in 0..n {
            written.push(write_rank(&dir, &name(r, n), r, n));
        }
        let d = discover(&dir, false).unwrap();
        assert_eq!(d.groups.len(), 1, "{writer}: {:#?} {:?}", d.groups, d.notes);
        let g = &d.groups[0];
        assert_eq!(g.profile_id, id.unwrap_or("iteration_10"), "{writer}");
        for (r, f) in g.files.iter().enumerate() {
            assert_eq!(f.label, format!("[RANK{r:02}]"), "{writer}");
            assert_eq!(f.path, written[r], "{writer}");
            assert_eq!(f.naming, naming, "{writer}");
        }
        assert!(g.missing().is_empty(), "{writer}");
        assert!(
            !d.notes
                .iter()
                .any(|n| n.contains("differs") || n.contains("order")),
            "{writer}: {:?}",
            d.notes
        );
        // Named on the command line, in any order: the same profile.
        written.reverse();
        let d = rankprof::trace::discover::discover_given(&written, RankFrom::Auto, None, None)
            .unwrap();
        assert_eq!(d.groups.len(), 1, "{writer}");
        assert_eq!(d.groups[0].files.len(), n as usize, "{writer}");
    }
}

use rankprof::trace::discover::{discover_files_with, discover_given, split_run, RankFrom};

/// Names and heads disagree: the head wins (with a note), unless `--rank-from name`; two runs
/// an hour apart are two profiles; one run stamped over 10 minutes apart is said to look split,
/// and named on the command line it is one profile; a rank named twice is an error naming both.
#[test]
fn training_runs_heads_stamps_and_files_named() {
    let t = tempfile::tempdir().unwrap();
    // The script named its files by local rank, the heads hold the global ranks (7 - r).
    let files: Vec<PathBuf> = (0..4)
        .map(|r| {
            write_rank(
                t.path(),
                &format!("worker{r}.{}.pt.trace.json", ms(r, 4)),
                7 - r,
                8,
            )
        })
        .collect();
    let d = discover_files_with(&files, RankFrom::Auto);
    assert_eq!(d.groups.len(), 1);
    let got: Vec<(String, &Path)> = d.groups[0]
        .files
        .iter()
        .map(|f| (f.id_label(), f.path.as_path()))
        .collect();
    let want: Vec<(String, &Path)> = (0..4)
        .rev()
        .map(|r| (format!("RANK{:02}", 7 - r), files[r].as_path()))
        .collect();
    assert_eq!(got, want);
    assert!(
        d.notes
            .iter()
            .any(|n| n.contains("distributedInfo is the authority")
                && n.contains("4 file name(s)")),
        "{:?}",
        d.notes
    );
    // The heads say 8 ranks: 4 are here.
    assert!(
        d.notes.iter().any(|n| n.contains("4 of the 8 ranks")),
        "{:?}",
        d.notes
    );
    let d = discover_files_with(&files, RankFrom::Name);
    let labels: Vec<String> = d.groups[0].files.iter().map(|f| f.id_label()).collect();
    assert_eq!(labels, ["RANK00", "RANK01", "RANK02", "RANK03"]);
    assert!(!d.notes.iter().any(|n| n.contains("authority")));
    let d = discover_files_with(&files, RankFrom::Order);
    assert_eq!(d.groups[0].files[0].path, files[0]);

    // Two runs of worker{r}, an hour apart: two profiles named by their first stamps.
    let t2 = tempfile::tempdir().unwrap();
    for hour in [0u64, 1] {
        for r in 0..2 {
            let stamp = ms(r, 2) + hour * 3_600_000;
            write_rank(t2.path(), &format!("worker{r}.{stamp}.pt.trace.json"), r, 2);
        }
    }
    let d = discover(t2.path(), false).unwrap();
    let got: Vec<(String, usize)> = d
        .groups
        .iter()
        .map(|g| (g.profile_id.clone(), g.files.len()))
        .collect();
    let first = [ms(0, 2).min(ms(1, 2)), ms(0, 2).min(ms(1, 2)) + 3_600_000];
    assert_eq!(
        got,
        [
            (format!("worker.{}", first[0]), 2),
            (format!("worker.{}", first[1]), 2)
        ]
    );
    assert!(split_run(&d.groups).is_none());

    // One run's three ranks stamped 20 minutes apart: three one-rank profiles, said to look
    // like one run split; named on the command line, one profile.
    let t3 = tempfile::tempdir().unwrap();
    let split: Vec<PathBuf> = (0..3u32)
        .map(|r| {
            let stamp = 1_712_000_000_000 + u64::from(r) * 1_200_000;
            write_rank(
                t3.path(),
                &format!("worker{r}_step_12.{stamp}.pt.trace.json"),
                r,
                3,
            )
        })
        .collect();
    let d = discover(t3.path(), false).unwrap();
    assert_eq!(d.groups.len(), 3);
    let said = split_run(&d.groups).unwrap();
    assert!(said.contains("3 profiles of one rank each"), "{said}");
    assert!(d.notes.contains(&said));
    let d = discover_given(&split, RankFrom::Auto, None, None).unwrap();
    assert_eq!(d.groups.len(), 1);
    assert_eq!(d.groups[0].files.len(), 3);
    assert!(!d.notes.iter().any(|n| n.contains("one rank each")));

    // Rank 0 of both runs of t2 named: the two runs stay apart, a note names both files.
    let zeros: Vec<PathBuf> = d_files(t2.path(), "worker0.");
    assert_eq!(zeros.len(), 2);
    let d = discover_given(&zeros, RankFrom::Auto, None, None).unwrap();
    assert_eq!(d.groups.len(), 2);
    let note = d
        .notes
        .iter()
        .find(|n| n.contains("kept apart"))
        .unwrap_or_else(|| panic!("{:?}", d.notes));
    for z in &zeros {
        assert!(note.contains(&z.display().to_string()), "{note}");
    }
    assert!(note.contains("RANK00"), "{note}");
    // Numbered by order instead, they are one profile of two ranks.
    let d = discover_given(&zeros, RankFrom::Order, None, None).unwrap();
    assert_eq!(d.groups.len(), 1);
    assert_eq!(d.groups[0].files.len(), 2);
}

/// The files of `dir` whose names start with `prefix`, sorted.
fn d_files(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(prefix))
        })
        .collect();
    v.sort();
    v
}
