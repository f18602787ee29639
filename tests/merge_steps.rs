//! `merge --steps A:B` and `--align first-step` against tests/check_merge_steps.py, which works
//! out each rank's clock shift, window and kept events from the inputs alone. The ranks are
//! laid out to take every path of the one-read `--steps` window (src/merge/steps.rs): step
//! annotations before their events, after them, a step that grows after its window was
//! settled, SGLang's unnumbered annotations, and more events before the first step than the
//! merge holds back.

mod common;

use std::path::{Path, PathBuf};

use common::{python, write_gz};
use rankprof::merge::{gather, merge_group, Align, MergeOptions, MergeResult};
use rankprof::trace::Ns;

/// How a rank's file is laid out.
#[derive(Clone, Copy)]
enum Layout {
    /// Each step's annotation before its events; a long span covering all steps first.
    Normal,
    /// Every step annotation at the end of the file, after the events it covers.
    StepsLast,
    /// Normal, plus a second `ProfilerStep#2` at the end that lasts longer: the window grows
    /// after the merge settled it.
    Grows,
    /// SGLang's unnumbered `step[DECODE bs=1]` annotations.
    Forward,
    /// 60,000 short events before the first step (more than the merge holds back); with
    /// `span`, also a long span covering all steps among the first 45,000 (decided when the
    /// held-back buffer fills, before any step is known).
    Filler { span: bool },
}

