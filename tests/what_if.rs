//! What if: the step time a rank would give back if it were typical, re-simulated at the
//! collectives (`analyze::reduce::path::whatif`), against figures computed without the model.
//!
//! - A plant with two late ranks in one TP group: the one that arrives last less often, and
//!   by less, would give back little alone (the other is still late), though the local
//!   charge gives it all of its lateness. Truth: `tests/truth_arrivals.py --what-if`, from the
//!   NCCL kernels' start times alone (no segments, splits or ties).
//!   Where the two disagree on which rank costs more, the verdict leads with the one that
//!   gives back the most.
//! - A real recording (`fixtures/real-gloo/tp4-host-sleep`, torch profiler, 4 processes over
//!   gloo): the rank that sleeps 40 ms on the host before one collective a step gives back
//!   about the sleep, per the plant's own measurement (`plant.json`).

mod common;

use std::path::Path;

use common::attrib::{slow, synth};
use common::{have_python, manifest, python};
use rankprof::analyze::{Analysis, AnalyzeOptions};
use rankprof::synth::{Extra, SynthOptions};

fn within(x: f64, truth: f64, rel: f64, abs: f64) -> bool {
    (x - truth).abs() <= (rel * truth.abs()).max(abs)
}

fn saved_ms(a: &Analysis, who: &str) -> f64 {
    a.path.what_if.saved_by(who).as_ms()
}

/// The plant with two late ranks in one TP4 group: TP03 launches `per_layer` extra kernels
/// per layer, TP01 runs 1.6× slower; analyzed.
fn two_late_ranks(per_layer: u32) -> (tempfile::TempDir, Analysis) {
    let t = tempfile::tempdir().unwrap();
    let files = synth(
        t.path(),
        SynthOptions {
            tp: 4,
            extra: Some(Extra { rank: 3, per_layer }),
            slow: slow(1, 1.6, 0),
            ..Default::default()
        },
    );
    let a = common::analyze_files(&files, |_| {});
    (t, a)
}

#[test]
fn fixing_one_of_two_late_ranks_gives_back_only_its_lead() {
    if !have_python("what-if plant") {
        return;
    }
    let (t, a) = two_late_ranks(8);
    let local = python("truth_arrivals.py", &[t.path()], &["8"]);
    let what_if = python("truth_arrivals.py", &[t.path()], &["8", "--what-if"]);
    let truth = |v: &serde_json::Value, who: &str| v[who].as_f64().unwrap_or(0.0);
    for who in ["TP01", "TP03"] {
        let x = saved_ms(&a, who);
        assert!(
            within(x, truth(&what_if, who), 0.10, 0.01),
            "{who}: {x} ms vs {what_if} (local {local}); {:#?}",
            a.path.what_if
        );
    }
    // The two methods differ here, and the plant says which way: both ranks are late, so
    // the smaller culprit given back alone leaves the larger one last.
    let smaller = if truth(&local, "TP01") < truth(&local, "TP03") {
        "TP01"
    } else {
        "TP03"
    };
    assert!(
        saved_ms(&a, smaller) < 0.5 * a.path.rank_per_step(smaller) / 1e6,
        "{smaller}: {:#?} vs local {:#?}",
        a.path.what_if,
        a.path.causes
    );
    assert!(a.path.what_if.trusted(), "{:#?}", a.path.what_if);
    assert!(a.path.what_if.slowdown > 1.0);

    // Both made typical together give back more than either alone: the same two ranks, and
    // what they give back per the kernels' start times alone.
    let both = python("truth_arrivals.py", &[t.path()], &["8", "--worst", "2"]);
    let w = &a.path.what_if;
    let two = w
        .worst
        .iter()
        .find(|x| x.k == 2)
        .unwrap_or_else(|| panic!("{w:#?}"));
    let want: Vec<&str> = both["ranks"]
        .as_array()
        .expect("ranks")
        .iter()
        .filter_map(|v| v.as_str())
        .collect();
    assert_eq!(two.ranks().collect::<Vec<_>>(), want, "{w:#?}");
    let truth_ms = both["ms"].as_f64().expect("ms");
    assert!(
        within(two.saved.as_ms(), truth_ms, 0.10, 0.01),
        "worst 2: {} ms vs {truth_ms} ms",
        two.saved.as_ms()
    );
    assert!(two.saved > w.worst[0].saved, "{w:#?}");
    assert!(two.lost_pct > 0.0 && two.lost_pct <= 100.0 + 1e-9, "{w:#?}");
}

