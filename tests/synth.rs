//! `rankprof synth` against an independent reader: `tests/check_synth.py` parses what the
//! generator wrote with Python's own `json` module and measures it (key order, flows,
//! correlations, collective end times, per-step time per kernel class); these tests compare its
//! figures with the configuration that was asked for, and read every file back with the crate's
//! reader.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use rankprof::synth::catalog::Class;
use rankprof::synth::Vendor;
use rankprof::synth::{write_set, Slow, SynthOptions, Written, DEFAULT_BASE_NS};
use rankprof::trace::{discover, read_trace};
use serde_json::Value;

fn check(dir: &Path) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/check_synth.py");
    let out = Command::new("python3")
        .arg(script)
        .arg(dir)
        .output()
        .expect("running python3");
    assert!(
        out.status.success(),
        "check_synth.py: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("check_synth.py prints JSON")
}

fn files(v: &Value) -> &Vec<Value> {
    v["files"].as_array().unwrap()
}

fn int(v: &Value) -> i64 {
    v.as_i64().unwrap_or_else(|| panic!("not an integer: {v}"))
}

/// No structural problem in any file, and every collective complete and ending at one instant.
fn assert_sound(v: &Value) {
    for f in files(v) {
        for key in [
            "flows_unmatched",
            "flows_unbound",
            "kernels_without_launch",
            "gpu_without_runtime",
            "kernel_before_launch",
            "stream_overlaps",
            "gpu_outside_steps",
            "bad_numbers",
        ] {
            assert_eq!(int(&f[key]), 0, "{key} in {}", f["name"]);
        }
        assert!(int(&f["kernels"]) > 0, "{}", f["name"]);
        assert_eq!(int(&f["flows_s"]), int(&f["flows_f"]));
    }
    let c = &v["collectives"];
    assert!(int(&c["total"]) > 0);
    assert_eq!(c["complete"], c["total"], "incomplete collectives: {c}");
    assert_eq!(
        int(&c["max_end_spread_ns"]),
        0,
        "collective ends differ across ranks"
    );
}

/// Global rank of a checked file: `(dp * pp + pp_rank) * tp + tp_rank`.
fn global(f: &Value, tp: i64, pp: i64) -> i64 {
    let id = &f["identity"];
    (int(&id["dp"]) * pp + int(&id["pp"])) * tp + int(&id["tp"])
}

/// Per step: the slow rank's summed time of `classes` over the mean of its peers (same DP
/// replica and PP stage).
fn ratios(v: &Value, classes: &[Class], slow: i64, tp: i64, pp: i64) -> Vec<f64> {
    let sum = |f: &Value, step: usize| -> f64 {
        classes
            .iter()
            .map(|c| f["step_class_ns"][c.name()][step].as_f64().unwrap())
            .sum()
    };
    let fs = files(v);
    let me = fs
        .iter()
        .find(|f| global(f, tp, pp) == slow)
        .expect("slow rank's file");
    let same_group = |f: &&Value| {
        f["identity"]["dp"] == me["identity"]["dp"] && f["identity"]["pp"] == me["identity"]["pp"]
    };
    let peers: Vec<&Value> = fs
        .iter()
        .filter(same_group)
        .filter(|f| global(f, tp, pp) != slow)
        .collect();
    assert!(!peers.is_empty());
    let steps = me["steps"].as_array().unwrap().len();
    (0..steps)
        .map(|k| {
            let others = peers.iter().map(|p| sum(p, k)).sum::<f64>() / peers.len() as f64;
            sum(me, k) / others
        })
        .collect()
}

fn assert_planted(r: &[f64], factor: f64, from: usize) {
    assert!(r.len() > from, "only {} steps", r.len());
    for (k, x) in r.iter().enumerate() {
        let want = if k >= from { factor } else { 1.0 };
        assert!(
            (x / want - 1.0).abs() < 0.03,
            "step {k}: ratio {x:.4}, want {want} (all: {r:?})"
        );
    }
}

fn small(tp: u32, steps: u32) -> SynthOptions {
    SynthOptions {
        tp,
        steps,
        layers: 2,
        ..SynthOptions::default()
    }
}

fn write(cfg: &SynthOptions) -> (tempfile::TempDir, Vec<Written>) {
    let dir = tempfile::tempdir().unwrap();
    let w = write_set(cfg, dir.path()).unwrap();
    (dir, w)
}

fn bytes_by_name(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let p = e.unwrap().path();
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                fs::read(&p).unwrap(),
            )
        })
        .collect()
}

