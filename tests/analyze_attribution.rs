//! Attribution (#9): every planted case — a slower rank (same work), a heavy rank (more
//! tokens), extra kernels, balanced controls, with and without DP — is named with the right
//! rank and cause in the verdict's first line; the work figures equal the independent checker's
//! (tests/check_attribution.py); the real SGLang fixtures say what they really show; the saved
//! summary carries the time per unit of work and `compare` gates on it.

mod common;

use std::path::{Path, PathBuf};

use common::attrib::{assert_first, checker, files_in, first, slow, synth};
use common::{analyze_files, shared};
use rankprof::analyze::explain::attribution::Cause;
use rankprof::analyze::Analysis;
use rankprof::synth::{Extra, Heavy, SynthOptions};
use serde_json::Value;

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

/// Every per-rank work figure and every rank-vs-replica ratio equals the checker's.
fn assert_matches_checker(a: &Analysis, files: &[PathBuf]) {
    let c = checker(files);
    let ranks = c["ranks"].as_object().unwrap();
    assert_eq!(ranks.len(), a.attribution.ranks.len());
    for (path, cr) in ranks {
        let label = a
            .files
            .iter()
            .find(|f| Path::new(&f.path) == Path::new(path))
            .map(|f| f.ranks[0].clone())
            .unwrap_or_else(|| panic!("{path} not analyzed"));
        let r = a
            .attribution
            .ranks
            .iter()
            .find(|r| r.rank == label)
            .unwrap();
        let ctx = format!("{label}: {cr}");
        assert_eq!(r.time_ns.get(), cr["time_ns"].as_i64().unwrap(), "{ctx}");
        assert_eq!(r.tokens, cr["tokens"].as_u64(), "{ctx}");
        assert_eq!(r.seqs, cr["seqs"].as_u64(), "{ctx}");
        assert_eq!(r.launches, cr["launches"].as_u64().unwrap(), "{ctx}");
        for (mine, theirs) in [
            (r.time_per_token_ns, &cr["time_per_token_ns"]),
            (r.time_per_seq_ns, &cr["time_per_seq_ns"]),
            (r.time_per_launch_ns, &cr["time_per_launch_ns"]),
        ] {
            match (mine, theirs.as_f64()) {
                (Some(x), Some(y)) => assert!(close(x, y), "{ctx}: {x} vs {y}"),
                (None, None) => {}
                other => panic!("{ctx}: {other:?}"),
            }
        }
        if let Some(tr) = cr.get("time_ratio").and_then(Value::as_f64) {
            let rec = a
                .attribution
                .records
                .iter()
                .find(|x| x.scope == "rank" && x.who == label)
                .unwrap_or_else(|| panic!("{ctx}: no rank record"));
            assert!(close(rec.time_ratio, tr), "{ctx}: {}", rec.time_ratio);
            let lr = cr["launch_ratio"].as_f64().unwrap();
            assert!(close(rec.launch_ratio, lr), "{ctx}: {}", rec.launch_ratio);
            if let Some(w) = cr.get("token_ratio").and_then(Value::as_f64) {
                assert!(close(rec.work_ratio.unwrap(), w), "{ctx}");
            }
        }
    }
}

#[test]
fn same_work_slower_is_the_device() {
    let t = tempfile::tempdir().unwrap();
    let files = synth(
        t.path(),
        SynthOptions {
            tp: 4,
            slow: slow(2, 1.5, 0),
            ..Default::default()
        },
    );
    let a = analyze_files(&files, |_| {});
    assert_first(&a, "rank TP02", "slower device or host");
    assert!(first(&a).contains("the same batches"), "{}", first(&a));
    assert_matches_checker(&a, &files);
    let lead = a.attribution.gaps().next().unwrap();
    assert_eq!(lead.work_ratio, Some(1.0));
    assert!(lead.time_ratio > 1.2, "{lead:?}");
}

#[test]
fn more_tokens_is_uneven_load() {
    let t = tempfile::tempdir().unwrap();
    let files = synth(
        t.path(),
        SynthOptions {
            tp: 4,
            heavy: Some(Heavy {
                rank: 1,
                factor: 2.0,
            }),
            ..Default::default()
        },
    );
    let a = analyze_files(&files, |_| {});
    assert_first(&a, "rank TP01", "uneven load");
    assert_matches_checker(&a, &files);
    let lead = a.attribution.gaps().next().unwrap();
    let w = lead.work_ratio.unwrap();
    assert!((1.9..2.1).contains(&w), "{lead:?}");
    assert_eq!(a.attribution.unit, "token");
}