/// Two late ranks where the local charge and the re-simulation disagree on which costs more
/// (the plant is chosen so, and the test checks that the independent figures disagree): the
/// verdict leads with the rank that gives back the most when made typical, and the other,
/// charged more, follows with what it gives back alone.
#[test]
fn the_verdict_leads_with_what_fixing_a_rank_gives_back() {
    if !have_python("what-if verdict") {
        return;
    }
    let (t, a) = two_late_ranks(12);
    let local = python("truth_arrivals.py", &[t.path()], &["8"]);
    let what_if = python("truth_arrivals.py", &[t.path()], &["8", "--what-if"]);
    let ms = |v: &serde_json::Value, who: &str| v[who].as_f64().unwrap_or(0.0);
    let top = |v: &serde_json::Value| {
        if ms(v, "TP01") > ms(v, "TP03") {
            "TP01"
        } else {
            "TP03"
        }
    };
    let (lead, other) = (top(&what_if), top(&local));
    assert_ne!(
        lead, other,
        "the plant no longer separates the two: {local} vs {what_if}"
    );
    let v = &a.verdict;
    assert!(a.path.what_if.trusted(), "{:#?}", a.path.what_if);
    assert_eq!(v.lead.as_deref(), Some(lead), "{:#?}", v.lines);
    assert!(v.lines[0].contains(lead), "{:#?}", v.lines);
    let also = v
        .lines
        .iter()
        .find(|l| l.starts_with("Also") && l.contains(other))
        .unwrap_or_else(|| panic!("{:#?}", v.lines));
    let alone = saved_ms(&a, other);
    assert!(
        within(alone, ms(&what_if, other), 0.10, 0.01),
        "{other} alone: {alone} ms vs {what_if}"
    );
    assert!(
        also.contains(&format!("alone it gives back {alone:.2} ms")),
        "{also}"
    );
}

#[test]
fn a_real_host_sleep_gives_back_the_sleep() {
    let dir = manifest("fixtures/real-gloo/tp4-host-sleep");
    let plant: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("plant.json")).expect("plant.json"))
            .expect("plant.json is JSON");
    let planted: Vec<f64> = plant["per_step_planted_ms"]
        .as_array()
        .expect("per-step sleeps")
        .iter()
        .filter_map(|x| x.as_f64())
        .collect();
    let sleep = planted.iter().sum::<f64>() / planted.len() as f64;
    let a = analyze(&dir);
    let w = &a.path.what_if;
    assert!(w.trusted(), "model error {} %: {w:#?}", w.error_pct);
    let x = saved_ms(&a, "RANK01");
    assert!(
        within(x, sleep, 0.10, 0.0),
        "RANK01 gives back {x} ms, planted {sleep} ms"
    );
    assert_eq!(
        w.ranks.first().map(|r| r.who.as_str()),
        Some("RANK01"),
        "{w:#?}"
    );
    // And in the report: the terminal and markdown from the one table, the JSON in full.
    let text = rankprof::report::terminal::render(&a);
    assert!(text.contains("What if: step time given back"), "{text}");
    assert!(rankprof::report::formats::markdown(&a).contains("RANK01 typical"));
    let json: serde_json::Value =
        serde_json::from_str(&rankprof::report::formats::json(&a).expect("json")).expect("JSON");
    assert_eq!(
        json["path"]["what_if"]["ranks"][0]["who"], "RANK01",
        "{json:#}"
    );
}

fn analyze(dir: &Path) -> Analysis {
    let opts = AnalyzeOptions {
        profile_dir: Some(dir.to_path_buf()),
        ..Default::default()
    };
    rankprof::analyze::analyze(&opts).unwrap_or_else(|e| panic!("{}: {e:#}", dir.display()))
}