#[test]
fn same_seed_same_bytes_other_seed_other_bytes() {
    let cfg = SynthOptions {
        dp: 2,
        ..small(2, 3)
    };
    let (a, _) = write(&cfg);
    let (b, _) = write(&cfg);
    let (c, _) = write(&SynthOptions {
        seed: 2,
        ..cfg.clone()
    });
    let (a, b, c) = (
        bytes_by_name(a.path()),
        bytes_by_name(b.path()),
        bytes_by_name(c.path()),
    );
    assert_eq!(a.len(), 4);
    assert_eq!(a, b);
    assert_eq!(a.keys().collect::<Vec<_>>(), c.keys().collect::<Vec<_>>());
    for (name, bytes) in &a {
        assert_ne!(bytes, &c[name], "{name} did not change with the seed");
    }
}

#[test]
fn planted_gemm_slowdown_shows_from_its_step_and_not_before() {
    let skew = 1_234_567;
    let cfg = SynthOptions {
        base_skew_ns: skew,
        slow: Some(Slow {
            rank: 2,
            factor: 1.3,
            from_step: 4,
            class: Some(Class::Gemm),
        }),
        ..small(4, 10)
    };
    let (dir, written) = write(&cfg);
    let v = check(dir.path());
    assert_sound(&v);
    assert_eq!(files(&v).len(), 4);
    for f in files(&v) {
        let r = global(f, 4, 1);
        let keys: Vec<&str> = f["top_keys"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| k.as_str().unwrap())
            .collect();
        let at = |k: &str| {
            keys.iter()
                .position(|x| *x == k)
                .unwrap_or_else(|| panic!("no {k}"))
        };
        assert_eq!(at("schemaVersion"), 0);
        assert!(at("deviceProperties") < at("traceEvents"));
        assert!(at("distributedInfo") < at("traceEvents"));
        assert!(at("traceEvents") < at("traceName"));
        assert!(at("traceName") < at("displayTimeUnit"));
        assert!(at("displayTimeUnit") < at("baseTimeNanoseconds"));
        assert_eq!(int(&f["base_time_ns"]), DEFAULT_BASE_NS + r * skew);
        assert_eq!(int(&f["dist_rank"]), r);
        assert_eq!(int(&f["world_size"]), 4);
        assert_eq!(f["steps"].as_array().unwrap().len(), 10);
        assert_eq!(int(&f["events"]) as u64, written[r as usize].events);
    }
    // Two all-reduces per layer and step, in one TP group.
    assert_eq!(int(&v["collectives"]["total"]), 10 * 2 * 2);
    assert_planted(&ratios(&v, &[Class::Gemm], 2, 4, 1), 1.3, 4);
    assert_planted(&ratios(&v, &[Class::Attention], 2, 4, 1), 1.0, 0);
    // The others wait for rank 2 inside their NCCL kernels.
    let comm = ratios(&v, &[Class::Comm], 2, 4, 1);
    assert!(
        comm[4..].iter().all(|&x| x < 0.8),
        "rank 2 should wait least: {comm:?}"
    );
}

#[test]
fn every_file_reads_back_whole_with_the_crate_reader() {
    for plain in [false, true] {
        let cfg = SynthOptions {
            plain,
            base_skew_ns: -777,
            slow: Some(Slow {
                rank: 0,
                factor: 2.0,
                from_step: 1,
                class: None,
            }),
            ..small(2, 4)
        };
        let (dir, written) = write(&cfg);
        let v = check(dir.path());
        assert_sound(&v);
        let by_name: BTreeMap<String, &Value> = files(&v)
            .iter()
            .map(|f| (f["name"].as_str().unwrap().to_string(), f))
            .collect();
        for w in &written {
            let name = w.path.file_name().unwrap().to_str().unwrap();
            assert_eq!(name.ends_with(".gz"), !plain, "{name}");
            let py = by_name[name];
            let report = read_trace(&w.path, |_| {}).unwrap();
            assert!(!report.is_damaged(), "{report:?}");
            assert_eq!(report.events, int(&py["events"]) as u64, "{name}");
            assert_eq!(report.events, w.events);
            assert_eq!(report.bytes, w.json_bytes, "{name}: uncompressed size");
            assert_eq!(report.gzip, !plain);
            assert_eq!(report.header.base_time_ns, Some(int(&py["base_time_ns"])));
            assert_eq!(
                report.header.distributed_rank(),
                Some(int(&py["dist_rank"]))
            );
            assert_eq!(report.header.device_names().len(), 8);
        }
        assert_planted(
            &ratios(&v, &[Class::Gemm, Class::Attention, Class::Norm], 0, 2, 1),
            2.0,
            1,
        );
    }
}

