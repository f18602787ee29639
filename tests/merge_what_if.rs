//! `merge --what-if` (#51): beside each rank, the what-if's ideal timeline (every rank typical),
//! checked against what was planted and against an independent control.
//!
//! A synth TP4 plant (`rankprof synth --tp 4 --steps 4 --slow-rank 2 --factor 1.5`: rank 2's
//! kernels 1.5× slower) and its control (the same run with no slow rank) are merged with
//! `--what-if`, and each merged JSON is read back. Per step (ProfilerStep#k, the step table's
//! row k):
//! - every rank has its "what if (every rank typical)" process holding the ideal step and,
//!   inside it, the step's 8 all-reduces;
//! - the ideal step starts on the merged timeline where the recorded step's collectives begin
//!   their segments (the first step: the earliest rank's ProfilerStep start; a later one: the
//!   earliest end of the previous step's last NCCL kernel), to the µs: it lines up with the
//!   real events;
//! - on the plant it is shorter than the plant's recorded step, and within 10 % of the
//!   control's recorded step (its longest rank's ProfilerStep): what the run takes with no
//!   rank slow, a figure the model never sees;
//! - on the control (nobody slow) it is within 2 % of the recorded span of its collectives
//!   (from that start to the latest end of the step's last NCCL kernel, read off the merged
//!   events).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

const TRACK: &str = "what if (every rank typical)";
const RANKS: [&str; 4] = ["[TP00]", "[TP01]", "[TP02]", "[TP03]"];

fn rankprof(args: &[&str], dir: &Path) -> String {
    let o = Command::new(env!("CARGO_BIN_EXE_rankprof"))
        .args(args)
        .arg(dir)
        .output()
        .expect("runs");
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert!(o.status.success(), "{args:?}: {err}");
    err + &String::from_utf8_lossy(&o.stdout)
}

/// Writes the TP4 set (`slow`: rank 2 1.5× slower) and merges it with `--what-if`: the merged
/// JSON and what the merge said.
fn merged(tmp: &Path, name: &str, slow: bool) -> (Value, String) {
    let dir = tmp.join(name);
    let mut synth = vec!["synth", "--tp", "4", "--steps", "4"];
    if slow {
        synth.extend(["--slow-rank", "2", "--factor", "1.5"]);
    }
    synth.push("-o");
    rankprof(&synth, &dir);
    let out = tmp.join(format!("{name}.trace.json.gz"));
    let said = rankprof(
        &[
            "merge",
            "--what-if",
            "-o",
            out.to_str().expect("UTF-8"),
            "--profile-dir",
        ],
        &dir,
    );
    let bytes = std::fs::read(&out).expect("merged");
    let mut text = String::new();
    std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(&bytes[..]), &mut text)
        .expect("gzip");
    (serde_json::from_str(&text).expect("JSON"), said)
}

/// An `X` event: (rank label, name, start µs, duration µs).
type X = (String, String, f64, f64);

fn slices<'a>(v: &'a Value, on: impl Fn(&str) -> bool + 'a) -> impl Iterator<Item = X> + 'a {
    v["traceEvents"]
        .as_array()
        .expect("events")
        .iter()
        .filter(|e| e["ph"] == "X")
        .filter_map(move |e| {
            let pid = e["pid"].as_str()?;
            let label = &pid[..pid.find(']')? + 1];
            on(pid).then(|| {
                (
                    label.to_string(),
                    e["name"].as_str().unwrap_or("").to_string(),
                    e["ts"].as_f64().unwrap_or(0.0),
                    e["dur"].as_f64().unwrap_or(0.0),
                )
            })
        })
}

/// What the merged trace records per step k, read off the ranks' own events: the longest
/// rank's ProfilerStep#k, where the step's collectives begin their segments (the earliest
/// ProfilerStep#0 start; later, the earliest end of the previous step's last NCCL kernel), and
/// the latest end of its last NCCL kernel (µs).
struct Recorded {
    step: Vec<f64>,
    start: Vec<f64>,
    end: Vec<f64>,
}

