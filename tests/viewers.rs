//! The merged trace in two real trace viewers. Every fixture set (`fixtures/`, each stage of
//! `sglang-bystage-tp2` on its own) and the real SGLang CPU traces (`tp2`, `tp2dp2`) and HTA's
//! `sampled-rank-{0,1}` are merged, then tests/viewers/check.mjs loads each merged trace
//! - in Catapult, the trace viewer behind chrome://tracing (`trace_viewer_full.html` from the
//!   PyPI wheel torch-tb-profiler), in headless Chromium: no import warning, no page error, every
//!   rank its own labelled processes in rank order (`process_sort_index` honoured), every flow
//!   paired with both ends on one rank, slices per rank as counted over the raw JSON, and a
//!   screenshot of the drawn timeline (kept in `target/viewers/`) that is not blank;
//! - in Chrome DevTools' trace engine (npm `@paulirish/trace_engine`), in Node: it parses the
//!   trace, finds every process and thread name the metadata gives and the same entries per rank.
//!
//! A planted host delay merged with `--critical-path` loads too, with the planted rank's
//! critical-path track drawn; so do Nsight Systems exports (tests/make_nsys_sqlite.py) merged,
//! with an arrow per launch and their streams and threads named as tests/check_nsys.py counts.
//!
//! HTA's real `nccl-a100-rank-0` has flow ends without starts, so Catapult warns about it: merged
//! alone, it must give exactly the warnings the input gives (the merge adds none).
//!
//! Skipped, loudly, when node, Chromium or the viewers are missing (`tests/viewers/install.sh`
//! installs the viewers; `.ci/run` runs it).

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use common::shared;
use rankprof::merge::{gather, merge_group, MergeOptions};
use serde_json::Value;

fn manifest() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn which(names: &[&str]) -> Option<PathBuf> {
    names.iter().find_map(|name| {
        let out = Command::new("which").arg(name).output().ok()?;
        let p = String::from_utf8_lossy(&out.stdout).trim().to_string();
        (out.status.success() && !p.is_empty()).then(|| PathBuf::from(p))
    })
}

/// Node, Chromium and the installed viewers, or why the test cannot run.
fn tools() -> Result<(PathBuf, PathBuf), String> {
    let node = which(&["node"]).ok_or("no node on PATH")?;
    let chromium = which(&[
        "chromium",
        "chromium-browser",
        "google-chrome",
        "google-chrome-stable",
    ])
    .ok_or("no chromium on PATH (CI installs it)")?;
    let v = manifest().join("tests/viewers");
    for need in [
        "node_modules/puppeteer-core/package.json",
        "node_modules/webcomponents.js/webcomponents.min.js",
        "node_modules/@paulirish/trace_engine/package.json",
        "catapult/trace_viewer_full.html",
    ] {
        if !v.join(need).exists() {
            return Err(format!(
                "tests/viewers/{need} is missing (run tests/viewers/install.sh)"
            ));
        }
    }
    Ok((node, chromium))
}

/// Merges every group found in `dir` (or made of `files`) into `out/NAME[-STAGE].trace.json.gz`.
fn merge_into(out: &Path, name: &str, dir: Option<&Path>, files: &[PathBuf]) -> Vec<PathBuf> {
    let d = gather(dir, files, false, None, None).unwrap();
    d.groups
        .iter()
        .map(|g| {
            let file = match &g.stage {
                Some(s) => out.join(format!("{name}-{s}.trace.json.gz")),
                None => out.join(format!("{name}.trace.json.gz")),
            };
            let r = merge_group(g, &file, &MergeOptions::default()).unwrap();
            assert!(!r.damaged(), "{name}: {:?}", r.notes);
            file
        })
        .collect()
}