/// The real 8-rank NCCL DDP step (8× V100): RANK07 starts the step last, but ranks 2 and 6
/// start late too, so making RANK07 typical alone gives back only its lead over the next
/// arrival at each collective. Truth: `tests/truth_dlrm.py --overlap`'s `by_last_rank`, two
/// figures per rank from the kernels' tables: `alone` (last start − second-latest start per
/// collective, as if every collective were blocking) and the part of it `alone_hidden` (what
/// no compute waited for: the collective's end held nothing up, read from the launches). The
/// what-if lies between the two: at least what compute waited for, at most all of it (RANK05:
/// 0 and 0.101 ms; RANK07: 1.014 and 1.309).
#[test]
fn dlrm_fixing_rank_7_alone_gives_back_its_lead() {
    if !have_python("dlrm what-if") {
        return;
    }
    let dir = common::shared("param-dlrm-v100x8");
    let truth = python("truth_dlrm.py", &[&dir], &["--json", "--overlap"]);
    let by_rank = truth["by_last_rank"].as_object().expect("by_last_rank");
    let a = analyze(&dir);
    assert!(a.path.what_if.trusted(), "{:#?}", a.path.what_if);
    for (rank, t) in by_rank {
        let who = format!("RANK{:02}", rank.parse::<u32>().unwrap_or(99));
        let us = |k: &str| t[k].as_f64().unwrap_or_else(|| panic!("{k}: {t}"));
        let (most, least) = (us("alone") / 1e3, (us("alone") - us("alone_hidden")) / 1e3);
        let x = saved_ms(&a, &who);
        assert!(
            x >= least - (0.10 * least).max(0.02) && x <= most + (0.10 * most).max(0.02),
            "{who}: {x} ms, the raw events {least} to {most} ms alone"
        );
    }
    // The verdict says it below its first line.
    let line = a
        .verdict
        .lines
        .iter()
        .find(|l| l.starts_with("What if: making RANK07 typical gives back"))
        .unwrap_or_else(|| panic!("{:#?}", a.verdict.lines));
    assert!(line.contains("other ranks arrive late"), "{line}");
}

/// The cost a first line states: "… costs every step 14.92 ms …", in ms.
fn first_line_cost(line: &str) -> f64 {
    line.split_once("costs every step ")
        .and_then(|(_, r)| r.split_whitespace().next())
        .and_then(|x| x.parse().ok())
        .unwrap_or_else(|| panic!("no cost: {line}"))
}

/// The cost the first line states is within `rel` of the truth: how much later, per step, the
/// plant's last step ends than the control's (`what`: which plant, for the message).
fn assert_first_line_near(line: &str, truth_ms: f64, rel: f64, what: &str) {
    let ms = first_line_cost(line);
    assert!(
        within(ms, truth_ms, rel, 0.0),
        "{what}the first line says {ms:.2} ms a step; the plant's last step ends {truth_ms:.3} ms a step later than the control's"
    );
}

/// The latest `ProfilerStep#N` end over the rank files of `dir`, µs, read from the raw events.
fn last_step_end_us(dir: &Path) -> f64 {
    let mut last = 0.0f64;
    for f in common::attrib::files_in(dir) {
        let mut text = String::new();
        std::io::Read::read_to_string(
            &mut flate2::read::GzDecoder::new(std::fs::File::open(&f).unwrap()),
            &mut text,
        )
        .unwrap();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        for e in v["traceEvents"].as_array().into_iter().flatten() {
            let step = e["name"]
                .as_str()
                .is_some_and(|n| n.starts_with("ProfilerStep#"));
            if let (true, Some(ts), Some(dur)) = (step, e["ts"].as_f64(), e["dur"].as_f64()) {
                last = last.max(ts + dur);
            }
        }
    }
    last
}