fn recorded(v: &Value) -> Recorded {
    let own = |pid: &str| !pid.contains(TRACK);
    let mut steps: BTreeMap<(String, usize), (f64, f64)> = BTreeMap::new();
    for (rank, name, ts, dur) in slices(v, own) {
        if let Some(k) = name.strip_prefix("ProfilerStep#") {
            steps.insert((rank, k.parse().expect("step number")), (ts, ts + dur));
        }
    }
    let kernels: Vec<X> = slices(v, own)
        .filter(|x| x.1.starts_with("ncclDevKernel"))
        .collect();
    let n = steps.keys().map(|k| k.1 + 1).max().unwrap_or(0);
    // Per step, per rank: the end of its last NCCL kernel that starts inside its step.
    let last_end = |k: usize, rank: &str| {
        let (a, b) = steps[&(rank.to_string(), k)];
        kernels
            .iter()
            .filter(|x| x.0 == rank && x.2 >= a && x.2 < b)
            .map(|x| x.2 + x.3)
            .fold(f64::MIN, f64::max)
    };
    let over = |f: &dyn Fn(&str) -> f64, max: bool| {
        let it = RANKS.iter().map(|r| f(r));
        if max {
            it.fold(f64::MIN, f64::max)
        } else {
            it.fold(f64::MAX, f64::min)
        }
    };
    let mut r = Recorded {
        step: Vec::new(),
        start: Vec::new(),
        end: Vec::new(),
    };
    for k in 0..n {
        let at = |rank: &str| steps[&(rank.to_string(), k)];
        r.step.push(over(&|x| at(x).1 - at(x).0, true));
        r.start.push(if k == 0 {
            over(&|x| at(x).0, false)
        } else {
            over(&|x| last_end(k - 1, x), false)
        });
        r.end.push(over(&|x| last_end(k, x), true));
    }
    r
}

/// Per rank, its ideal steps in order: (start µs, duration µs, the collectives inside it).
fn ideal(v: &Value) -> BTreeMap<String, Vec<(f64, f64, usize)>> {
    let all: Vec<X> = slices(v, |pid| pid.ends_with(TRACK)).collect();
    let mut out: BTreeMap<String, Vec<(f64, f64, usize)>> = BTreeMap::new();
    for (rank, name, ts, dur) in all.iter().filter(|x| x.1.starts_with("step ")) {
        assert!(
            name.contains(" ideal: ") && name.contains("(recorded "),
            "{name}"
        );
        let inside = all
            .iter()
            .filter(|x| x.0 == *rank && x.1 == "allreduce")
            .filter(|x| x.2 >= ts - 1e-3 && x.2 + x.3 <= ts + dur + 1e-3)
            .count();
        out.entry(rank.clone())
            .or_default()
            .push((*ts, *dur, inside));
    }
    for v in out.values_mut() {
        v.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    out
}

#[test]
fn the_ideal_track_is_the_plant_without_its_slow_rank() {
    let tmp = tempfile::tempdir().expect("tmp");
    let (plant, said) = merged(tmp.path(), "plant", true);
    let (control, _) = merged(tmp.path(), "control", false);
    assert!(
        said.contains(&format!("slices on the ranks' \"{TRACK}\" tracks")),
        "{said}"
    );
    let (rec_plant, rec_control) = (recorded(&plant), recorded(&control));
    assert_eq!(rec_plant.step.len(), 4);
    for (v, rec, name) in [
        (&plant, &rec_plant, "plant"),
        (&control, &rec_control, "control"),
    ] {
        let by_rank = ideal(v);
        assert_eq!(by_rank.keys().cloned().collect::<Vec<_>>(), RANKS, "{name}");
        for (rank, steps) in &by_rank {
            assert_eq!(steps.len(), 4, "{name} {rank}: {steps:?}");
            for (k, &(ts, dur, inside)) in steps.iter().enumerate() {
                assert_eq!(
                    inside, 8,
                    "{name} {rank} step {k}: its all-reduces inside it"
                );
                assert!(
                    (ts - rec.start[k]).abs() < 1e-3,
                    "{name} {rank} step {k}: starts at {ts}, recorded {}",
                    rec.start[k]
                );
                assert!(dur > 0.0);
            }
        }
    }
    let at = |v: &Value, k: usize| ideal(v)["[TP00]"][k].1;
    for k in 0..4 {
        let (ideal_ms, plant_ms) = (at(&plant, k) / 1e3, rec_plant.step[k] / 1e3);
        let control_ms = rec_control.step[k] / 1e3;
        let off = (ideal_ms - control_ms) / control_ms;
        eprintln!(
            "step {k}: plant ideal {ideal_ms:.3} ms, plant recorded {plant_ms:.3} ms, control recorded {control_ms:.3} ms ({:+.1} %)",
            100.0 * off
        );
        assert!(ideal_ms < plant_ms, "step {k}: {ideal_ms} ≥ {plant_ms}");
        assert!(
            off.abs() <= 0.10,
            "step {k}: {ideal_ms} vs the control's {control_ms}"
        );
        let span = rec_control.end[k] - rec_control.start[k];
        let (c_ideal, c_off) = (at(&control, k), (at(&control, k) - span) / span);
        eprintln!(
            "step {k}: control ideal {:.3} ms, its recorded span {:.3} ms ({:+.1} %)",
            c_ideal / 1e3,
            span / 1e3,
            100.0 * c_off
        );
        assert!(c_off.abs() <= 0.02, "control step {k}: {c_ideal} vs {span}");
    }
}