#[test]
fn extra_launches_for_the_same_batch_are_more_kernels() {
    let t = tempfile::tempdir().unwrap();
    let files = synth(
        t.path(),
        SynthOptions {
            tp: 4,
            extra: Some(Extra {
                rank: 3,
                per_layer: 8,
            }),
            ..Default::default()
        },
    );
    let a = analyze_files(&files, |_| {});
    assert_first(&a, "rank TP03", "more kernels");
    assert_matches_checker(&a, &files);
}

#[test]
fn balanced_controls_say_balanced() {
    for (tp, dp) in [(4, 1), (2, 2), (1, 2)] {
        let t = tempfile::tempdir().unwrap();
        let files = synth(
            t.path(),
            SynthOptions {
                tp,
                dp,
                same_batches: true,
                ..Default::default()
            },
        );
        let a = analyze_files(&files, |_| {});
        assert!(
            first(&a).starts_with("Balanced"),
            "tp{tp} dp{dp}: {:#?}",
            a.verdict.lines
        );
        assert!(
            a.attribution.gaps().next().is_none(),
            "{:#?}",
            a.attribution.records
        );
        assert_matches_checker(&a, &files);
    }
}

#[test]
fn dp_cases_compare_within_a_replica_and_replicas_with_each_other() {
    // TP1 x DP2, same batches, replica 1 three times as slow: the real case.
    let t = tempfile::tempdir().unwrap();
    let files = synth(
        t.path(),
        SynthOptions {
            tp: 1,
            dp: 2,
            same_batches: true,
            slow: slow(1, 3.0, 0),
            ..Default::default()
        },
    );
    let a = analyze_files(&files, |_| {});
    assert_first(&a, "replica DP01", "slower device or host");
    let lead = a.attribution.gaps().next().unwrap();
    assert_eq!(lead.scope, "replica");
    assert!(lead.time_ratio > 2.0, "{lead:?}");

    // TP2 x DP2: DP01's second rank is slow: compared with its replica's other rank.
    let t = tempfile::tempdir().unwrap();
    let files = synth(
        t.path(),
        SynthOptions {
            tp: 2,
            dp: 2,
            same_batches: true,
            slow: slow(3, 1.6, 0),
            ..Default::default()
        },
    );
    let a = analyze_files(&files, |_| {});
    assert_first(&a, "rank TP01-DP01", "slower device or host");
    let lead = a.attribution.gaps().next().unwrap();
    assert_eq!(lead.peers, ["TP00-DP01"]);
    assert_matches_checker(&a, &files);

    // TP1 x DP2, a skewed router: DP01 gets 1.8x the tokens.
    let t = tempfile::tempdir().unwrap();
    let files = synth(
        t.path(),
        SynthOptions {
            tp: 1,
            dp: 2,
            same_batches: true,
            heavy: Some(Heavy {
                rank: 1,
                factor: 1.8,
            }),
            ..Default::default()
        },
    );
    let a = analyze_files(&files, |_| {});
    assert_first(&a, "replica DP01", "uneven load");
    assert!(first(&a).contains("routing/scheduling imbalance"));
}

#[test]
fn the_largest_gap_leads_and_a_smaller_hidden_onset_follows() {
    // Rank 3 launches many more kernels from step 0; rank 1 is 12 % slower from step 5.
    let t = tempfile::tempdir().unwrap();
    let files = synth(
        t.path(),
        SynthOptions {
            tp: 4,
            steps: 8,
            extra: Some(Extra {
                rank: 3,
                per_layer: 24,
            }),
            slow: slow(1, 1.12, 5),
            ..Default::default()
        },
    );
    let a = analyze_files(&files, |_| {});
    assert_first(&a, "rank TP03", "more kernels");
    let lead = a.attribution.gaps().next().unwrap();
    assert!(lead.launch_ratio > 2.5, "{lead:?}");
    // The smaller, later gap follows, once, with its cause and first step. TP03's extra
    // kernels make it arrive last at most collectives, so TP01's slowdown is mostly waited
    // out within TP03's: it costs the step less than TP03 does, and the line says what.
    let lines = &a.verdict.lines;
    let tp01: Vec<&String> = lines
        .iter()
        .filter(|l| l.contains("rank TP01:") || l.starts_with("TP01's"))
        .collect();
    assert_eq!(tp01.len(), 1, "{lines:#?}");
    let line = tp01[0];
    assert!(
        line != &lines[0]
            && line.contains("slower device or host")
            && line.contains("from step 5")
            && (line.contains("it costs every step") || line.contains("costs the step only")),
        "{lines:#?}"
    );
}

