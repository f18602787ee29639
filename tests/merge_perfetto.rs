//! `merge` to a Perfetto `.pftrace` on real SGLang and HTA traces, checked by Perfetto's own
//! protos: tests/perfetto_decode.py decodes the file with the `perfetto` PyPI package's
//! `perfetto_trace_pb2` and counts per rank the slices, instants and flows, checks every
//! interned iid used is defined on its sequence and the ranks' track order, and counts the
//! same from the JSON merge of the same ranks, which the two must agree on; and every slice
//! begin (rank, name, time, args) and end (rank, time) must be the same in both.
//!
//! The Python comes from `RANKPROF_PERFETTO_PYTHON` (`.ci/run` sets it), else `.venv/bin/python`;
//! without `perfetto` installed the tests skip loudly.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::{rank_files, shared};
use rankprof::merge::{gather, merge_group, MergeOptions, TraceFormat};
use serde_json::Value;

const INSTALL: &str = ".venv/bin/pip install perfetto (or run .ci/run)";

/// A Python that can `import perfetto`.
fn perfetto_python() -> Option<PathBuf> {
    let candidates = std::env::var_os("RANKPROF_PERFETTO_PYTHON")
        .map(PathBuf::from)
        .into_iter()
        .chain(std::iter::once(
            Path::new(env!("CARGO_MANIFEST_DIR")).join(".venv/bin/python"),
        ));
    candidates.into_iter().find(|py| {
        Command::new(py)
            .args([
                "-c",
                "import perfetto.protos.perfetto.trace.perfetto_trace_pb2",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    })
}

macro_rules! python_or_skip {
    () => {
        match perfetto_python() {
            Some(py) => py,
            None => {
                assert!(
                    std::env::var("CI").as_deref() != Ok("true"),
                    "the perfetto package is missing under CI=true"
                );
                eprintln!(
                    "\n**** SKIPPED {}: the perfetto PyPI package is not installed. Install it: {INSTALL} ****\n",
                    module_path!()
                );
                return;
            }
        }
    };
}

/// Merges `files` twice, to JSON and to `.pftrace`, with `opts`; the decoder's findings.
fn merge_both(py: &Path, files: &[PathBuf], opts: &MergeOptions) -> (Value, Vec<String>) {
    let tmp = tempfile::tempdir().unwrap();
    let d = gather(None, files, false, None, None).unwrap();
    assert_eq!(d.groups.len(), 1, "{:?}", d.groups);
    let g = &d.groups[0];
    let json = tmp.path().join("m.trace.json.gz");
    let pf = tmp.path().join("m.pftrace");
    merge_group(g, &json, opts).unwrap();
    let res = merge_group(
        g,
        &pf,
        &MergeOptions {
            trace_format: TraceFormat::Perfetto,
            ..opts.clone()
        },
    )
    .unwrap();
    assert_eq!(
        res.uncompressed_out,
        std::fs::metadata(&pf).unwrap().len(),
        "the size reported is the file's"
    );
    (decode(py, &pf, &json, files), res.notes)
}

/// What tests/perfetto_decode.py finds in the two merges and the rank traces `raw`.
fn decode(py: &Path, pf: &Path, json: &Path, raw: &[PathBuf]) -> Value {
    let o = Command::new(py)
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/perfetto_decode.py"))
        .arg(pf)
        .arg(json)
        .args(raw)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "perfetto_decode.py: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).unwrap()
}

/// What every `.pftrace` must be: decodable, every iid defined, every event on a described
/// track under one rank, slices balanced, one root ordering the ranks explicitly in the order
/// of their labels (the decoder sorts them by DP, EP, PP, TP itself), every parent track
/// ordering its children explicitly, no flow id shared by two ranks, per rank the slices,
/// instants and counter values the JSON merge has, and every slice begin of the JSON merge,
/// to the ns, with its name and its args, and every slice end (the decoder applies the
/// incremental clocks and reads the args off the debug annotations and the TrackEvent
/// extension the trace declares), and no other.
fn check_common(v: &Value) {
    check_counts(v, Path::new("-"));
    let pf = &v["pftrace"];
    assert!(pf["slices_compared"].as_u64().unwrap() > 0, "{pf}");
    assert_eq!(pf["roots"], 1);
    assert_eq!(pf["root_explicit"], true);
    assert_eq!(pf["ranks_explicit"], true);
    for (label, want) in v["json"]["per_rank"].as_object().unwrap() {
        assert!(want["slices"].as_u64().unwrap() > 100, "{label}: {want}");
    }
}

/// Four real SGLang CPU ranks (TP×DP): every slice of every rank, ranks in rank order.
#[test]
fn sglang_tp2dp2_pftrace_holds_what_the_json_holds() {
    let py = python_or_skip!();
    let files = rank_files(&shared("sglang-cpu/tp2dp2"));
    let (v, _) = merge_both(&py, &files, &MergeOptions::default());
    check_common(&v);
    let order: Vec<&str> = v["pftrace"]["rank_order"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap())
        .collect();
    assert_eq!(order.len(), 4, "{order:?}");
}

/// A real A100 rank (launch → kernel flows `ac2g`, `fwdbwd`) as two ranks: the flows the JSON
/// merge has, begun and ended, per rank, none joining the two; written as the varint
/// `flow_ids_old` / `terminating_flow_ids_old` (fields 36, 42), which trace_processor reads
/// when an event has no `fixed64` `flow_ids` / `terminating_flow_ids` (47, 48).
#[test]
fn a100_flows_are_the_json_flows() {
    let py = python_or_skip!();
    let tmp = tempfile::tempdir().unwrap();
    let files: Vec<PathBuf> = (0..2)
        .map(|r| {
            let p = tmp.path().join(format!("a100-rank-{r}.json.gz"));
            std::fs::copy(shared("hta/nccl-a100-rank-0.json.gz"), &p).unwrap();
            p
        })
        .collect();
    let (v, notes) = merge_both(&py, &files, &MergeOptions::default());
    check_common(&v);
    for (label, want) in v["json"]["per_rank"].as_object().unwrap() {
        let got = &v["pftrace"]["per_rank"][label];
        assert!(want["flows"].as_u64().unwrap() > 1000, "{want}");
        assert_eq!(got["flows"], want["flows"], "{label}: {notes:?}");
        assert_eq!(got["flow_ends"], want["flow_ends"], "{label}: {notes:?}");
    }
    let fields = &v["pftrace"]["flow_fields"];
    assert_eq!(fields["fixed64"].as_u64().unwrap_or(0), 0, "{fields}");
    assert!(fields["varint"].as_u64().unwrap() > 2000, "{fields}");
}

/// `--steps` (found by a scan pass first in a `.pftrace` merge) and `--drop-cat` keep in the
/// `.pftrace` what they keep in the JSON.
#[test]
fn filters_keep_what_they_keep_in_json() {
    let py = python_or_skip!();
    let files = rank_files(&shared("sglang-cpu/tp2"));
    let opts = MergeOptions {
        steps: Some((1, 3)),
        drop_cat: vec!["python_function".into()],
        ..Default::default()
    };
    let (v, _) = merge_both(&py, &files, &opts);
    check_common(&v);
    let (all, _) = merge_both(&py, &files, &MergeOptions::default());
    let slices = |v: &Value| -> u64 {
        v["pftrace"]["per_rank"]
            .as_object()
            .unwrap()
            .values()
            .map(|r| r["slices"].as_u64().unwrap())
            .sum()
    };
    assert!(slices(&v) < slices(&all), "the filters kept everything");
}

/// `rankprof merge -o x.pftrace` writes protobuf (field 1, length-delimited, first), and
/// `--trace-format json` with it is refused.
#[test]
fn the_extension_chooses_the_format() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("m.pftrace");
    let dir = shared("sglang-cpu/tp2");
    let o = Command::new(env!("CARGO_BIN_EXE_rankprof"))
        .args(["merge", "--profile-dir"])
        .arg(&dir)
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let bytes = std::fs::read(&out).unwrap();
    assert_eq!(bytes[0], 0x0a, "a Trace starts with packet 1");
    assert_ne!(&bytes[..2], &[0x1f, 0x8b], "not gzip");
    // `.pftrace.gz`: the same protobuf, gzipped (trace_processor unpacks gzip itself).
    let gz = tmp.path().join("m.pftrace.gz");
    let o = Command::new(env!("CARGO_BIN_EXE_rankprof"))
        .args(["merge", "--profile-dir"])
        .arg(&dir)
        .arg("-o")
        .arg(&gz)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let packed = std::fs::read(&gz).unwrap();
    assert_eq!(&packed[..2], &[0x1f, 0x8b], "gzip");
    let mut unpacked = Vec::new();
    std::io::Read::read_to_end(
        &mut flate2::read::GzDecoder::new(&packed[..]),
        &mut unpacked,
    )
    .unwrap();
    // One gzip member (GzDecoder reads only the first) holding the same bytes: the ranks are
    // compressed on their threads into pieces of one deflate stream.
    assert_eq!(unpacked.len(), bytes.len(), "the same trace inside");
    assert!(unpacked == bytes, "the same bytes inside");
    assert_eq!(unpacked[0], 0x0a);
    let o = Command::new(env!("CARGO_BIN_EXE_rankprof"))
        .args(["merge", "--trace-format", "json", "--profile-dir"])
        .arg(&dir)
        .arg("-o")
        .arg(tmp.path().join("n.pftrace"))
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("--trace-format json"));
}