/// Every fixture set under `root`: a folder of traces is one set; a folder of folders
/// (`real-gloo/`, one recording per subfolder) gives one set per subfolder, named `parent-sub`.
fn fixture_sets(root: &Path) -> Vec<(String, PathBuf)> {
    let dirs = |d: &Path| -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.is_dir())
            .collect();
        v.sort();
        v
    };
    let name = |p: &Path| p.file_name().unwrap().to_string_lossy().to_string();
    let mut sets = Vec::new();
    for dir in dirs(root) {
        let subs = dirs(&dir);
        if subs.is_empty() {
            sets.push((name(&dir), dir));
        } else {
            for sub in subs {
                sets.push((format!("{}-{}", name(&dir), name(&sub)), sub));
            }
        }
    }
    sets
}

/// "[TP01-DP00]" -> its SGLang sort key (dp, ep, pp, tp, plain rank), worked out from the label.
fn rank_key(label: &str) -> [u32; 5] {
    let mut k = [0; 5];
    for part in label.trim_matches(|c| c == '[' || c == ']').split('-') {
        let digits = part.trim_start_matches(|c: char| c.is_ascii_alphabetic());
        let n: u32 = digits.parse().unwrap_or(0);
        match &part[..part.len() - digits.len()] {
            "DP" => k[0] = n,
            "EP" => k[1] = n,
            "PP" => k[2] = n,
            "TP" => k[3] = n,
            _ => k[4] = n,
        }
    }
    k
}

fn label_of(pid: &str) -> Option<&str> {
    let end = pid.find(']')?;
    pid.starts_with('[').then(|| &pid[..=end])
}

fn counts(v: &Value) -> BTreeMap<String, u64> {
    v.as_object()
        .unwrap()
        .iter()
        .map(|(k, n)| (k.clone(), n.as_u64().unwrap()))
        .collect()
}

/// The real NCCL recording a merged trace was made of (`real-nccl-NAME.trace.json.gz`).
fn real_nccl_set<'a>(sets: &'a [(String, PathBuf)], merged: &str) -> Option<&'a Path> {
    sets.iter()
        .find(|(n, _)| n.starts_with("real-nccl-") && merged == format!("{n}.trace.json.gz"))
        .map(|(_, d)| d.as_path())
}

/// The flow starts (`"ph": "s"`) and ends (`"ph": "f"`) of the traces in `dir` whose flow
/// (`cat`, `id`) has no end, or no start, in the same file: torch 2.11 writes an `ac2g` end on
/// a CPU sync call (`cudaEventSynchronize`) and no start for it, and starts that nothing ends.
fn unpaired_flows(dir: &Path) -> (usize, usize) {
    let (mut s, mut f) = (0, 0);
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if !p.to_string_lossy().ends_with(".pt.trace.json.gz") {
            continue;
        }
        let mut text = String::new();
        std::io::Read::read_to_string(
            &mut flate2::read::GzDecoder::new(std::fs::File::open(&p).unwrap()),
            &mut text,
        )
        .unwrap();
        let v: Value = serde_json::from_str(&text).unwrap();
        let events = v["traceEvents"].as_array().unwrap();
        let flow = |ph: &str| -> Vec<(String, String)> {
            events
                .iter()
                .filter(|e| e["ph"] == ph)
                .map(|e| (e["cat"].to_string(), e["id"].to_string()))
                .collect()
        };
        let starts: BTreeSet<(String, String)> = flow("s").into_iter().collect();
        let ends: BTreeSet<(String, String)> = flow("f").into_iter().collect();
        s += flow("s").iter().filter(|k| !ends.contains(*k)).count();
        f += flow("f").iter().filter(|k| !starts.contains(*k)).count();
    }
    (s, f)
}

