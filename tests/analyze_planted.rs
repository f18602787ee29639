//! `analyze` on small hand-made profiles with a planted imbalance (see `common::Planted`): the
//! tool must name the planted rank, class and onset step, and every figure must equal both the
//! arithmetic of the plant (computed here from its parameters) and the Python checker.

mod common;

use common::{
    analyze_files, assert_matches_checker, checker, Planted, LAG_NS, NORM_NS, STEP_NS, TAIL_NS,
};
use rankprof::analyze::Analysis;

fn plant() -> Planted {
    Planted {
        ranks: 4,
        steps: 8,
        slow: 2,
        from: 3,
        factor: 1.5,
    }
}

fn check_plant(p: &Planted, a: &Analysis) {
    let labels: Vec<String> = (0..p.ranks).map(|r| format!("TP{r:02}")).collect();
    assert_eq!(
        a.ranks
            .iter()
            .map(|r| r.figures.rank.clone())
            .collect::<Vec<_>>(),
        labels
    );
    // Rank summary, from the plant's arithmetic.
    for r in 0..p.ranks {
        let s = &a.ranks[r];
        let work: i64 = (0..p.steps).map(|st| p.work(r, st)).sum();
        let comm: i64 = (0..p.steps)
            .map(|st| {
                let (x, y) = p.allreduce(r, st);
                y - x
            })
            .sum();
        assert_eq!(s.figures.compute_ns.get(), work, "rank {r} compute");
        assert_eq!(s.figures.comm_ns.get(), comm, "rank {r} comm");
        // The all-reduce starts when compute ends: nothing overlaps.
        assert_eq!(s.figures.exposed_comm_ns.get(), comm, "rank {r} exposed");
        assert_eq!(s.figures.busy_ns.get(), work + comm, "rank {r} busy");
        let first = p.gpu_start(r, 0);
        let last = p.allreduce(r, p.steps - 1).1;
        assert_eq!(s.figures.span_ns.get(), last - first, "rank {r} span");
        assert_eq!(s.figures.kernels, 4 * p.steps as u64);
        assert_eq!(s.figures.device.as_deref(), Some("NVIDIA H100 80GB HBM3"));
    }
    // Per-step work: the GPU runs LAG behind the CPU, so only the launch correlation puts the
    // kernels into the right steps.
    const _: () = assert!(
        LAG_NS + 5_500_000 > STEP_NS,
        "the plant must cross step windows"
    );
    assert_eq!(a.steps.rows.len(), p.steps);
    for (st, row) in a.steps.rows.iter().enumerate() {
        assert_eq!(row.step, st.to_string());
        for r in 0..p.ranks {
            assert_eq!(
                row.work_ns[r].get(),
                p.work(r, st),
                "step {st} rank {r} work"
            );
            let (x, y) = p.allreduce(r, st);
            assert_eq!(
                row.busy_ns[r].get(),
                p.work(r, st) + (y - x),
                "step {st} rank {r} busy"
            );
            assert_eq!(row.dur_ns[r].get(), STEP_NS);
        }
    }
    // The onset: rank 2, step 3, at t = 30 ms, 1.5 x 3 ms + 2.5 ms over 5.5 ms = +27.3 %.
    let o = a.steps.onset.as_ref().expect("an onset");
    assert_eq!((o.rank.as_str(), o.step.as_str()), ("TP02", "3"));
    assert!((o.t_ms - 30.0).abs() < 1e-9, "{}", o.t_ms);
    let want = 100.0 * (7.0 / 5.5 - 1.0);
    assert!(
        (o.excess_pct - want).abs() < 1e-9,
        "{} vs {want}",
        o.excess_pct
    );
    assert_eq!(
        o.sentence(),
        "rank TP02 slower by 27 % from step 3 (t = 30.0 ms) on"
    );
    // The verdict.
    let v = &a.verdict;
    assert!(!v.balanced);
    assert_eq!(v.slowest.as_deref(), Some("TP02"));
    let others = 8.0 * 5.5e6;
    let slow = 3.0 * 5.5e6 + 5.0 * 7.0e6;
    assert!((v.excess_pct - 100.0 * (slow / others - 1.0)).abs() < 1e-9);
    assert_eq!(v.classes.len(), 1, "{:?}", v.classes);
    assert_eq!(v.classes[0].class, "gemm");
    assert_eq!(v.classes[0].gap_ns.get(), 5 * 1_500_000);
    assert!(
        v.lines
            .iter()
            .any(|l| l.contains("rank TP02 slower by 27 % from step 3")),
        "{:?}",
        v.lines
    );
    // Collectives: per step the last to arrive is the rank with the latest compute end.
    let mut last = vec![0usize; p.ranks];
    let mut wait = vec![0i64; p.ranks];
    for st in 0..p.steps {
        let starts: Vec<i64> = (0..p.ranks).map(|r| p.allreduce(r, st).0).collect();
        let hi = *starts.iter().max().unwrap();
        last[starts.iter().position(|&x| x == hi).unwrap()] += 1;
        for r in 0..p.ranks {
            wait[r] += hi - starts[r];
        }
    }
    assert_eq!(last, [0, 0, 5, 3]);
    let c = &a.collectives;
    assert_eq!(c.matched, p.steps);
    assert_eq!(
        c.ranks.iter().map(|r| r.arrived_last).collect::<Vec<_>>(),
        last
    );
    assert_eq!(
        c.ranks.iter().map(|r| r.wait_ns.get()).collect::<Vec<_>>(),
        wait
    );
    assert_eq!(c.straggler.as_deref(), Some("TP02"));
    assert_eq!(c.groups.len(), 1);
    assert_eq!(c.groups[0].key, "pg 0 stream #0");
    assert_eq!(c.groups[0].name, "allreduce");
    // Rank 2 (jitter 2 µs, GEMM +1.5 ms) against rank 0 (jitter 0).
    assert_eq!(c.groups[0].max_skew_ns.get(), 1_500_000 + 2_000);
    // Top kernels: the GEMM is the most imbalanced, slowest on rank 2.
    let g = a.kernels.iter().find(|k| k.class == "gemm").unwrap();
    assert_eq!(g.slowest, "TP02");
    let totals: Vec<f64> = (0..p.ranks)
        .map(|r| (0..p.steps).map(|s| p.gemm(r, s) as f64).sum())
        .collect();
    let mean = totals.iter().sum::<f64>() / 4.0;
    assert!((g.max_over_mean - totals[2] / mean).abs() < 1e-12);
    let sd = (totals.iter().map(|t| (t - mean).powi(2)).sum::<f64>() / 4.0).sqrt();
    assert!((g.cv - sd / mean).abs() < 1e-12);
    let norm = a.kernels.iter().find(|k| k.class == "norm").unwrap();
    assert_eq!(norm.per_rank[0].total_ns.get(), NORM_NS * p.steps as i64);
    assert_eq!(norm.per_rank[0].count, p.steps as u64);
    let _ = TAIL_NS;
}