/// A serving pipeline (`synth --pp 4`, SGLang's: each stage takes the next batch while the
/// later stages finish the one before), stage 2 at 2× its kernel time. Its stages do not run
/// their steps in lockstep, so the replay of one step's span through the stages is no measure
/// of what the stage costs (it gives about 0.36 ms a step here): the first line keeps the
/// local charge. Truth from the raw events, plant against control: how much later the last
/// step ends, per step.
#[test]
fn a_serving_pipeline_keeps_the_local_charge() {
    let t = tempfile::tempdir().unwrap();
    let set = |name: &str, slow_rank: Option<rankprof::synth::Slow>| {
        let dir = t.path().join(name);
        std::fs::create_dir_all(&dir).unwrap();
        let cfg = SynthOptions {
            tp: 1,
            pp: 4,
            steps: 8,
            layers: 4,
            slow: slow_rank,
            ..Default::default()
        };
        rankprof::synth::write_set(&cfg, &dir).expect("synth");
        dir
    };
    let plant = set("plant", slow(2, 2.0, 0));
    let control = set("control", None);
    let truth_ms = (last_step_end_us(&plant) - last_step_end_us(&control)) / 8.0 / 1e3;
    let a = common::analyze_files(&common::attrib::files_in(&plant), |_| {});
    assert!(
        !a.path.what_if.stages.is_empty(),
        "the stages' bubbles are reported"
    );
    let line = common::attrib::first(&a);
    assert!(
        line.contains("TP00-PP02") && !line.contains("re-simulated on the pipeline"),
        "{:#?}",
        a.verdict.lines
    );
    assert_first_line_near(line, truth_ms, 0.25, "");
}