#[test]
fn pipeline_moe_and_dp_layout() {
    let cfg = SynthOptions {
        tp: 2,
        dp: 2,
        pp: 2,
        ep: 2,
        layers: 4,
        steps: 5,
        slow: Some(Slow {
            rank: 5,
            factor: 1.5,
            from_step: 0,
            class: None,
        }),
        ..SynthOptions::default()
    };
    let (dir, _) = write(&cfg);
    let v = check(dir.path());
    assert_sound(&v);
    let fs = files(&v);
    assert_eq!(fs.len(), 8);
    for f in fs {
        let id = &f["identity"];
        // EP splits the TP group: with EP = TP = 2 the EP rank is the TP rank.
        assert_eq!(id["ep"], id["tp"]);
        // Each DP replica is its own world: the rank inside it repeats across replicas.
        assert_eq!(int(&f["dist_rank"]), int(&id["pp"]) * 2 + int(&id["tp"]));
        assert_eq!(int(&f["world_size"]), 4);
        assert!(
            int(&f["step_class_ns"]["moe"][0]) > 0,
            "MoE kernels with EP > 1"
        );
    }
    // Per replica: 2 stages × 5 steps × 2 layers × 2 all-reduces, plus 2 send/recv pairs × 5 steps.
    assert_eq!(int(&v["collectives"]["total"]), 2 * (2 * 5 * 2 * 2 + 2 * 5));
    let compute = [
        Class::Gemm,
        Class::Attention,
        Class::Norm,
        Class::Elementwise,
        Class::Moe,
    ];
    assert_planted(&ratios(&v, &compute, 5, 2, 2), 1.5, 0);
    assert_planted(&ratios(&v, &[Class::Memory], 5, 2, 2), 1.0, 0);
}

#[test]
fn vllm_names_base_first_and_discovery() {
    let cfg = SynthOptions {
        naming: Vendor::Vllm,
        dp: 2,
        base_first: true,
        plain: true,
        instance: Some("inst".into()),
        ..small(2, 3)
    };
    let (dir, written) = write(&cfg);
    let v = check(dir.path());
    assert_sound(&v);
    for f in files(&v) {
        assert_eq!(f["identity"]["naming"], "vllm", "{}", f["name"]);
        assert!(f["name"].as_str().unwrap().starts_with("inst_dp"));
        assert_eq!(int(&f["identity"]["rank"]), global(f, 2, 1));
        let keys: Vec<&str> = f["top_keys"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| k.as_str().unwrap())
            .collect();
        assert_eq!(
            keys,
            [
                "schemaVersion",
                "deviceProperties",
                "distributedInfo",
                "displayTimeUnit",
                "baseTimeNanoseconds",
                "traceEvents",
                "traceName"
            ]
        );
    }
    let found = discover(dir.path(), false).unwrap();
    assert_eq!(found.groups.len(), 1, "{:?}", found.notes);
    let g = &found.groups[0];
    assert_eq!(g.files.len(), 4);
    for f in &g.files {
        let w = written.iter().find(|w| w.path == f.path).unwrap();
        assert_eq!(f.id.rank, Some(w.rank));
    }
}

#[test]
fn by_stage_writes_an_extend_and_a_decode_file_per_rank() {
    let cfg = SynthOptions {
        by_stage: true,
        profile_id: "1790857300.25".into(),
        ..small(2, 3)
    };
    let (dir, written) = write(&cfg);
    assert_eq!(written.len(), 4);
    let v = check(dir.path());
    assert_sound(&v);
    for f in files(&v) {
        let stage = f["identity"]["stage"].as_str().unwrap();
        let kinds = f["step_kinds"].as_array().unwrap();
        assert_eq!(kinds.len(), 3);
        assert!(kinds.iter().all(|k| k == stage), "{stage}: {kinds:?}");
    }
    let mut found = discover(dir.path(), false).unwrap();
    assert_eq!(found.groups.len(), 2);
    found.select(None, Some("DECODE"));
    assert_eq!(found.groups.len(), 1);
    assert_eq!(found.groups[0].files.len(), 2);
}

#[test]
fn target_size_adds_steps_until_each_file_is_big_enough() {
    let target = 600_000;
    let cfg = SynthOptions {
        target_bytes: Some(target),
        layers: 1,
        ..small(2, 1)
    };
    let (dir, written) = write(&cfg);
    let v = check(dir.path());
    for w in &written {
        assert!(w.json_bytes >= target, "{} < {target}", w.json_bytes);
        assert!(
            w.json_bytes < target + target / 10,
            "{} overshoots {target}",
            w.json_bytes
        );
        assert!(w.steps > 1);
    }
    for f in files(&v) {
        assert_eq!(
            f["steps"].as_array().unwrap().len() as u32,
            written[0].steps
        );
    }
}

