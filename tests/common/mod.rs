//! Helpers shared by the analyze tests: the fixtures path, running the analysis in-process,
//! running the independent Python checker, and comparing the two figure by figure.
#![allow(dead_code)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use rankprof::analyze::Analysis;
use rankprof::cli::AnalyzeArgs;
use serde_json::Value;

pub fn shared(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/fixtures")
        .join(rel)
}

/// Analyzes `files` (plus whatever `tweak` sets); every kernel kept in the summary.
pub fn analyze_files(files: &[PathBuf], tweak: impl FnOnce(&mut AnalyzeArgs)) -> Analysis {
    let mut args = AnalyzeArgs {
        files: files.to_vec(),
        summary_kernels: 1_000_000,
        ..Default::default()
    };
    tweak(&mut args);
    rankprof::analyze::analyze(&args).unwrap_or_else(|e| panic!("analyze {files:?}: {e:#}"))
}

/// Runs tests/check_analyze.py on `files` with extra arguments; its JSON output.
pub fn checker(files: &[PathBuf], extra: &[&str]) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/check_analyze.py");
    let out = Command::new("python3")
        .arg(script)
        .args(extra)
        .args(files)
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "checker failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("checker prints JSON")
}

fn canon(p: &str) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| PathBuf::from(p))
}

fn i(v: &Value) -> i64 {
    v.as_i64().unwrap_or_else(|| panic!("not an integer: {v}"))
}

/// Asserts that every figure the checker computed for its ranks equals the analysis'.
pub fn assert_matches_checker(a: &Analysis, c: &Value) {
    let ranks = c["ranks"].as_object().expect("ranks");
    // Checker key (path or merged label) -> rank index in the analysis.
    let mut index: HashMap<String, usize> = HashMap::new();
    for key in ranks.keys() {
        let label = a
            .files
            .iter()
            .find(|f| canon(&f.path) == canon(key) && f.ranks.len() == 1)
            .map(|f| f.ranks[0].clone())
            .unwrap_or_else(|| key.clone());
        let r = a
            .ranks
            .iter()
            .position(|x| x.rank == label)
            .unwrap_or_else(|| {
                panic!(
                    "checker rank {key} not in the analysis ({:?})",
                    a.ranks.iter().map(|r| &r.rank).collect::<Vec<_>>()
                )
            });
        index.insert(key.clone(), r);
    }
    let summary = a.summary.as_ref().expect("summary");
    for (key, cr) in ranks {
        let r = index[key];
        let s = &a.ranks[r];
        let ctx = format!("rank {} ({key})", s.rank);
        assert_eq!(s.source, cr["mode"].as_str().unwrap(), "{ctx} source");
        assert_eq!(s.busy_ns, i(&cr["busy_ns"]), "{ctx} busy");
        assert_eq!(s.compute_ns, i(&cr["compute_ns"]), "{ctx} compute");
        assert_eq!(s.comm_ns, i(&cr["comm_ns"]), "{ctx} comm");
        assert_eq!(
            s.exposed_comm_ns,
            i(&cr["exposed_comm_ns"]),
            "{ctx} exposed comm"
        );
        assert_eq!(s.memcpy_memset_ns, i(&cr["copy_ns"]), "{ctx} memcpy/memset");
        assert_eq!(s.span_ns, i(&cr["span_ns"]), "{ctx} span");
        assert_eq!(s.idle_ns, s.span_ns - s.busy_ns, "{ctx} idle");
        assert_eq!(
            s.kernels as i64,
            i(&cr["kernel_count"]),
            "{ctx} kernel count"
        );
        assert_eq!(
            s.kernel_sum_ns,
            i(&cr["kernel_total_ns"]),
            "{ctx} kernel time"
        );
        // Per-name totals of GPU ops.
        if let Some(ops) = cr["ops"].as_object() {
            let mine: HashMap<&str, (i64, u64)> = summary
                .kernels
                .iter()
                .filter(|k| k.count[r] > 0)
                .map(|k| (k.name.as_str(), (k.total_ns[r], k.count[r])))
                .collect();
            assert_eq!(mine.len(), ops.len(), "{ctx} distinct op names");
            for (name, v) in ops {
                let want = (i(&v[0]), i(&v[1]) as u64);
                assert_eq!(mine.get(name.as_str()), Some(&want), "{ctx} op {name}");
            }
        }
        // Steps: every row of the table against the checker's step of that rank.
        let csteps = cr["steps"].as_array().expect("steps");
        for row in &a.steps.rows {
            let k = row.idx[r];
            let cs = &csteps[k];
            assert_eq!(
                row.dur_ns[r],
                i(&cs["dur_ns"]),
                "{ctx} step {} time",
                row.step
            );
            assert_eq!(
                row.busy_ns[r],
                i(&cs["busy_ns"]),
                "{ctx} step {} busy",
                row.step
            );
            assert_eq!(
                row.work_ns[r],
                i(&cs["work_ns"]),
                "{ctx} step {} work",
                row.step
            );
        }
        if a.ranks.len() == ranks.len()
            && a.steps
                .rows
                .first()
                .is_some_and(|row| row.step.parse::<i64>().ok() == Some(0))
        {
            let min = ranks
                .values()
                .map(|x| x["steps"].as_array().unwrap().len())
                .min()
                .unwrap_or(0);
            assert_eq!(a.steps.rows.len(), min, "steps on every rank");
        }
        // Collectives of this rank within its world.
        let cc = &c["collectives"]["ranks"][key];
        let mine = &a.collectives.ranks[r];
        assert_eq!(mine.wait_ns, i(&cc["wait_ns"]), "{ctx} collective wait");
        assert_eq!(
            mine.arrived_last as i64,
            i(&cc["arrived_last"]),
            "{ctx} arrived last"
        );
        assert_eq!(
            mine.matched as i64,
            i(&cc["matched"]),
            "{ctx} matched collectives"
        );
    }
    // Collective groups of the world these ranks form.
    let world = a.collectives.ranks[*index.values().next().expect("a rank")].world;
    let groups = c["collectives"]["groups"].as_object().expect("groups");
    let mine: Vec<_> = a
        .collectives
        .groups
        .iter()
        .filter(|g| g.world == world)
        .collect();
    assert_eq!(mine.len(), groups.len(), "collective groups");
    for g in mine {
        let cg = &groups[&g.key];
        assert_eq!(
            g.matched as i64,
            i(&cg["matched"]),
            "group {} matched",
            g.key
        );
        assert_eq!(
            g.max_skew_ns,
            i(&cg["skew_max_ns"]),
            "group {} max skew",
            g.key
        );
        let mean = i(&cg["skew_sum_ns"]) as f64 / g.matched as f64;
        assert!(
            (g.mean_skew_ns - mean).abs() < 1e-6,
            "group {} mean skew {} vs {mean}",
            g.key,
            g.mean_skew_ns
        );
    }
}