#[test]
fn planted_rank_class_and_onset_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let p = plant();
    p.write_ranks(dir.path(), true);
    let a = analyze_files(&[], |a| a.profile_dir = Some(dir.path().to_path_buf()));
    check_plant(&p, &a);
    assert_matches_checker(&a, &checker(&[], &["--dir", dir.path().to_str().unwrap()]));
}

#[test]
fn merged_trace_gives_the_same_answers() {
    let dir = tempfile::tempdir().unwrap();
    let p = plant();
    let m = p.write_merged(dir.path());
    let a = analyze_files(std::slice::from_ref(&m), |_| {});
    check_plant(&p, &a);
    assert_matches_checker(&a, &checker(&[m], &[]));
}

#[test]
fn plain_json_and_file_list_work_too() {
    let dir = tempfile::tempdir().unwrap();
    let p = plant();
    let files = p.write_ranks(dir.path(), false);
    let a = analyze_files(&files, |a| a.jobs = Some(1));
    check_plant(&p, &a);
}

#[test]
fn balanced_profile_is_called_balanced() {
    let dir = tempfile::tempdir().unwrap();
    let p = Planted {
        factor: 1.0,
        ..plant()
    };
    p.write_ranks(dir.path(), true);
    let a = analyze_files(&[], |a| a.profile_dir = Some(dir.path().to_path_buf()));
    assert!(a.verdict.balanced, "{:?}", a.verdict.lines);
    assert!(a.steps.onset.is_none());
    assert!(
        a.verdict.lines[0].starts_with("Balanced"),
        "{:?}",
        a.verdict.lines
    );
}