/// Four real ranks with Kineto `[memory]` events: both merges draw each rank's "memory
/// allocated" counter, its values the inputs' `Total Allocated` in time order, as the decoder
/// reads them from the rank traces themselves.
#[test]
fn memory_counters_are_the_inputs_total_allocated() {
    let py = python_or_skip!();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/real-gloo/tp4-extra-memory");
    let files = rank_files(&dir);
    let (v, _) = merge_both(&py, &files, &MergeOptions::default());
    check_common(&v);
    let raw = v["raw_memory"].as_array().unwrap();
    assert_eq!(raw.len(), 4, "every rank has memory events: {raw:?}");
    assert!(raw.iter().all(|r| r.as_array().unwrap().len() > 10));
    assert_eq!(v["pftrace"]["memory"], v["raw_memory"]);
    assert_eq!(v["json"]["memory"], v["raw_memory"]);
}

/// The planted TP4 fixture merged with `flags` to `.pftrace` and to `.trace.json.gz` by the
/// command line, both decoded ([`decode`]).
fn tp4_both(py: &Path, flags: &[&str]) -> Value {
    let tmp = tempfile::tempdir().unwrap();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/sglang-tp4");
    let merge = |out: &Path| {
        let o = Command::new(env!("CARGO_BIN_EXE_rankprof"))
            .arg("merge")
            .args(flags)
            .arg("--profile-dir")
            .arg(&dir)
            .arg("-o")
            .arg(out)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    };
    let (pf, json) = (
        tmp.path().join("m.pftrace"),
        tmp.path().join("m.trace.json.gz"),
    );
    merge(&pf);
    merge(&json);
    decode(py, &pf, &json, &[])
}