#[test]
fn real_sglang_fixtures_ran_the_same_batches() {
    for (dir, n) in [("sglang-cpu/tp2dp2", 4), ("sglang-cpu/tp2", 2)] {
        let files = files_in(&shared(dir));
        assert_eq!(files.len(), n);
        let a = analyze_files(&files, |_| {});
        // Every rank ran step[EXTEND bs=1 toks=8] then two step[DECODE bs=1]: 10 tokens.
        assert_eq!(a.attribution.unit, "token", "{dir}");
        assert_eq!(a.attribution.source, "tokens (SGLang step annotation)");
        for r in &a.attribution.ranks {
            assert_eq!(
                (r.tokens, r.seqs, r.steps),
                (Some(10), Some(3), 3),
                "{dir} {r:?}"
            );
        }
        // In TP2 no rank is off its peer by 5 % over the whole profile. (In TP2 x DP2 ranks and
        // replicas are: their peers' waiting in gloo is communication, not work, below.)
        for r in a
            .attribution
            .records
            .iter()
            .filter(|_| dir.ends_with("tp2"))
        {
            assert_eq!(r.cause, Cause::Balanced, "{dir}: {r:?}");
        }
        assert_matches_checker(&a, &files);
    }
    // TP2: balanced (the old headline, "9.9 % more cpu work", counted CPU time outside the
    // steps).
    let a = analyze_files(&files_in(&shared("sglang-cpu/tp2")), |_| {});
    assert!(first(&a).starts_with("Balanced"), "{:#?}", a.verdict.lines);
    // TP2 x DP2: the same batches everywhere; TP01-DP01's GEMMs took longer in the two decode
    // steps (CPU contention on the host that recorded it): the device/host, and only against
    // its own replica's rank. Its peer spent that time waiting in gloo, which is
    // communication: TP01-DP01 did about 3× its peer's work time from step 1 on (before, the
    // peer's waiting counted as its work and the ratio read 1.07×).
    let a = analyze_files(&files_in(&shared("sglang-cpu/tp2dp2")), |_| {});
    assert_first(&a, "TP01-DP01", "slower device or host");
    assert!(first(&a).contains("from step 1 on"), "{}", first(&a));
    let lead = a
        .attribution
        .gaps()
        .find(|g| g.who == "TP01-DP01" && g.scope == "rank from onset")
        .unwrap();
    assert_eq!(lead.peers, ["TP00-DP01"]);
    assert_eq!(lead.work_ratio, Some(1.0));
    assert!(lead.time_ratio > 2.0, "{lead:?}");
    let replicas: Vec<&str> = a
        .attribution
        .records
        .iter()
        .filter(|r| r.scope == "replica")
        .map(|r| r.who.as_str())
        .collect();
    assert_eq!(replicas, ["DP00", "DP01"]);
    for r in a
        .attribution
        .records
        .iter()
        .filter(|r| r.scope != "replica")
    {
        let dp = &r.who[r.who.len() - 4..];
        assert!(r.peers.iter().all(|p| p.ends_with(dp)), "{r:?}");
    }
}

#[test]
fn summary_carries_time_per_token_and_compare_gates_on_it() {
    let t = tempfile::tempdir().unwrap();
    let base = t.path().join("base");
    let cur = t.path().join("cur");
    synth(
        &base,
        SynthOptions {
            tp: 2,
            ..Default::default()
        },
    );
    synth(
        &cur,
        SynthOptions {
            tp: 2,
            slow: slow(0, 1.3, 0),
            ..Default::default()
        },
    );
    let a = analyze_files(&files_in(&cur), |_| {});
    let s = a.summary.as_ref().unwrap();
    assert_eq!(s.version, 2);
    let w = s.work.as_ref().unwrap();
    assert_eq!(w.unit, "token");
    let mx = a
        .attribution
        .ranks
        .iter()
        .filter_map(|r| r.time_per_token_ns)
        .fold(0.0, f64::max);
    assert_eq!(
        w.time_per_unit_ns_max.map(|x| x.get()),
        Some(mx.round() as i64)
    );
    // A version 1 summary (no work section) still loads.
    let json = rankprof::analyze::summary::to_json(s).unwrap();
    let mut v: Value = serde_json::from_str(&json).unwrap();
    v["version"] = 1.into();
    v.as_object_mut().unwrap().remove("work");
    let old = rankprof::analyze::summary::from_json_str(&v.to_string(), Path::new("old.json"))
        .expect("version 1 loads");
    assert!(old.work.is_none());

    let c = rankprof::compare::compare(&rankprof::compare::CompareOptions {
        baseline: base.clone(),
        current: cur.clone(),
        ..Default::default()
    })
    .unwrap()
    .comparison;
    let row = c
        .overall
        .iter()
        .find(|r| r.name == "time per token (slowest rank)")
        .unwrap_or_else(|| panic!("{:#?}", c.overall));
    assert!(row.delta_pct.unwrap() > 5.0, "{row:?}");
    assert!(c
        .failures
        .iter()
        .any(|f| f.message.starts_with("time per token (slowest rank)")));
}