/// A training pipeline (`synth --pp 4 --microbatches 8`: Megatron's 1F1B, blocking sends and
/// receives, a gradient-norm all-reduce ending each step), stage 2's kernels at 2× their time.
/// Truth from the raw events by `tests/truth_nccl.py`, which pairs the n-th send from s to d
/// with the n-th receive at d from s and reads nothing of rankprof's: the plant's step time
/// over the control's (the same seed, nothing planted), and each stage's wait at the
/// transfers (its bubble). The first line names the stage and the cause the plant planted
/// (the same micro-batches in twice the time: a slower device, not more load: a middle
/// stage sends and receives twice an end stage's elements, which is no measure of its work),
/// with what fixing it gives back, within 10 %; each stage's recorded bubble equals the raw
/// events'. With every rank typical the bubbles add up to the control's within 10 %; stage by
/// stage they need not match it, for the control holds an imbalance the ideal removes (the
/// last stage's LM head: 23 % more kernel time than the others).
#[test]
fn a_training_pipeline_names_the_slow_stage_and_its_bubble() {
    if !have_python("1F1B pipeline truth") {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let set = |name: &str, slow_rank: Option<rankprof::synth::Slow>| {
        let dir = t.path().join(name);
        let cfg = SynthOptions {
            tp: 1,
            pp: 4,
            steps: 4,
            layers: 4,
            microbatches: 8,
            slow: slow_rank,
            ..Default::default()
        };
        rankprof::synth::write_set(&cfg, &dir).expect("synth");
        dir
    };
    let plant = set("plant", slow(2, 2.0, 0));
    let control = set("control", None);
    let truth = python(
        "truth_nccl.py",
        &[&plant],
        &["--control", control.to_str().unwrap(), "--brief"],
    );
    let truth_control = python("truth_nccl.py", &[&control], &["--brief"]);
    let over_control = truth["step_ms_over_control"]
        .as_f64()
        .expect("step_ms_over_control");
    assert!(over_control > 5.0, "the plant costs the step: {truth}");

    let a = analyze(&plant);
    let line = common::attrib::first(&a);
    assert!(
        line.contains("slower device or host: TP00-PP02 costs every step")
            && line.contains("re-simulated on the pipeline"),
        "{:#?}",
        a.verdict.lines
    );
    let ms = first_line_cost(line);
    assert!(
        within(ms, over_control, 0.10, 0.0),
        "the first line says {ms:.2} ms a step; the plant's steps are {over_control:.2} ms longer than the control's"
    );

    let stages = &a.path.what_if.stages;
    assert_eq!(stages.len(), 4, "{stages:#?}");
    let mut ideal_total = 0.0;
    let mut control_total = 0.0;
    for s in stages {
        let p = s.who.trim_start_matches("TP00-PP");
        let rank: u32 = p.parse().unwrap_or_else(|_| panic!("{}", s.who));
        let raw = truth["mean_wait_ms"][rank.to_string()]
            .as_f64()
            .expect("mean_wait_ms");
        let bubble = s.bubble.as_ms();
        assert!(
            within(bubble, raw, 0.01, 0.05),
            "{}: bubble {bubble:.3} ms a step, the raw events {raw:.3}",
            s.who
        );
        ideal_total += s.ideal_bubble.as_ms();
        control_total += truth_control["mean_wait_ms"][rank.to_string()]
            .as_f64()
            .expect("control mean_wait_ms");
    }
    assert!(
        within(ideal_total, control_total, 0.10, 0.0),
        "with every rank typical the bubbles add up to {ideal_total:.2} ms a step, the control's to {control_total:.2}"
    );
    // The slow stage is the one the others wait for: its own bubble is the smallest.
    let least = stages
        .iter()
        .min_by(|x, y| x.bubble.as_ms().total_cmp(&y.bubble.as_ms()))
        .map(|s| s.who.as_str());
    assert_eq!(least, Some("TP00-PP02"), "{stages:#?}");

    let c = analyze(&control);
    let line = common::attrib::first(&c);
    assert!(line.starts_with("Balanced"), "{:#?}", c.verdict.lines);
}

/// Training pipelines (1F1B, 4 stages, 8 micro-batches) with each kind of plant, whose
/// transfers are paired only by the peer they name, by its rank in the pipeline's group as
/// torch names it:
/// - the run above written as a CPU-only (gloo) run with `record_shapes`, whose `c10d::send` /
///   `c10d::recv_` name their peer only in `Concrete Inputs`;
/// - TP 2 inside each stage (`Dst Rank` 1 of the group `[1, 3, 5, 7]` is rank 3; read as a
///   world rank it paired the wrong stages, the replay could not follow the ranks' orders and
///   the first line was 24 % under the plant's cost);
/// - a host stall of 5 ms a step on stage 2, and a 5 ms late step start on stage 1.
///
/// Truth from the raw events, plant against control: how much later the last step ends, per
/// step. The first line names the rank and the cause, within 10 %; the control is balanced.
#[test]
fn training_pipelines_pair_their_transfers_by_peer() {
    use rankprof::synth::Delay;
    let delay = |rank: u32| {
        Some(Delay {
            rank,
            delay_ns: 5_000_000,
            from_step: 0,
        })
    };
    let gloo = SynthOptions {
        tp: 1,
        cpu_only: true,
        record_shapes: true,
        slow: slow(2, 2.0, 0),
        ..Default::default()
    };
    let tp2 = SynthOptions {
        tp: 2,
        slow: slow(5, 2.0, 0),
        ..Default::default()
    };
    let host = SynthOptions {
        tp: 1,
        host_delay: delay(2),
        ..Default::default()
    };
    let late = SynthOptions {
        tp: 1,
        late_start: delay(1),
        ..Default::default()
    };
    let t = tempfile::tempdir().unwrap();
    for (name, plant, who) in [
        ("gloo", gloo, "slower device or host: TP00-PP02"),
        ("tp2", tp2, "slower device or host: TP01-PP02"),
        ("host", host, "host-bound: TP00-PP02"),
        ("late", late, "late step start: TP00-PP01"),
    ] {
        let write = |kind: &str, cfg: SynthOptions| {
            let dir = t.path().join(format!("{name}-{kind}"));
            let cfg = SynthOptions {
                pp: 4,
                steps: 4,
                layers: 4,
                microbatches: 8,
                ..cfg
            };
            rankprof::synth::write_set(&cfg, &dir).expect("synth");
            dir
        };
        let control_cfg = SynthOptions {
            slow: None,
            host_delay: None,
            late_start: None,
            ..plant.clone()
        };
        let plant = write("plant", plant);
        let control = write("control", control_cfg);
        let truth_ms = (last_step_end_us(&plant) - last_step_end_us(&control)) / 4.0 / 1e3;
        let a = analyze(&plant);
        let line = common::attrib::first(&a);
        assert!(
            line.contains(&format!("{who} costs every step"))
                && line.contains("re-simulated on the pipeline"),
            "{name}: {:#?}",
            a.verdict.lines
        );
        assert_first_line_near(line, truth_ms, 0.10, &format!("{name}: "));
        let c = analyze(&control);
        assert!(
            common::attrib::first(&c).starts_with("Balanced"),
            "{name}: {:#?}",
            c.verdict.lines
        );
    }
}

/// A whole pipeline stage slow (`synth --tp 2 --dp 2 --pp 4 --microbatches 8 --slow-rank 4
/// --slow-stage --factor 1.5`: both TP ranks of stage 2, on both DP replicas). The stage's two
/// ranks wait for each other at their own TP all-reduces, so neither made typical alone gives
/// anything back (each costs the step about 0.2 %), and a verdict that names ranks called it
/// Balanced. The first line names the stage, at what its ranks made typical together give
/// back, and the other replica's same stage beside it.
///
/// Truth from the raw events, plant against control: how much later the last step ends, per
/// step. The stage lies in the middle of the pipeline: the last stage also runs the LM head,
/// work a control has too.
#[test]
fn a_whole_slow_stage_is_named_as_the_stage() {
    let t = tempfile::tempdir().unwrap();
    let cfg = SynthOptions {
        tp: 2,
        dp: 2,
        pp: 4,
        steps: 4,
        layers: 4,
        microbatches: 8,
        slow: slow(4, 1.5, 0),
        slow_stage: true,
        ..Default::default()
    };
    let plant = t.path().join("plant");
    let control = t.path().join("control");
    rankprof::synth::write_set(&cfg, &plant).expect("synth");
    let control_cfg = SynthOptions {
        slow: None,
        slow_stage: false,
        ..cfg.clone()
    };
    rankprof::synth::write_set(&control_cfg, &control).expect("synth");
    let truth_ms = (last_step_end_us(&plant) - last_step_end_us(&control)) / 4.0 / 1e3;
    let a = analyze(&plant);
    let line = common::attrib::first(&a);
    assert!(
        line.starts_with(
            "Imbalanced, slow pipeline stage: stage PP02 (TP00-DP00-PP02, TP01-DP00-PP02) costs every step"
        ) && line.contains("TP00-DP01-PP02, TP01-DP01-PP02"),
        "{:#?}",
        a.verdict.lines
    );
    let ms = first_line_cost(line);
    assert_first_line_near(line, truth_ms, 0.10, "");
    // Alone, no rank of the stage gives back a tenth of it: the stage, not a rank.
    for who in ["TP00-DP00-PP02", "TP01-DP00-PP02"] {
        assert!(saved_ms(&a, who) < 0.1 * ms, "{who}: {:#?}", a.path.what_if);
    }
    assert_eq!(a.verdict.cause.as_deref(), Some("slow pipeline stage"));
    assert!(
        a.verdict
            .lines
            .iter()
            .all(|l| !l.contains("the others do not wait for it")),
        "{:#?}",
        a.verdict.lines
    );
    let c = analyze(&control);
    assert!(
        common::attrib::first(&c).starts_with("Balanced"),
        "{:#?}",
        c.verdict.lines
    );
    // One rank a stage (TP 1): the stage is that rank, named as such, and the other
    // replica's same stage beside it.
    let tp1 = t.path().join("tp1");
    rankprof::synth::write_set(
        &SynthOptions {
            tp: 1,
            slow: slow(2, 1.5, 0),
            ..cfg
        },
        &tp1,
    )
    .expect("synth");
    let a = analyze(&tp1);
    let line = common::attrib::first(&a);
    assert!(
        line.contains("TP00-DP00-PP02 costs every step")
            && line.contains("The same stage costs as much in the other worlds")
            && line.contains("TP00-DP01-PP02"),
        "{:#?}",
        a.verdict.lines
    );
}

/// The analysis of a folder, as `analyze --profile-dir DIR [--stage STAGE]` does it.
fn analyze_dir(dir: &Path, stage: Option<&str>) -> Analysis {
    let opts = AnalyzeOptions {
        profile_dir: Some(dir.to_path_buf()),
        stage: stage.map(str::to_string),
        ..Default::default()
    };
    rankprof::analyze::analyze(&opts).unwrap_or_else(|e| panic!("analyze {}: {e:#}", dir.display()))
}

/// Each rank's DeepEP kernel starts (µs), read from the raw trace: the kernels the trace
/// names no process group for.
fn deep_ep_starts(file: &Path) -> Vec<f64> {
    let mut text = String::new();
    std::io::Read::read_to_string(
        &mut flate2::read::GzDecoder::new(std::fs::File::open(file).unwrap()),
        &mut text,
    )
    .unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["cat"] == "kernel")
        .filter(|e| e["name"].as_str().is_some_and(|n| n.contains("deep_ep::")))
        .map(|e| e["ts"].as_f64().unwrap())
        .collect()
}