fn rank_doc(base_ns: i64, t0: f64, layout: Layout) -> String {
    let mut ev: Vec<String> = vec![
        r#"{"ph":"M","name":"process_name","pid":100,"tid":0,"args":{"name":"python3"}}"#.into(),
        r#"{"ph":"M","name":"process_name","pid":0,"tid":0,"args":{"name":"GPU 0"}}"#.into(),
    ];
    let span = format!(
        r#"{{"ph":"X","cat":"python_function","name":"serve","pid":100,"tid":2,"ts":{:.3},"dur":2000}}"#,
        t0 - 100.0
    );
    if let Layout::Filler { span: with_span } = layout {
        for j in 0..60_000 {
            ev.push(format!(
                r#"{{"ph":"X","cat":"cpu_op","name":"filler","pid":100,"tid":3,"ts":{:.3},"dur":0.005}}"#,
                t0 - 900.0 + j as f64 * 0.01
            ));
            if with_span && j == 40_000 {
                ev.push(span.clone());
            }
        }
    }
    if matches!(layout, Layout::Normal | Layout::Grows) {
        ev.push(span);
    }
    let mut marks = Vec::new();
    for i in 0..5 {
        let t = t0 + 100.0 * i as f64;
        let name = match layout {
            Layout::Forward => "step[DECODE bs=1]".to_string(),
            _ => format!("ProfilerStep#{i}"),
        };
        let mark = format!(
            r#"{{"ph":"X","cat":"user_annotation","name":"{name}","pid":100,"tid":1,"ts":{t:.3},"dur":90}}"#
        );
        if matches!(layout, Layout::StepsLast) {
            marks.push(mark);
        } else {
            ev.push(mark);
        }
        ev.push(format!(r#"{{"ph":"X","cat":"cpu_op","name":"op{i}","pid":100,"tid":1,"ts":{:.3},"dur":5,"args":{{"External id":{}}}}}"#, t + 1.0, 50 + i));
        ev.push(format!(r#"{{"ph":"X","cat":"kernel","name":"gemm{i}","pid":0,"tid":7,"ts":{:.3},"dur":40.5,"args":{{"correlation":{},"External id":{}}}}}"#, t + 10.0, 1000 + i, 50 + i));
        // Starts in step i, ends in step i + 1.
        ev.push(format!(
            r#"{{"ph":"X","cat":"kernel","name":"late{i}","pid":0,"tid":7,"ts":{:.3},"dur":30}}"#,
            t + 85.0
        ));
        ev.push(format!(r#"{{"ph":"i","cat":"cpu_instant_event","name":"mark{i}","pid":100,"tid":1,"ts":{:.3},"s":"t"}}"#, t + 95.0));
    }
    ev.extend(marks);
    if matches!(layout, Layout::Grows) {
        ev.push(format!(r#"{{"ph":"X","cat":"user_annotation","name":"ProfilerStep#2","pid":100,"tid":4,"ts":{:.3},"dur":150}}"#, t0 + 200.0));
    }
    format!(
        "{{\"schemaVersion\": 1,\n\"traceEvents\": [\n{}\n], \"baseTimeNanoseconds\": {base_ns}}}\n",
        ev.join(",\n")
    )
}

const LAYOUTS: [Layout; 6] = [
    Layout::Normal,
    Layout::StepsLast,
    Layout::Grows,
    Layout::Forward,
    Layout::Filler { span: false },
    Layout::Filler { span: true },
];

/// Six ranks, one per layout; rank k's clock base sits k × 1.5 ms after rank 0's and its
/// first step at ts 1000 + 37 k µs.
fn write_set(dir: &Path) -> Vec<PathBuf> {
    std::fs::create_dir_all(dir).unwrap();
    LAYOUTS
        .iter()
        .enumerate()
        .map(|(k, &layout)| {
            let p = dir.join(format!("p-TP-{k}.trace.json.gz"));
            let base = 1_700_000_000_000_000_000 + k as i64 * 1_500_000;
            write_gz(
                &p,
                rank_doc(base, 1000.0 + 37.0 * k as f64, layout).as_bytes(),
            );
            p
        })
        .collect()
}

fn merge(dir: &Path, out: &Path, opts: MergeOptions) -> MergeResult {
    let d = gather(Some(dir), &[], false, None, None).unwrap();
    merge_group(&d.groups[0], out, &opts).unwrap()
}

/// Runs the checker and asserts it found nothing wrong and the same shifts as the merge.
fn check(out: &Path, ins: &[PathBuf], res: &MergeResult, extra: &[&str]) -> serde_json::Value {
    let pairs: Vec<PathBuf> = res
        .ranks
        .iter()
        .zip(ins)
        .map(|(r, p)| PathBuf::from(format!("{}={}", r.label, p.display())))
        .collect();
    let mut args: Vec<&Path> = vec![out];
    args.extend(pairs.iter().map(PathBuf::as_path));
    let c = python("check_merge_steps.py", &args, extra);
    assert_eq!(c["problems"], serde_json::json!([]), "{c}");
    for r in &res.ranks {
        assert_eq!(
            Ns::new(c["shifts_ns"][&r.label].as_i64().unwrap()),
            r.shift,
            "{}",
            r.label
        );
        assert_eq!(r.written, c["kept"][&r.label].as_u64().unwrap() + 2);
    }
    c
}

#[test]
fn steps_found_while_writing_keep_what_the_checker_keeps() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("in");
    let ins = write_set(&dir);
    let out = tmp.path().join("none.json.gz");
    let res = merge(
        &dir,
        &out,
        MergeOptions {
            align: Align::None,
            steps: Some((1, 3)),
            ..Default::default()
        },
    );
    let c = check(&out, &ins, &res, &["--align", "none", "--steps", "1:3"]);
    // Read twice: the rank whose step 2 grew after its window was settled, and the rank whose
    // long span was decided before any step was seen (the held-back buffer was full).
    assert_eq!(res.redone, 2, "{c}");
    // Rank 0's window by hand: steps 1 and 2 span ts 1100..1290 µs.
    assert_eq!(
        c["windows_ns"]["[TP00]"],
        serde_json::json!([1_100_000, 1_290_000])
    );

    let out = tmp.path().join("base.json.gz");
    let res = merge(
        &dir,
        &out,
        MergeOptions {
            steps: Some((1, 3)),
            window: Some((Ns::new(1_150_000), Ns::new(6_000_000))),
            ..Default::default()
        },
    );
    check(
        &out,
        &ins,
        &res,
        &["--align", "base", "--steps", "1:3", "--window", "1150:6000"],
    );
    // Every rank but the first sits on a later base: all of them are re-read for their shift.
    assert_eq!(res.redone, 5);
}

#[test]
fn first_step_shifts_are_the_checkers() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("in");
    let ins = write_set(&dir);
    for steps in [None, Some((2, 4))] {
        let out = tmp.path().join("first.json.gz");
        let res = merge(
            &dir,
            &out,
            MergeOptions {
                align: Align::FirstStep,
                steps,
                ..Default::default()
            },
        );
        let mut extra = vec!["--align", "first-step"];
        if steps.is_some() {
            extra.extend(["--steps", "2:4"]);
        }
        let c = check(&out, &ins, &res, &extra);
        assert_eq!(res.redone, 0, "the scan pass knew shifts and windows: {c}");
        // By hand for rank 1: base 1.5 ms later, first step at 1037 µs vs rank 0's 1000 µs:
        // 1500 + 1037 - 1000 µs after rank 0 on the common base, moved back by that.
        assert_eq!(res.ranks[1].shift, Ns::new(1_500_000 - 1_537_000));
    }
}

/// A rank damaged inside an `args` (a missing comma between two of its keys, the brackets
/// still paired) with its earliest step after the damage: the scan pass, which skims `args`,
/// reads on past it and sees that step; the write pass, which validates, stops there. The
/// shifts and windows must come from what the write pass read.
#[test]
fn first_step_plans_from_what_is_written_when_args_are_damaged() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("in");
    std::fs::create_dir_all(&dir).unwrap();
    let base = 1_700_000_000_000_000_000i64;
    let doc = |events: &[&str]| {
        format!(
            "{{\"traceEvents\": [\n{}\n], \"baseTimeNanoseconds\": {base}}}\n",
            events.join(",\n")
        )
    };
    let good = doc(&[
        r#"{"ph":"X","cat":"user_annotation","name":"ProfilerStep#0","pid":100,"tid":1,"ts":10,"dur":90}"#,
        r#"{"ph":"X","cat":"cpu_op","name":"op","pid":100,"tid":1,"ts":20,"dur":5,"args":{"External id":1}}"#,
        r#"{"ph":"X","cat":"cpu_op","name":"op","pid":100,"tid":1,"ts":200,"dur":5,"args":{"External id":2}}"#,
    ]);
    let damaged = doc(&[
        r#"{"ph":"X","cat":"user_annotation","name":"ProfilerStep#1","pid":100,"tid":1,"ts":50,"dur":40}"#,
        r#"{"ph":"X","cat":"cpu_op","name":"op","pid":100,"tid":1,"ts":60,"dur":5,"args":{"External id":7}}"#,
        r#"{"ph":"X","cat":"cpu_op","name":"bad","pid":100,"tid":1,"ts":70,"dur":1,"args":{"External id":8 "Ev Idx":9}}"#,
        r#"{"ph":"X","cat":"user_annotation","name":"ProfilerStep#0","pid":100,"tid":1,"ts":5,"dur":40}"#,
        r#"{"ph":"X","cat":"cpu_op","name":"op","pid":100,"tid":1,"ts":6,"dur":5,"args":{"External id":9}}"#,
    ]);
    write_gz(&dir.join("dm-TP-0.trace.json.gz"), good.as_bytes());
    write_gz(&dir.join("dm-TP-1.trace.json.gz"), damaged.as_bytes());

    let out = tmp.path().join("first.json.gz");
    let opts = MergeOptions {
        align: Align::FirstStep,
        ..Default::default()
    };
    let res = merge(&dir, &out, opts.clone());
    // Rank 1 reads as far as the damage: 2 events, the first step it holds is #1 at 50 µs.
    assert_eq!(res.ranks[1].read, 2);
    assert!(res.ranks[1].damaged);
    // By hand: first steps at 10 µs (rank 0) and 50 µs (rank 1, same base): T = 10 µs, rank 0
    // stays, rank 1 moves 40 µs back. (From the skim's step #0 at 5 µs it would have been
    // -5 µs for rank 0 and 0 for rank 1.)
    assert_eq!(res.ranks[0].shift, Ns::new(0));
    assert_eq!(res.ranks[1].shift, Ns::new(-40_000));
    assert_eq!(
        res.redone, 2,
        "both ranks were written with the skim's shifts first"
    );
    let mut steps = Vec::new();
    rankprof::trace::read_trace(&out, |ev| {
        if ev.name.raw().starts_with("ProfilerStep") {
            steps.push((ev.pid.to_string(), ev.name.to_string(), ev.ts.unwrap()));
        }
    })
    .unwrap();
    steps.sort();
    assert_eq!(
        steps,
        [
            (
                "[TP00] 100".into(),
                "ProfilerStep#0".into(),
                Ns::new(10_000)
            ),
            (
                "[TP01] 100".into(),
                "ProfilerStep#1".into(),
                Ns::new(10_000)
            ),
        ]
    );

    // With --steps 0:1: the skim saw rank 1's step 0; what was written holds none, so the
    // rank is kept whole (its 2 events) and said so, and rank 0 keeps its step 0's span only.
    let out = tmp.path().join("steps.json.gz");
    let res = merge(
        &dir,
        &out,
        MergeOptions {
            steps: Some((0, 1)),
            ..opts
        },
    );
    assert_eq!(res.ranks[1].shift, Ns::new(-40_000));
    assert_eq!(res.ranks[1].written, 2);
    assert_eq!(
        res.ranks[0].written, 2,
        "step 0 spans 10..100 µs: the op at 200 is out"
    );
    assert!(
        res.notes
            .iter()
            .any(|n| n == "[TP01]: no steps 0:1 found; rank kept whole"),
        "{:?}",
        res.notes
    );
}