#[test]
fn every_format_carries_the_attribution() {
    let t = tempfile::tempdir().unwrap();
    let files = synth(
        t.path(),
        SynthOptions {
            tp: 2,
            slow: slow(1, 1.5, 0),
            ..Default::default()
        },
    );
    let a = analyze_files(&files, |_| {});
    let json: Value = serde_json::from_str(&rankprof::report::formats::json(&a).unwrap()).unwrap();
    let recs = json["attribution"]["records"].as_array().unwrap();
    assert_eq!(recs[0]["cause"], "slower-device");
    assert_eq!(recs[0]["who"], "TP01");
    // Lists of flat records (#12): no list or object inside a record.
    for list in ["records", "per_step", "ranks"] {
        for rec in json["attribution"][list].as_array().unwrap() {
            let flat = rec
                .as_object()
                .unwrap()
                .values()
                .all(|v| !v.is_array() && !v.is_object());
            assert!(flat, "attribution.{list}: {rec}");
        }
    }
    assert_eq!(
        json["attribution"]["per_step"].as_array().unwrap().len(),
        a.ranks.len() * a.attribution.per_step.len()
    );
    assert!(json["unclassified"]["pct"].is_number());
    let md = rankprof::report::formats::markdown(&a);
    assert!(
        md.contains("Imbalanced, slower device or host: TP01 costs"),
        "{md}"
    );
    assert!(md.contains("## Attribution"), "{md}");
    let csv = rankprof::report::formats::csv(&a);
    assert!(
        csv.contains("# attribution:") && csv.contains("# work:"),
        "{csv}"
    );
    let html = rankprof::report::html::render(&a);
    assert!(html.contains("<svg id=\"work-chart\""));
    // One work dot per rank and step.
    assert_eq!(
        html.matches("<circle").count(),
        a.ranks.len() * a.steps.rows.len()
    );
    assert_eq!(a.attribution.records[0].cause, Cause::SlowerDevice);
}

/// The cost a verdict line states per step, ms: "it costs every step X ms" (at the
/// collectives) or "its work takes X ms a step" (a replica); `None` when it states none.
fn stated_cost(line: &str) -> Option<f64> {
    let after = line
        .split_once("it costs every step ")
        .or_else(|| line.split_once("its work takes "))?
        .1;
    after.split_whitespace().next()?.parse().ok()
}

#[test]
fn causes_below_the_first_line_come_in_cost_order() {
    // DP2 × TP2, two plants in two replicas: in DP01, TP00 launches 3× the kernels; in DP00,
    // TP01 is 1.2× slower. Each holds up its own replica at every collective; the replicas'
    // batches differ (uneven load between them). Truth: what each rank's late arrivals cost,
    // from the NCCL kernels' start times alone (tests/truth_arrivals.py).
    if !common::have_python("cost order") {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let files = synth(
        t.path(),
        SynthOptions {
            tp: 2,
            dp: 2,
            extra: Some(Extra {
                rank: 2,
                per_layer: 24,
            }),
            slow: slow(1, 1.2, 0),
            ..Default::default()
        },
    );
    let a = analyze_files(&files, |_| {});
    let truth = common::python("truth_arrivals.py", &[t.path()], &["8"]);
    let cost = |who: &str| truth[who].as_f64().unwrap_or_else(|| panic!("{truth}"));
    assert!(cost("TP00-DP01") > 2.0 * cost("TP01-DP00"), "{truth}");
    // The costlier leads, at its cost.
    let lines = &a.verdict.lines;
    assert!(
        lines[0].contains("TP00-DP01 costs every step"),
        "{lines:#?}"
    );
    let first = lines[0]
        .split_once("costs every step ")
        .and_then(|x| x.1.split_whitespace().next()?.parse::<f64>().ok())
        .unwrap_or_else(|| panic!("{lines:#?}"));
    assert!(
        (first / cost("TP00-DP01") - 1.0).abs() < 0.10,
        "{first} vs {truth}"
    );
    // Below it, every cause with the cost it is ranked by, costliest first; the other
    // replica's rank among them, at its cost.
    let also: Vec<(&String, f64)> = lines
        .iter()
        .filter(|l| l.starts_with("Also"))
        .map(|l| (l, stated_cost(l).unwrap_or_else(|| panic!("no cost: {l}"))))
        .collect();
    assert!(also.len() >= 2, "{lines:#?}");
    assert!(
        also.windows(2).all(|w| w[0].1 >= w[1].1),
        "not in cost order: {also:#?}"
    );
    let (_, slower) = also
        .iter()
        .find(|(l, _)| l.contains("slower device or host: rank TP01-DP00"))
        .unwrap_or_else(|| panic!("{lines:#?}"));
    assert!(
        (slower / cost("TP01-DP00") - 1.0).abs() < 0.10,
        "{slower} vs {truth}"
    );
}
