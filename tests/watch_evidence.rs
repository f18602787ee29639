//! The load timeline as evidence for merge and analyze, on generated traces (a TP1×DP2 set whose
//! DP01 becomes slower from step 4) and a hand-written `watch-*.jsonl` beside them: the merged
//! trace gets one load counter track per DP rank with one sample per poll inside its span, the
//! analysis does not take the tracks for ranks, and its notes say what the load was at the
//! onset.

use std::io::Read;
use std::path::Path;

use rankprof::load::timeline::{default_path, Writer};
use rankprof::pipeline::{merge_and_analyze, PipelineOptions};
use rankprof::synth::{write_set, Slow, SynthOptions};
use serde_json::Value;

const BASE_NS: i64 = 1_790_857_026_000_000_000;

/// Earliest start and latest end (Unix ns) over the rank files of `dir`.
fn span(dir: &Path) -> (i64, i64) {
    let (mut lo, mut hi) = (i64::MAX, i64::MIN);
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let mut base = 0;
        let (mut a, mut b) = (i64::MAX, i64::MIN);
        let r = rankprof::trace::read_trace(&e.path(), |ev| {
            if let Some(ts) = ev.ts {
                a = a.min(ts.get());
                b = b.max(ts.get() + ev.dur.map_or(0, |d| d.get().max(0)));
            }
        })
        .unwrap();
        if let Some(bn) = r.header.base_time_ns {
            base = bn;
        }
        lo = lo.min(base + a);
        hi = hi.max(base + b);
    }
    (lo, hi)
}

#[test]
fn merge_adds_load_tracks_and_analyze_reports_the_load_at_the_onset() {
    let dir = tempfile::tempdir().unwrap();
    write_set(
        &SynthOptions {
            tp: 1,
            dp: 2,
            steps: 8,
            slow: Some(Slow {
                rank: 1,
                factor: 1.6,
                from_step: 4,
                class: None,
            }),
            base_ns: BASE_NS,
            ..SynthOptions::default()
        },
        dir.path(),
    )
    .unwrap();
    let (lo, hi) = span(dir.path());
    // a poll every 2 ms from 50 ms before the traces to 50 ms after; DP01's queue is long
    let path = default_path(dir.path(), lo);
    let mut w = Writer::create(&path).unwrap();
    w.line(r#"{"kind":"watch","version":1}"#).unwrap();
    let mut polls = Vec::new();
    let mut t = lo - 50_000_000;
    let mut seq = 0;
    while t <= hi + 50_000_000 {
        w.line(&format!(
            r#"{{"kind":"poll","seq":{seq},"t_ns":{t},"workers":[{{"url":"http://10.0.0.1:30000","status":"ok","source":"/v1/loads","ms":1,"ranks":[{{"dp":0,"running":8,"waiting":2,"token_usage":0.3}},{{"dp":1,"running":8,"waiting":24,"token_usage":0.6}}]}}]}}"#
        ))
        .unwrap();
        polls.push(t);
        t += 2_000_000;
        seq += 1;
    }
    drop(w);

    let done = merge_and_analyze(dir.path(), &[], &PipelineOptions::default()).unwrap();
    assert_eq!(done.runs.len(), 1);
    let run = &done.runs[0];
    let m = run.merge.as_ref().unwrap();
    assert!(
        m.notes
            .iter()
            .any(|n| n.contains("load counters from") && n.contains("watch-")),
        "{:?}",
        m.notes
    );

    // the merged trace: one track per DP rank, a sample per poll inside the span
    let mut text = String::new();
    flate2::read::MultiGzDecoder::new(std::fs::File::open(&run.output).unwrap())
        .read_to_string(&mut text)
        .unwrap();
    let merged: Value = serde_json::from_str(&text).unwrap();
    let base = merged["baseTimeNanoseconds"].as_i64().unwrap();
    let mut tracks = std::collections::BTreeMap::<String, Vec<f64>>::new();
    for e in merged["traceEvents"].as_array().unwrap() {
        if e["ph"] == "C" {
            tracks
                .entry(e["pid"].as_str().unwrap().to_string())
                .or_default()
                .push(e["ts"].as_f64().unwrap());
        }
    }
    let inside: Vec<i64> = polls
        .iter()
        .copied()
        .filter(|t| (lo..=hi).contains(t))
        .collect();
    assert!(inside.len() > 5, "{} polls inside", inside.len());
    assert_eq!(
        tracks.keys().collect::<Vec<_>>(),
        ["[watch] DP00", "[watch] DP01"]
    );
    for ts in tracks.values() {
        assert_eq!(ts.len(), inside.len());
        // on the merged trace's clock
        for (got, want) in ts.iter().zip(&inside) {
            assert!(
                (got * 1e3 - (want - base) as f64).abs() < 2.0,
                "{got} vs {want}"
            );
        }
    }
    // events counted: the ranks' plus the counters and their metadata
    assert_eq!(
        m.events,
        m.ranks.iter().map(|r| r.written + r.added).sum::<u64>() + 2 * inside.len() as u64 + 4
    );

    // the analysis of the merged trace: two ranks (the tracks are not ranks), the onset, the load
    let a = run.analysis.as_ref().unwrap().as_ref().unwrap();
    let labels: Vec<&str> = a.ranks.iter().map(|r| r.figures.rank.as_str()).collect();
    assert_eq!(labels.len(), 2, "{labels:?}");
    let onset = a.steps.onset.as_ref().expect("an onset");
    assert_eq!(onset.step, "4");
    let note = a
        .notes
        .iter()
        .find(|n| n.starts_with("load at the onset"))
        .unwrap_or_else(|| panic!("{:?}", a.notes));
    assert!(
        note.contains("(step 4,")
            && note.contains("DP01 had 12.0× the waiting requests of DP00 (24 vs 2)"),
        "{note}"
    );
    assert!(
        note.contains("0.0 s before") || note.contains("0.0 s after"),
        "{note}"
    );
    assert!(
        !a.notes.iter().any(|n| n.contains("without a rank label")),
        "{:?}",
        a.notes
    );

    // the same note from the rank files
    let a = rankprof::analyze::analyze(&rankprof::analyze::AnalyzeOptions {
        profile_dir: Some(dir.path().to_path_buf()),
        profile_id: Some("synth".into()),
        ..Default::default()
    })
    .unwrap();
    assert!(
        a.notes
            .iter()
            .any(|n| n.starts_with("load at the onset (step 4,")),
        "{:?}",
        a.notes
    );
}

#[test]
fn a_timeline_of_another_time_adds_nothing() {
    let dir = tempfile::tempdir().unwrap();
    write_set(
        &SynthOptions {
            tp: 2,
            base_ns: BASE_NS,
            ..SynthOptions::default()
        },
        dir.path(),
    )
    .unwrap();
    let mut w = Writer::create(&default_path(dir.path(), 0)).unwrap();
    w.line(r#"{"kind":"poll","seq":0,"t_ns":1000,"workers":[{"url":"http://h:1","status":"ok","ranks":[{"dp":0,"waiting":1},{"dp":1,"waiting":9}]}]}"#)
        .unwrap();
    drop(w);
    let done = merge_and_analyze(dir.path(), &[], &PipelineOptions::default()).unwrap();
    let m = done.runs[0].merge.as_ref().unwrap();
    assert!(
        !m.notes.iter().any(|n| n.contains("load counters")),
        "{:?}",
        m.notes
    );
    assert_eq!(
        m.events,
        m.ranks.iter().map(|r| r.written + r.added).sum::<u64>()
    );
}