/// `merge --critical-path -o x.pftrace` on the planted TP4 fixture: the late arrivals and the
/// waits for them the JSON merge draws, on the same ranks' "critical path" tracks, with a flow
/// arrow from each late arrival to every rank that waited for it: the same pairs as the
/// JSON's flow events bound as a viewer binds them (`tests/perfetto_decode.py`).
#[test]
fn critical_path_is_drawn_with_flows() {
    let py = python_or_skip!();
    let v = tp4_both(&py, &["--critical-path"]);
    check_common(&v);
    let crit = &v["pftrace"]["critical"];
    let want = v["json"]["critical"].as_object().unwrap();
    let n: u64 = want.values().map(|x| x.as_u64().unwrap()).sum();
    assert!(n > 5, "{v}");
    assert_eq!(crit["per_rank"], v["json"]["critical"]);
    let pairs = crit["pairs"].as_array().unwrap();
    assert_eq!(crit["pairs"], v["json"]["critical_pairs"]);
    assert_eq!(crit["flows"], crit["flow_ends"]);
    assert_eq!(crit["flows"].as_u64(), Some(pairs.len() as u64), "{crit}");
    assert!(pairs.len() >= 3, "{crit}");
    // Each from a late arrival to another rank's wait for that very rank.
    for p in pairs {
        let (from, what, to, wait) = (&p[0], &p[1], &p[2], &p[3]);
        assert_eq!(what, "last at", "{p}");
        assert_ne!(from, to, "{p}");
        let late = from
            .as_str()
            .unwrap()
            .trim_matches(|c| c == '[' || c == ']');
        assert_eq!(
            wait.as_str(),
            Some(format!("waits for {late}").as_str()),
            "{p}"
        );
    }
}