/// TP2 × PP2 × EP2 serving (the bundled `sglang-tp2pp2ep2`): DeepEP's dispatch and combine
/// kernels carry no process group, so all four ranks' were matched as one group, stage 0's
/// n-th with stage 1's — kernels that run milliseconds apart in a pipeline. The replay missed
/// the recording by 21 % and was not trusted. Each stage's are its own group: from the raw
/// events, the two ranks of a stage start their n-th DeepEP kernel within a few µs of each
/// other, and the two stages' n-th ones far apart.
#[test]
fn kernels_without_a_group_are_matched_within_a_pipeline_stage() {
    let dir = manifest("fixtures/sglang-tp2pp2ep2");
    let starts = |tp: u32, pp: u32| {
        deep_ep_starts(&dir.join(format!(
            "1790857400.5-TP-{tp}-PP-{pp}-EP-{tp}.trace.json.gz"
        )))
    };
    let (s0, s0b, s1) = (starts(0, 0), starts(1, 0), starts(0, 1));
    let gap = |a: &[f64], b: &[f64]| {
        let mut d: Vec<f64> = a.iter().zip(b).map(|(x, y)| (x - y).abs()).collect();
        d.sort_by(f64::total_cmp);
        d[d.len() / 2]
    };
    assert_eq!(s0.len(), 24);
    assert!(gap(&s0, &s0b) < 100.0, "within a stage {}", gap(&s0, &s0b));
    assert!(gap(&s0, &s1) > 500.0, "across stages {}", gap(&s0, &s1));
    let a = analyze_dir(&dir, None);
    let groups: Vec<(&str, usize)> = a
        .collectives
        .groups
        .iter()
        .map(|g| (g.key.as_str(), g.matched))
        .collect();
    assert!(groups.contains(&("stream #0 PP00", 24)), "{groups:?}");
    assert!(groups.contains(&("stream #0 PP01", 24)), "{groups:?}");
    assert!(!groups.iter().any(|g| g.0 == "stream #0"), "{groups:?}");
    let w = &a.path.what_if;
    assert!(w.error_pct <= 2.0, "model error {:.1} %", w.error_pct);
}