#[test]
fn threshold_above_the_plant_finds_no_onset() {
    let dir = tempfile::tempdir().unwrap();
    let p = plant();
    p.write_ranks(dir.path(), true);
    let a = analyze_files(&[], |a| {
        a.profile_dir = Some(dir.path().to_path_buf());
        a.threshold = 30.0;
    });
    assert!(a.steps.onset.is_none());
    // 17 % overall is still below 30 %: balanced at that threshold.
    assert!(a.verdict.balanced);
}

#[test]
fn one_rank_in_depth() {
    let dir = tempfile::tempdir().unwrap();
    let p = plant();
    p.write_ranks(dir.path(), true);
    let a = analyze_files(&[], |a| {
        a.profile_dir = Some(dir.path().to_path_buf());
        a.rank = Some(rankprof::analyze::RankSel::Index(2));
    });
    // The whole profile is analyzed (#43 item 6); the rank in depth and against its peers.
    assert_eq!(a.ranks.len(), 4);
    assert_eq!(a.drill.as_ref().map(|d| d.rank.as_str()), Some("TP02"));
    let d = a.depth.as_ref().expect("depth");
    assert_eq!(d.rank, "TP02");
    assert_eq!(d.steps.len(), p.steps);
    let gemm = d.kernels.iter().find(|k| k.class == "gemm").unwrap();
    assert_eq!(
        (gemm.min_ns.get(), gemm.max_ns.get(), gemm.count),
        (3_000_000, 4_500_000, 8)
    );
    assert_eq!(gemm.total_ns.get(), 3 * 3_000_000 + 5 * 4_500_000);
    let streams: Vec<(i64, u64)> = d.streams.iter().map(|s| (s.stream, s.ops)).collect();
    assert_eq!(streams, [(7, 24), (20, 8)]);
    let err = rankprof::analyze::analyze(&rankprof::analyze::AnalyzeOptions {
        profile_dir: Some(dir.path().to_path_buf()),
        rank: Some(rankprof::analyze::RankSel::Index(9)),
        ..Default::default()
    })
    .unwrap_err();
    assert!(err.to_string().contains("4 ranks"), "{err}");
    // The label the reports print picks the same rank, in any case and with brackets; an
    // unknown one is refused with the ranks there are.
    for label in ["TP02", "[tp02]"] {
        let b = analyze_files(&[], |a| {
            a.profile_dir = Some(dir.path().to_path_buf());
            a.rank = Some(rankprof::analyze::RankSel::parse(label));
        });
        assert_eq!(
            b.depth.as_ref().map(|d| d.rank.as_str()),
            Some("TP02"),
            "{label}"
        );
    }
    let err = rankprof::analyze::analyze(&rankprof::analyze::AnalyzeOptions {
        profile_dir: Some(dir.path().to_path_buf()),
        rank: Some(rankprof::analyze::RankSel::parse("TP01-DP01")),
        ..Default::default()
    })
    .unwrap_err();
    assert!(
        err.to_string().contains("no such rank") && err.to_string().contains("TP00"),
        "{err}"
    );
}

#[test]
fn custom_step_marker_and_class_rules() {
    let dir = tempfile::tempdir().unwrap();
    let p = plant();
    p.write_ranks(dir.path(), true);
    let rules = dir.path().join("rules.toml");
    std::fs::write(
        &rules,
        "[[rule]]\nclass = \"mygemm\"\npattern = \"xmma_gemm\"\n",
    )
    .unwrap();
    let a = analyze_files(&[], |a| {
        a.profile_dir = Some(dir.path().to_path_buf());
        a.step_marker = Some(r"^ProfilerStep#[0-9]+$".into());
        a.classes = Some(rules.clone());
    });
    assert_eq!(a.steps.source, "step-marker");
    assert_eq!(a.steps.rows.len(), p.steps);
    assert_eq!(a.verdict.classes[0].class, "mygemm");
    assert!(a.classes.classes.contains(&"mygemm".to_string()));
    // A marker that matches nothing: no steps, no onset, still a verdict.
    let b = analyze_files(&[], |a| {
        a.profile_dir = Some(dir.path().to_path_buf());
        a.step_marker = Some("nothing-like-this".into());
    });
    assert!(b.steps.rows.is_empty() && b.steps.onset.is_none());
    assert_eq!(b.verdict.slowest.as_deref(), Some("TP02"));
}