/// What Catapult made of one merged trace, against the count over its JSON.
fn check_catapult(name: &str, c: &Value, want: &Value) {
    assert_eq!(
        c["page_errors"],
        Value::Array(vec![]),
        "{name}: page errors"
    );
    assert_eq!(
        c["warnings"],
        Value::Array(vec![]),
        "{name}: import warnings"
    );
    let procs = c["processes"].as_array().unwrap();
    assert_eq!(
        procs.len() as u64,
        want["pids"].as_u64().unwrap(),
        "{name}: processes"
    );
    // Slices per rank; every process belongs to one rank and shows its label.
    let mut slices: BTreeMap<String, u64> = BTreeMap::new();
    let mut samples: BTreeMap<String, u64> = BTreeMap::new();
    let mut counter_names: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut order: Vec<String> = Vec::new();
    for p in procs {
        let pid = p["pid"].as_str().unwrap();
        let label = label_of(pid).unwrap_or_else(|| panic!("{name}: unlabelled process {pid}"));
        if let Some(n) = p["name"].as_str() {
            assert!(n.starts_with(label), "{name}: process {pid} is named {n}");
        }
        *slices.entry(label.to_string()).or_default() += p["slices"].as_u64().unwrap();
        let n = p["counter_samples"].as_u64().unwrap();
        if n > 0 {
            *samples.entry(label.to_string()).or_default() += n;
            let names = p["counter_names"].as_array().unwrap().iter();
            counter_names
                .entry(label.to_string())
                .or_default()
                .extend(names.map(|n| n.as_str().unwrap().to_string()));
        }
        if order.last().map(String::as_str) != Some(label) {
            order.push(label.to_string());
        }
    }
    assert_eq!(want["unlabelled"], 0, "{name}: events without a rank label");
    // Catapult makes each thread-scoped instant a zero-length slice of its thread.
    let mut want_slices = counts(&want["slices"]);
    for (label, n) in counts(&want["instants"]) {
        *want_slices.entry(label).or_default() += n;
    }
    assert_eq!(slices, want_slices, "{name}: slices per rank");
    // Counter tracks (the memory counter of a trace with Kineto `[memory]` events): every
    // sample of every `C` event, on its rank, under the event's name.
    assert_eq!(
        samples,
        counts(&want["counters"]),
        "{name}: counter samples per rank"
    );
    assert_eq!(
        counter_names,
        name_sets(&want["counter_names"]),
        "{name}: counter tracks per rank"
    );
    // Rank order: one block of processes per rank, blocks sorted as SGLang's sort index says.
    let mut sorted: Vec<String> = slices.keys().cloned().collect();
    sorted.sort_by_key(|l| rank_key(l));
    assert_eq!(order, sorted, "{name}: process order (sort index)");
    let ranks: BTreeSet<String> = want["ranks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap().to_string())
        .collect();
    assert_eq!(ranks, slices.keys().cloned().collect(), "{name}: ranks");
    // Flows: all paired, both ends on one rank (in the viewer and in the JSON).
    assert_eq!(c["flows"], want["flows_paired"], "{name}: flows");
    assert_eq!(
        want["flow_starts"], want["flows_paired"],
        "{name}: unpaired starts"
    );
    assert_eq!(
        want["flow_ends"], want["flows_paired"],
        "{name}: unpaired ends"
    );
    // Only the critical path's arrows cross ranks, by design: from a late rank to each rank
    // that waited for it (and the viewer binds every one of them so).
    assert_eq!(
        c["flows_cross_rank"], want["flows_cross_rank"],
        "{name}: flows across ranks"
    );
    let cross = want["flows_cross_rank"].as_u64().unwrap_or(0);
    if name.contains("critical-path") {
        assert!(
            cross > 0,
            "{name}: no arrow from a late rank to its waiters"
        );
    } else {
        assert_eq!(cross, 0, "{name}: flow ids across ranks");
    }
    assert_eq!(c["flows_half_open"], 0, "{name}: flows without an end");
    // The screenshot: a PNG with the timeline drawn (not one flat colour).
    let shot = std::fs::read(c["screenshot"].as_str().unwrap()).unwrap();
    assert!(shot.starts_with(b"\x89PNG\r\n\x1a\n"), "{name}: not a PNG");
    let px = &c["pixels"];
    let area = px["width"].as_u64().unwrap() * px["height"].as_u64().unwrap();
    assert!(
        px["ink"].as_u64().unwrap() * 10 > area && px["colours"].as_u64().unwrap() >= 16,
        "{name}: a blank screenshot? {px}"
    );
}

/// `{key: [name, …]}` as a set of names per key.
fn name_sets(v: &Value) -> BTreeMap<String, BTreeSet<String>> {
    v.as_object()
        .unwrap()
        .iter()
        .map(|(key, names)| {
            let names = names.as_array().unwrap().iter();
            (
                key.clone(),
                names.map(|n| n.as_str().unwrap().into()).collect(),
            )
        })
        .collect()
}

/// What Chrome DevTools' trace engine made of one merged trace.
fn check_devtools(name: &str, d: &Value, want: &Value) {
    assert_eq!(
        d["process_names"], want["process_names"],
        "{name}: DevTools' process names"
    );
    assert_eq!(
        name_sets(&d["thread_names"]),
        name_sets(&want["thread_names"]),
        "{name}: DevTools' thread names"
    );
    let mut per: BTreeMap<String, u64> = BTreeMap::new();
    for (pid, n) in counts(&d["entries_per_pid"]) {
        let label = label_of(&pid).unwrap_or_else(|| panic!("{name}: DevTools pid {pid}"));
        *per.entry(label.to_string()).or_default() += n;
    }
    assert_eq!(
        per,
        counts(&want["slices"]),
        "{name}: DevTools' entries per rank"
    );
}

/// Writes four ranks' Nsight Systems exports into `dir` and returns tests/check_nsys.py's
/// figures of them; `None` (said) without python3.
fn nsys_exports(dir: &Path) -> Option<Vec<Value>> {
    let py = "python3";
    let gen = Command::new(py)
        .arg(manifest().join("tests/make_nsys_sqlite.py"))
        .arg(dir)
        .args(["--ranks", "4", "--steps", "4"])
        .output();
    if !gen.as_ref().is_ok_and(|o| o.status.success()) {
        eprintln!(
            "SKIPPED: the Nsight Systems case (python3 and tests/make_nsys_sqlite.py: {gen:?})"
        );
        return None;
    }
    let files: Vec<PathBuf> = (0..4)
        .map(|r| dir.join(format!("rank{r}.sqlite")))
        .collect();
    let out = Command::new(py)
        .arg(manifest().join("tests/check_nsys.py"))
        .args(&files)
        .output()
        .expect("run check_nsys.py");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("checker JSON");
    v.as_array().cloned()
}

/// The merged exports in both viewers, against the checker's count over the exports: the
/// slices per rank, every launch's arrow drawn (paired, within its rank), and per rank its GPU
/// process, its streams and its host thread named in DevTools.
fn check_nsys_merged(name: &str, v: &Value, want: &[Value]) {
    assert_eq!(want.len(), 4, "{name}: the checker's ranks");
    let c = &v["catapult"];
    let starts: u64 = want
        .iter()
        .map(|w| w["viewer"]["flow_starts"].as_u64().unwrap())
        .sum();
    assert!(starts > 0, "{name}: no launch in the exports");
    // (DevTools' engine draws no `s`/`f` arrow of any Kineto trace, merged or not: Catapult's
    // count is the one checked.)
    assert_eq!(c["flows"], starts, "{name}: Catapult's arrows");
    let slices = counts(&v["expected"]["slices"]);
    for (r, w) in want.iter().enumerate() {
        let label = format!("[RANK{r:02}]");
        assert_eq!(
            slices.get(&label).copied(),
            w["viewer"]["slices"].as_u64(),
            "{name}: {label} slices"
        );
        let threads = &v["devtools"]["thread_names"];
        let gpu = threads[format!("{label} 0")].to_string();
        for s in w["viewer"]["streams"]["0"].as_array().unwrap() {
            assert!(
                gpu.contains(s.as_str().unwrap()),
                "{name}: {label} {s}: {gpu}"
            );
        }
        let host = threads[format!("{label} {}", 1234 + r)].to_string();
        for t in w["viewer"]["threads"].as_array().unwrap() {
            assert!(
                host.contains(t.as_str().unwrap()),
                "{name}: {label} {t}: {host}"
            );
        }
        assert_eq!(
            v["devtools"]["process_names"][format!("{label} 0")],
            format!("{label} GPU 0"),
            "{name}"
        );
    }
}

#[test]
fn merged_traces_load_in_catapult_and_devtools() {
    let (node, chromium) = match tools() {
        Ok(t) => t,
        Err(why) => {
            eprintln!("SKIPPED: merged_traces_load_in_catapult_and_devtools: {why}");
            return;
        }
    };
    let target = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let out = target.parent().unwrap_or(&target).join("viewers");
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(&out).unwrap();

    let mut merged = Vec::new();
    let sets = fixture_sets(&manifest().join("fixtures"));
    assert!(sets.len() >= 5, "fixture sets: {sets:?}");
    for (name, dir) in &sets {
        merged.extend(merge_into(&out, name, Some(dir), &[]));
    }
    for set in ["tp2", "tp2dp2"] {
        let dir = shared(&format!("sglang-cpu/{set}"));
        merged.extend(merge_into(
            &out,
            &format!("sglang-cpu-{set}"),
            Some(&dir),
            &[],
        ));
    }
    // The critical path drawn in (`merge --critical-path`) on a planted host delay: its track
    // per rank must load like every other process of the rank.
    let planted = out.join("planted-host-delay");
    rankprof::synth::write_set(
        &rankprof::synth::SynthOptions {
            tp: 4,
            steps: 6,
            layers: 2,
            host_delay: Some(rankprof::synth::Delay {
                rank: 2,
                delay_ns: 2_000_000,
                from_step: 0,
            }),
            ..Default::default()
        },
        &planted,
    )
    .unwrap();
    let path = {
        let a = rankprof::analyze::analyze(&rankprof::analyze::AnalyzeOptions {
            profile_dir: Some(planted.clone()),
            waiters: true,
            ..Default::default()
        })
        .unwrap();
        std::sync::Arc::new(a.path.overlay())
    };
    let cp_file = out.join("synth-critical-path.trace.json.gz");
    let g = &gather(Some(&planted), &[], false, None, None)
        .unwrap()
        .groups[0];
    let opts = MergeOptions {
        overlays: vec![path],
        ..MergeOptions::default()
    };
    assert!(!merge_group(g, &cp_file, &opts).unwrap().damaged());
    merged.push(cp_file.clone());
    // Nsight Systems exports (tests/make_nsys_sqlite.py) merged: per rank its GPU and host
    // processes named, the streams and threads named, and an arrow from every launch to its
    // kernel, memcpy or memset, counted against tests/check_nsys.py's count over the exports.
    let nsys_dir = out.join("nsys-exports");
    let nsys_want = nsys_exports(&nsys_dir);
    let nsys_file = match &nsys_want {
        Some(_) => {
            let f = merge_into(&out, "nsys-exports", Some(&nsys_dir), &[]);
            merged.extend(f.iter().cloned());
            f.into_iter().next()
        }
        None => None,
    };
    let sampled = [
        shared("hta/sampled-rank-0.json.gz"),
        shared("hta/sampled-rank-1.json.gz"),
    ];
    merged.extend(merge_into(&out, "hta-sampled", None, &sampled));
    let nccl_in = shared("hta/nccl-a100-rank-0.json.gz");
    let nccl = merge_into(&out, "hta-nccl-a100", None, std::slice::from_ref(&nccl_in));

    let t = std::time::Instant::now();
    let o = Command::new(&node)
        .arg(manifest().join("tests/viewers/check.mjs"))
        .arg("--catapult")
        .arg(manifest().join("tests/viewers/catapult"))
        .arg("--chromium")
        .arg(&chromium)
        .arg("--out")
        .arg(&out)
        .args(&merged)
        .args(&nccl)
        .arg(&nccl_in)
        .output()
        .expect("node runs");
    assert!(
        o.status.success(),
        "check.mjs failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let lines: Vec<Value> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), merged.len() + 2, "one line per trace");
    let mut memory_seen = false;
    for (file, v) in merged.iter().zip(&lines) {
        let name = file.file_name().unwrap().to_string_lossy().to_string();
        eprintln!(
            "{name}: Catapult {} processes, {} flows, import {} ms; DevTools parse {} ms",
            v["catapult"]["processes"].as_array().unwrap().len(),
            v["catapult"]["flows"],
            v["catapult"]["import_ms"],
            v["devtools"]["parse_ms"]
        );
        match real_nccl_set(&sets, &name) {
            // torch 2.11 writes flow ends with no start and starts with no end: the merge
            // adds none of its own, and no warning to the viewer's on theirs.
            Some(dir) => {
                let (starts, ends) = unpaired_flows(dir);
                let mut want = v["expected"].clone();
                for (k, raw) in [("flow_starts", starts), ("flow_ends", ends)] {
                    let n = want[k].as_u64().unwrap() as usize;
                    assert_eq!(
                        n - raw,
                        want["flows_paired"].as_u64().unwrap() as usize,
                        "{name}: {k} beyond the input's own unpaired {raw}"
                    );
                    want[k] = want["flows_paired"].clone();
                }
                let mut c = v["catapult"].clone();
                let warnings = c["warnings"].take();
                let warnings = warnings.as_array().unwrap();
                assert!(
                    warnings.iter().all(|w| w
                        .as_str()
                        .unwrap()
                        .starts_with("flow_slice_ordering_error: Found flow phase f for id: ")),
                    "{name}: {warnings:?}"
                );
                assert_eq!(warnings.len(), ends, "{name}");
                c["warnings"] = Value::Array(vec![]);
                check_catapult(&name, &c, &want);
            }
            None => check_catapult(&name, &v["catapult"], &v["expected"]),
        }
        check_devtools(&name, &v["devtools"], &v["expected"]);
        if name.contains("tp4-extra-memory") {
            memory_seen = true;
            // A real recording with `profile_memory=True`: each rank's memory counter track
            // opens in the viewer (its samples counted against the JSON above).
            let names = v["expected"]["counter_names"].as_object().unwrap();
            assert_eq!(
                names.len(),
                4,
                "{name}: memory counters on every rank: {names:?}"
            );
            assert!(
                names.values().all(|n| n
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|x| x == "memory allocated")),
                "{name}: {names:?}"
            );
        }
        if *file == cp_file {
            // The planted rank's critical-path track, drawn with its slices.
            let procs = v["catapult"]["processes"].as_array().unwrap();
            let cp = procs
                .iter()
                .find(|p| p["pid"] == "[TP02] critical path")
                .unwrap_or_else(|| panic!("{name}: no critical-path track: {procs:?}"));
            assert!(cp["slices"].as_u64().unwrap() >= 6, "{name}: {cp}");
        }
        if Some(file) == nsys_file.as_ref() {
            check_nsys_merged(&name, v, nsys_want.as_deref().unwrap_or_default());
        }
    }
    assert!(
        memory_seen,
        "the memory recording (real-gloo/tp4-extra-memory) was merged"
    );
    // The real trace with dangling flow ends: the merge adds no warning to the input's own.
    let sorted = |v: &Value| {
        let mut w: Vec<String> = v["catapult"]["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| w.as_str().unwrap().to_string())
            .collect();
        w.sort();
        w
    };
    let (merged_nccl, input_nccl) = (&lines[merged.len()], &lines[merged.len() + 1]);
    assert!(!sorted(input_nccl).is_empty(), "the input's own warnings");
    assert_eq!(
        sorted(merged_nccl),
        sorted(input_nccl),
        "nccl-a100: warnings"
    );
    assert_eq!(
        merged_nccl["catapult"]["flows"],
        input_nccl["catapult"]["flows"]
    );
    eprintln!(
        "viewers: {} merged traces checked in {:.1} s; screenshots in {}",
        merged.len() + 1,
        t.elapsed().as_secs_f64(),
        out.display()
    );
}