#[test]
fn bad_layouts_are_refused() {
    let err = |cfg: SynthOptions| {
        write_set(&cfg, Path::new("/nonexistent/never"))
            .unwrap_err()
            .to_string()
    };
    assert!(err(SynthOptions {
        tp: 4,
        ep: 3,
        ..SynthOptions::default()
    })
    .contains("--ep 3"));
    assert!(err(SynthOptions {
        pp: 4,
        layers: 2,
        ..SynthOptions::default()
    })
    .contains("--layers"));
    let slow = Some(Slow {
        rank: 9,
        factor: 1.2,
        from_step: 0,
        class: None,
    });
    assert!(err(SynthOptions {
        tp: 4,
        slow,
        ..SynthOptions::default()
    })
    .contains("--slow-rank 9"));
    let slow = Some(Slow {
        rank: 0,
        factor: f64::NAN,
        from_step: 0,
        class: None,
    });
    assert!(err(SynthOptions {
        slow,
        ..SynthOptions::default()
    })
    .contains("--factor"));
    let vllm = SynthOptions {
        naming: Vendor::Vllm,
        by_stage: true,
        ..SynthOptions::default()
    };
    assert!(err(vllm).contains("--by-stage"));
    let huge = SynthOptions {
        base_ns: i64::MAX - 5,
        ..SynthOptions::default()
    };
    assert!(err(huge).contains("--base-time-ns"));
    assert!(err(SynthOptions {
        tp: 64,
        dp: 32,
        ..SynthOptions::default()
    })
    .contains("2048 ranks"));
}

#[test]
fn the_command_writes_and_lists_the_set() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_rankprof"))
        .args([
            "synth",
            "--tp",
            "2",
            "--steps",
            "2",
            "--layers",
            "1",
            "--profile-id",
            "p1",
            "-o",
        ])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut names: Vec<String> = bytes_by_name(dir.path()).into_keys().collect();
    names.sort();
    assert_eq!(names, ["p1-TP-0.trace.json.gz", "p1-TP-1.trace.json.gz"]);
    let listing = String::from_utf8_lossy(&out.stdout);
    assert_eq!(listing.lines().count(), 2, "{listing}");
    let bad = Command::new(env!("CARGO_BIN_EXE_rankprof"))
        .args(["synth", "--tp", "2", "--slow-class", "tensor", "-o"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--slow-class tensor"));
}

/// The committed fixtures hold what fixtures/README.md says was planted.
#[test]
fn committed_fixtures_hold_what_the_readme_says() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    let compute = [
        Class::Gemm,
        Class::Attention,
        Class::Norm,
        Class::Elementwise,
        Class::Moe,
    ];
    // (dir, tp, pp, files, slow rank, classes, factor, from step)
    type Row<'a> = (&'a str, i64, i64, usize, i64, &'a [Class], f64, usize);
    let table: &[Row] = &[
        ("sglang-tp4", 4, 1, 4, 2, &[Class::Gemm], 1.3, 5),
        ("sglang-tp2dp2", 2, 1, 4, 3, &[Class::Attention], 1.5, 3),
        ("vllm-tp2", 2, 1, 2, 1, &compute, 1.25, 4),
        ("sglang-bystage-tp2", 2, 1, 4, 1, &compute, 1.0, 0),
        ("sglang-tp2pp2ep2", 2, 2, 4, 1, &[Class::Moe], 1.4, 2),
    ];
    for &(dir, tp, pp, n, slow, classes, factor, from) in table {
        let path = root.join(dir);
        let v = check(&path);
        assert_sound(&v);
        assert_eq!(files(&v).len(), n, "{dir}");
        if dir == "sglang-bystage-tp2" {
            // Balanced; the two stages are separate profiles: check each on its own.
            for stage in ["EXTEND", "DECODE"] {
                let one: Vec<Value> = files(&v)
                    .iter()
                    .filter(|f| f["identity"]["stage"] == stage)
                    .cloned()
                    .collect();
                let sub = serde_json::json!({ "files": one });
                assert_planted(&ratios(&sub, classes, slow, tp, pp), 1.0, 0);
            }
            continue;
        }
        assert_planted(&ratios(&v, classes, slow, tp, pp), factor, from);
        for f in files(&v) {
            let report = read_trace(&path.join(f["name"].as_str().unwrap()), |_| {}).unwrap();
            assert!(!report.is_damaged());
            assert_eq!(report.events, int(&f["events"]) as u64);
        }
    }
}