/// #51: every bundled fixture, synthetic or recorded, whose collectives the what-if replays
/// reports its model error, at most 2 % of the step. (The four NCCL ranks sharing one GPU over
/// the socket transport, `real-nccl/tp4-*`, leave an all-reduce up to 1.6 ms apart: as a chain,
/// which has them leave together, they missed by 4.1 and 4.2 %; they are replayed on the graph
/// now, as gloo worlds are.)
#[test]
fn every_fixture_is_replayed_within_two_percent() {
    let dirs = common::bundled_profile_dirs();
    assert!(dirs.len() >= 40, "{} fixture folders", dirs.len());
    let mut replayed = 0;
    let mut off = Vec::new();
    for d in &dirs {
        // SGLang's by-stage profile is two profiles, one per stage.
        let stages: &[Option<&str>] = if d.ends_with("sglang-bystage-tp2") {
            &[Some("EXTEND"), Some("DECODE")]
        } else {
            &[None]
        };
        for &stage in stages {
            let a = analyze_dir(d, stage);
            let w = &a.path.what_if;
            if w.worlds.is_empty() {
                continue;
            }
            replayed += 1;
            if w.error_pct > 2.0 {
                off.push(format!("{} {stage:?}: {:.1} %", d.display(), w.error_pct));
            }
        }
    }
    assert!(replayed >= 30, "{replayed} replayed");
    assert!(off.is_empty(), "model error over 2 %: {off:#?}");
}
