//! Side-stream overlap (issue #51): a collective that runs on its own CUDA stream while compute
//! goes on costs the step only where compute waited for it (`analyze::collect::overlap`).
//!
//! The plant (`synth --overlap-comm --overlap-late-rank 1 --delay-us D`): every rank prefetches
//! the next layer with an all-gather on a side stream after each layer's last all-reduce (three
//! a step with four layers), and waits for it (`cudaStreamWaitEvent`) only before the next
//! layer's output projection; TP01's copy-in before each all-gather takes D longer, so it
//! arrives D late at every one. The truth is measured without the model: the same set written
//! without the delay (same seed, the same kernels), and the step time (`ProfilerStep#N`, the
//! longest rank's) compared step by step. With a small D the all-gathers still end before the
//! projections need them: the steps are the same to the nanosecond (hidden, ΔT = 0); with a
//! large D compute waits, and the steps are longer by what it waited.

mod common;

use std::path::Path;

use common::attrib::files_in;
use rankprof::analyze::Analysis;
use rankprof::synth::{write_set, Delay, SynthOptions};
use serde_json::Value;

/// Prefetches a step: one per layer but the last.
const LAYERS: u32 = 4;
const PREFETCHES: f64 = (LAYERS - 1) as f64;

/// The plant with TP01 `delay_us` late at every prefetch (`None`: the control), as plain JSON.
fn plant(dir: &Path, delay_us: Option<i64>) -> Vec<std::path::PathBuf> {
    write_set(
        &SynthOptions {
            tp: 4,
            steps: 6,
            layers: LAYERS,
            overlap_comm: true,
            overlap_delay: delay_us.map(|us| Delay {
                rank: 1,
                delay_ns: us * 1_000,
                from_step: 0,
            }),
            plain: true,
            ..Default::default()
        },
        dir,
    )
    .expect("synth");
    files_in(dir)
}

/// Per step, the longest rank's `ProfilerStep#N` duration, µs, read from the files alone.
fn step_times(files: &[std::path::PathBuf]) -> Vec<f64> {
    let mut longest: Vec<f64> = Vec::new();
    for f in files {
        let doc: Value = serde_json::from_slice(&std::fs::read(f).expect("read")).expect("json");
        let steps = doc["traceEvents"]
            .as_array()
            .expect("traceEvents")
            .iter()
            .filter(|e| {
                e["name"]
                    .as_str()
                    .is_some_and(|n| n.starts_with("ProfilerStep#"))
            })
            .filter_map(|e| e["dur"].as_f64());
        for (i, d) in steps.enumerate() {
            if i == longest.len() {
                longest.push(d);
            }
            longest[i] = longest[i].max(d);
        }
    }
    longest
}

/// What the delay truly costs a step, ms: the plant's step times less the control's, on the
/// mean.
fn truth_ms(delay_us: i64) -> f64 {
    let (t, c) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let with = step_times(&plant(t.path(), Some(delay_us)));
    let without = step_times(&plant(c.path(), None));
    assert_eq!(with.len(), without.len());
    let n = with.len() as f64;
    with.iter().zip(&without).map(|(a, b)| a - b).sum::<f64>() / n / 1e3
}

fn analyzed(delay_us: i64) -> Analysis {
    let t = tempfile::tempdir().unwrap();
    let files = plant(t.path(), Some(delay_us));
    common::analyze_files(&files, |_| {})
}

#[test]
fn a_hidden_prefetch_delay_costs_nothing() {
    let truth = truth_ms(30);
    assert!(
        truth.abs() < 1e-6,
        "the plant is not hidden: {truth} ms a step"
    );
    let a = analyzed(30);
    let p = &a.path;
    let saved = p.what_if.saved_by("TP01").as_ms();
    assert!(saved < 0.005, "what if TP01 typical: {saved} ms; {p:#?}");
    let charged = p.rank_per_step("TP01") / 1e6;
    assert!(
        charged < 0.005,
        "TP01 charged {charged} ms; {:#?}",
        p.causes
    );
    let first = common::attrib::first(&a);
    assert!(
        !first.contains("TP01 costs"),
        "the verdict blames the hidden rank: {first}"
    );
    // What was hidden: TP01's lead at every prefetch, the plant's delay three times a step.
    let h = p
        .hidden
        .iter()
        .find(|h| h.who == "TP01")
        .unwrap_or_else(|| panic!("nothing hidden: {p:#?}"));
    let planted_ms = PREFETCHES * 0.030;
    assert!(
        (h.hidden_per_step_ns / 1e6 - planted_ms).abs() <= 0.15 * planted_ms,
        "hidden {} ms a step vs the planted {planted_ms} ms",
        h.hidden_per_step_ns / 1e6
    );
    assert!(
        a.all_notes()
            .iter()
            .any(|n| n.starts_with("hidden by overlap: ") && n.contains(" of TP01's ")),
        "{:#?}",
        a.all_notes()
    );
    let json = rankprof::report::json::flat_json(&a).expect("json");
    assert_eq!(json["path"]["hidden"][0]["who"], "TP01", "{}", json["path"]);
}

#[test]
fn a_prefetch_delay_compute_waits_for_costs_what_it_waits() {
    let truth = truth_ms(300);
    assert!(truth > 0.1, "the plant is hidden: {truth} ms a step");
    let a = analyzed(300);
    let p = &a.path;
    assert!(p.what_if.trusted(), "{:#?}", p.what_if);
    let saved = p.what_if.saved_by("TP01").as_ms();
    assert!(
        (saved - truth).abs() <= 0.10 * truth,
        "what if TP01 typical: {saved} ms a step vs the truth {truth} ms; {:#?}",
        p.what_if
    );
    let charged = p.rank_per_step("TP01") / 1e6;
    assert!(
        (charged - truth).abs() <= 0.10 * truth,
        "TP01 charged {charged} ms a step vs the truth {truth} ms; {:#?}",
        p.causes
    );
    // The rest of its lead (the delay at each prefetch) was hidden by the overlap.
    let h = p.hidden.iter().find(|h| h.who == "TP01").expect("hidden");
    let lead = h.lead_per_step_ns / 1e6;
    assert!(
        (lead - PREFETCHES * 0.300).abs() <= 0.10 * PREFETCHES * 0.300,
        "lead {lead} ms"
    );
    assert!(
        (h.hidden_per_step_ns / 1e6 - (lead - truth)).abs() <= 0.10 * lead,
        "{h:#?} vs truth {truth}"
    );
    assert!(
        common::attrib::first(&a).contains("TP01"),
        "{}",
        common::attrib::first(&a)
    );
}