/// `merge --what-if --critical-path -o x.pftrace` on the planted TP4 fixture: both overlays
/// drawn together, each rank's ideal steps and collectives the same slices (names, times to
/// the ns, args) as the JSON merge's, nested without an end left open or unmatched, beside the
/// critical path's.
#[test]
fn the_ideal_timeline_is_drawn_beside_the_critical_path() {
    let py = python_or_skip!();
    let v = tp4_both(&py, &["--what-if", "--critical-path"]);
    check_common(&v);
    let want = v["json"]["ideal"].as_object().unwrap();
    assert_eq!(want.len(), 4, "every rank has its ideal track: {v}");
    assert!(want.values().all(|n| n.as_u64().unwrap() > 4), "{v}");
    assert_eq!(v["pftrace"]["ideal"], v["json"]["ideal"]);
    assert_eq!(v["pftrace"]["critical"]["per_rank"], v["json"]["critical"]);
}

/// The profile folders bundled and shared: synthetic sets, real recordings (gloo, NCCL, SGLang
/// serving, the DLRM step) — those holding Kineto JSON.
fn every_fixture() -> Vec<PathBuf> {
    let mut dirs = common::bundled_profile_dirs();
    for s in [
        "sglang-cpu/tp1",
        "sglang-cpu/tp2",
        "sglang-cpu/by_stage",
        "param-dlrm-v100x8",
    ] {
        dirs.push(shared(s));
    }
    dirs
}

/// #54: every fixture's profiles, merged to `.pftrace`, decode with Perfetto's schema with
/// the JSON merge's counts per rank (slices, instants, counter values, first and last times)
/// and the same slices, to the ns ([`check_common`], but the floor of 100 slices a rank).
#[test]
fn every_fixture_decodes_with_the_json_merges_counts() {
    let py = python_or_skip!();
    let dirs = every_fixture();
    assert!(dirs.len() >= 40, "{} fixture folders", dirs.len());
    let mut groups = 0;
    for dir in &dirs {
        let d = gather(Some(dir.as_path()), &[], false, None, None).unwrap();
        for g in &d.groups {
            let tmp = tempfile::tempdir().unwrap();
            let json = tmp.path().join("m.trace.json.gz");
            let pf = tmp.path().join("m.pftrace.gz");
            merge_group(g, &json, &MergeOptions::default()).unwrap();
            let opts = MergeOptions {
                trace_format: TraceFormat::Perfetto,
                ..MergeOptions::default()
            };
            merge_group(g, &pf, &opts).unwrap();
            let raw: Vec<PathBuf> = g.files.iter().map(|f| f.path.clone()).collect();
            let v = decode(&py, &pf, &json, &raw);
            check_counts(&v, dir);
            groups += 1;
        }
    }
    assert!(
        groups >= dirs.len(),
        "{groups} profiles in {} folders",
        dirs.len()
    );
}

/// The checks of [`check_common`] but its floor of slices and root, of one merge of `dir`.
fn check_counts(v: &Value, dir: &Path) {
    let pf = &v["pftrace"];
    let js = &v["json"];
    let at = dir.display();
    assert!(pf["slices_compared"].as_u64().is_some(), "{at}: {pf}");
    for k in [
        "slice_mismatches",
        "undefined_iids",
        "clock_errors",
        "undescribed_tracks",
        "unmatched_ends",
        "unclosed",
        "flow_ids_shared_by_ranks",
    ] {
        assert_eq!(pf[k], 0, "{at} {k}: {}", pf["mismatch_examples"]);
    }
    assert_eq!(pf["rank_order"], pf["label_order"], "{at}");
    assert_eq!(pf["all_parents_explicit"], true, "{at}");
    let ranks = js["per_rank"].as_object().unwrap();
    assert!(!ranks.is_empty(), "{at}");
    assert_eq!(
        pf["per_rank"].as_object().unwrap().len(),
        ranks.len(),
        "{at}"
    );
    for (label, want) in ranks {
        let got = &pf["per_rank"][label];
        for k in ["slices", "instants", "counters", "first_ts", "last_ts"] {
            let w = want[k].as_u64().unwrap_or(0);
            assert_eq!(got[k].as_u64().unwrap_or(0), w, "{at} {label} {k}");
        }
    }
}
