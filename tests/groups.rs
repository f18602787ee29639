//! Views that stay readable at 1,024 ranks (#11): 1,024 small synthetic ranks (DP 128 × TP 8,
//! generated into a temp dir) with a planted slow rank (TP05-DP09, ×1.6 compute) and a planted
//! heavy rank (TP02-DP100, 2× the tokens). The grouped terminal report must name both and stay
//! short; the group figures must equal an independent computation (tests/check_groups.py,
//! from the JSON's per-rank records); the HTML report must stay under 5 MB and render in
//! headless Chromium in under 2 s (skipped, loudly, without node / Chromium / puppeteer-core).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use rankprof::analyze::reduce::groups::Dim;
use rankprof::analyze::{analyze, Analysis, AnalyzeOptions};
use rankprof::report::groups::View;
use rankprof::report::terminal::render_view;
use rankprof::synth::{write_set, Heavy, Slow, SynthOptions};
use serde_json::Value;

const SLOW: &str = "TP05-DP09";
const HEAVY: &str = "TP02-DP100";

fn synth(dir: &Path, tp: u32, dp: u32, ep: u32, plant: bool) -> Analysis {
    let cfg = SynthOptions {
        tp,
        dp,
        ep,
        steps: 4,
        layers: 1,
        same_batches: true,
        slow: plant.then_some(Slow {
            rank: 9 * 8 + 5,
            factor: 1.6,
            from_step: 0,
            class: None,
        }),
        heavy: plant.then_some(Heavy {
            rank: 100 * 8 + 2,
            factor: 2.0,
        }),
        ..SynthOptions::default()
    };
    write_set(&cfg, dir).unwrap();
    analyze(&AnalyzeOptions {
        profile_dir: Some(dir.to_path_buf()),
        ..Default::default()
    })
    .unwrap()
}

#[test]
fn grouped_views_at_1024_ranks() {
    let d = tempfile::tempdir().unwrap();
    let a = synth(d.path(), 8, 128, 1, true);
    assert_eq!(a.ranks.len(), 1024);
    terminal_names_the_planted_ranks_compactly(&a);
    figures_match_the_independent_checker(&a, d.path());
    html_is_small_and_renders(&a);
}

fn terminal_names_the_planted_ranks_compactly(a: &Analysis) {
    let g = &a.groups;
    let top: Vec<&str> = g.outliers.iter().take(2).map(|o| o.rank.as_str()).collect();
    assert!(
        top.contains(&SLOW) && top.contains(&HEAVY),
        "top outliers {top:?}"
    );
    let dp = g.dim(Dim::Dp).expect("DP groups");
    assert_eq!(dp.groups.len(), 128);
    assert!(dp.groups.iter().all(|x| x.ranks == 8));
    assert_eq!(dp.groups[9].members, "TP00–TP07");
    assert_eq!(g.dim(Dim::Tp).map(|t| t.groups.len()), Some(8));
    // Auto: grouped above 32 ranks.
    let text = render_view(a, View::Auto, None);
    assert!(
        text.contains("1024 ranks: distribution over ranks"),
        "{text}"
    );
    assert!(text.contains("By DP replica (the 10 of 128"), "{text}");
    for want in [SLOW, HEAVY, "DP100", "DP09"] {
        assert!(text.contains(want), "the report does not name {want}");
    }
    let lines = text.lines().count();
    assert!(lines < 250, "{lines} lines");
    // No line names more than a handful of replicas or ranks.
    let re = regex::Regex::new(r"DP\d+").unwrap();
    for l in text.lines() {
        assert!(re.find_iter(l).count() <= 8, "a long list: {l}");
    }
    // Bounded, whatever the number of ranks (the first line names its cost's parts, "0.15 ms
    // more gpu work, 0.03 ms other causes", since 2026-12-02: 421 bytes here).
    for l in &a.verdict.lines {
        assert!(l.len() < 480, "verdict line of {} bytes: {l}", l.len());
    }
    // Forced either way; --group-by tp.
    let ranks = render_view(a, View::Ranks, None);
    assert!(ranks.lines().count() > 1024 && ranks.contains("Rank summary"));
    let tp = render_view(a, View::Grouped, Some(Dim::Tp));
    assert!(tp.contains("By TP rank (8 groups"), "{tp}");
}

fn figures_match_the_independent_checker(a: &Analysis, dir: &Path) {
    let json = dir.join("analysis.json");
    std::fs::write(&json, rankprof::report::formats::json(a).unwrap()).unwrap();
    let c = common::python("check_groups.py", &[&json], &[]);
    let close = |x: f64, y: &Value, what: &str| {
        let y = y.as_f64().unwrap_or_else(|| panic!("{what}: {y}"));
        assert!(
            (x - y).abs() <= 1e-6 * y.abs().max(1.0),
            "{what}: {x} vs {y}"
        );
    };
    let dist = |d: &rankprof::analyze::reduce::groups::Dist, c: &Value, what: &str| {
        for (k, v) in [
            ("min", d.min),
            ("p50", d.p50),
            ("p90", d.p90),
            ("max", d.max),
            ("mean", d.mean),
        ] {
            close(v, &c[k], &format!("{what}.{k}"));
        }
    };
    dist(&a.groups.work, &c["work"], "work");
    dist(&a.groups.busy, &c["busy"], "busy");
    let out: Vec<&str> = a.groups.outliers.iter().map(|o| o.rank.as_str()).collect();
    let want: Vec<&str> = c["outliers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(out, want);
    for o in &a.groups.outliers {
        close(o.vs_peers_pct, &c["vs_peers_pct"][&o.rank], &o.rank);
    }
    let dp = a.groups.dim(Dim::Dp).unwrap();
    assert_eq!(dp.groups.len(), c["dp"].as_object().unwrap().len());
    for g in &dp.groups {
        let cg = &c["dp"][&g.name];
        assert_eq!(cg["ranks"], g.ranks, "{}", g.name);
        assert_eq!(cg["busiest"], g.slowest.as_str(), "{}", g.name);
        dist(&g.work, &cg["work"], &g.name);
        close(g.vs_median_pct, &cg["vs_median_pct"], &g.name);
    }
    // The JSON keeps every rank, and gains the groups as flat records.
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["ranks"].as_array().unwrap().len(), 1024);
    let recs = v["groups"]["dims"].as_array().unwrap();
    assert_eq!(recs.iter().filter(|r| r["dim"] == "dp").count(), 128);
    assert_eq!(v["groups"]["grid"].as_array().unwrap().len(), 1024);
}

fn which(names: &[&str]) -> Option<PathBuf> {
    names.iter().find_map(|name| {
        let out = Command::new("which").arg(name).output().ok()?;
        let p = String::from_utf8_lossy(&out.stdout).trim().to_string();
        (out.status.success() && !p.is_empty()).then(|| PathBuf::from(p))
    })
}

fn html_is_small_and_renders(a: &Analysis) {
    let html = rankprof::report::html::render(a);
    assert!(html.len() <= 5 << 20, "{} bytes", html.len());
    for id in ["grid-work", "heat-steps", "heat-classes"] {
        assert!(html.contains(&format!("<canvas id=\"{id}\"")), "no {id}");
    }
    let viewers = common::manifest("tests/viewers");
    let node = which(&["node"]);
    let chromium = which(&["chromium", "chromium-browser", "google-chrome"]);
    let puppeteer = viewers.join("node_modules/puppeteer-core/package.json");
    let (Some(node), Some(chromium), true) = (node, chromium, puppeteer.exists()) else {
        eprintln!(
            "SKIPPED html render check at 1,024 ranks: needs node, chromium and \
             tests/viewers/node_modules (run tests/viewers/install.sh)"
        );
        return;
    };
    let out = tempfile::tempdir().unwrap();
    let file = out.path().join("report.html");
    std::fs::write(&file, &html).unwrap();
    let o = Command::new(node)
        .arg(viewers.join("html_report.mjs"))
        .arg("--chromium")
        .arg(chromium)
        .arg("--html")
        .arg(&file)
        .arg("--out")
        .arg(out.path())
        .output()
        .expect("node runs");
    assert!(
        o.status.success(),
        "html_report.mjs failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let r: Value = serde_json::from_slice(&o.stdout).expect("JSON");
    // Speed is a benchmark, not a timed test (the goal, 2 s on an idle machine, is measured
    // and reported by hand, docs/benchmarks.md, "Many ranks"): the time is printed, and the assertion only
    // guards against a page that never finishes loading.
    eprintln!(
        "HTML at 1,024 ranks: {} bytes, rendered in {} ms ({} ms of main-thread time)",
        html.len(),
        r["render_ms"],
        r["task_ms"]
    );
    assert_eq!(r["errors"].as_array().map(Vec::len), Some(0), "{r}");
    assert!(r["render_ms"].as_f64().unwrap() <= 60_000.0, "{r}");
    let canvases = r["canvases"].as_array().unwrap();
    assert_eq!(canvases.len(), 3, "{r}");
    for c in canvases {
        assert!(c["painted"].as_u64().unwrap() > 10, "blank canvas: {c}");
    }
    let png = std::fs::read(r["png"].as_str().unwrap()).unwrap();
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 10_000,
        "{} bytes",
        png.len()
    );
}

/// EP groups: TP 8 split into EP 4 (SGLang: EP rank = TP rank / 2), 4 replicas: each EP group
/// holds 2 TP ranks of every replica.
#[test]
fn ep_groups_follow_the_ep_rank() {
    let d = tempfile::tempdir().unwrap();
    let a = synth(d.path(), 8, 4, 4, false);
    assert_eq!(a.ranks.len(), 32);
    let ep = a.groups.dim(Dim::Ep).expect("EP groups");
    let names: Vec<&str> = ep.groups.iter().map(|g| g.name.as_str()).collect();
    assert_eq!(names, ["EP0", "EP1", "EP2", "EP3"]);
    assert!(ep.groups.iter().all(|g| g.ranks == 8));
    // 32 ranks: one row per rank unless asked.
    assert!(render_view(&a, View::Auto, None).contains("Rank summary"));
    let t = render_view(&a, View::Grouped, Some(Dim::Ep));
    assert!(t.contains("By EP group (4 groups"), "{t}");
}

/// #43 item 7: 64 ranks (DP 8 × TP 8) whose replicas carry different loads, rank 37 ×1.3 on
/// all compute (the issue's `synth --dp 8 --tp 8 --steps 4 --layers 2 --slow-rank 37`). The
/// verdict names TP05-DP04; the outlier table measures each rank against its replica's other
/// ranks, as the verdict does, so it lists TP05-DP04 (first), and the HTML work map colours
/// its cell full red (≥ +25 %). Measured against the median of all ranks, DP04's light load
/// hid it (-0.5 %) behind the healthy ranks of DP04 and DP03.
#[test]
fn the_verdicts_rank_leads_the_outliers_within_its_replica() {
    let d = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_rankprof"))
        .args([
            "synth", "--dp", "8", "--tp", "8", "--steps", "4", "--layers", "2",
        ])
        .args(["--slow-rank", "37", "-o"])
        .arg(d.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let a = analyze(&AnalyzeOptions {
        profile_dir: Some(d.path().to_path_buf()),
        ..Default::default()
    })
    .unwrap();
    assert_eq!(a.verdict.slowest.as_deref(), Some("TP05-DP04"));
    assert!(a.verdict.lines.iter().any(|l| l.contains("TP05-DP04")));
    let g = &a.groups;
    assert_eq!(g.outliers[0].rank, "TP05-DP04");
    // Independently: its work over the mean of DP04's seven other ranks.
    let idx = |l: &str| a.ranks.iter().position(|r| r.figures.rank == l).unwrap();
    let peers: Vec<f64> = (0..8)
        .filter(|&t| t != 5)
        .map(|t| g.work_ns[idx(&format!("TP{t:02}-DP04"))] as f64)
        .collect();
    let want = 100.0 * (g.work_ns[idx("TP05-DP04")] as f64 * 7.0 / peers.iter().sum::<f64>() - 1.0);
    assert!((g.outliers[0].vs_peers_pct - want).abs() < 1e-9);
    assert!((25.0..35.0).contains(&want), "planted ×1.3: {want}");
    // The terminal's outlier table lists it.
    let text = render_view(&a, View::Auto, None);
    let table: String = text
        .lines()
        .skip_while(|l| !l.starts_with("Top 10 outlier ranks"))
        .take_while(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("\n");
    assert!(table.contains("its replica's other ranks"), "{table}");
    assert!(table.contains("│ TP05-DP04"), "{table}");
    // The HTML grid: the DP04 × TP5 cell at full red; every other cell within ±5 %.
    let html = rankprof::report::html::render(&a);
    let data = html
        .split("id=\"grid-work-data\">")
        .nth(1)
        .and_then(|s| s.split("</script>").next())
        .expect("grid-work data");
    let v: Value = serde_json::from_str(data).unwrap();
    let rows: Vec<&str> = v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap())
        .collect();
    let cols: Vec<&str> = v["cols"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap())
        .collect();
    let (r, c) = (
        rows.iter().position(|&x| x == "DP04").unwrap(),
        cols.iter().position(|&x| x == "TP5").unwrap(),
    );
    for (i, row) in v["dev"].as_array().unwrap().iter().enumerate() {
        for (j, p) in row.as_array().unwrap().iter().enumerate() {
            let p = p.as_i64().unwrap();
            if (i, j) == (r, c) {
                assert!(p >= 250, "the culprit's cell: {p} ‰");
            } else {
                assert!(p.abs() <= 50, "{} × {}: {p} ‰", rows[i], cols[j]);
            }
        }
    }
    assert!(html.contains("colour: vs the mean of its replica&#39;s other ranks"));
}

/// #43 item 7, the other half: a rank the verdict names first for a late step start (its work
/// is even, so it is no outlier by work) is still listed, second, after the rank furthest above
/// its peers.
#[test]
fn the_verdicts_lead_is_listed_even_with_even_work() {
    let d = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_rankprof"))
        .args([
            "synth", "--dp", "8", "--tp", "8", "--steps", "4", "--layers", "2",
        ])
        .args(["--late-start-rank", "20", "-o"])
        .arg(d.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let a = analyze(&AnalyzeOptions {
        profile_dir: Some(d.path().to_path_buf()),
        ..Default::default()
    })
    .unwrap();
    assert_eq!(a.verdict.lead.as_deref(), Some("TP04-DP02"));
    let o = &a.groups.outliers[1];
    assert_eq!(o.rank, "TP04-DP02");
    assert!(o.vs_peers_pct.abs() < 5.0, "even work: {}", o.vs_peers_pct);
    let text = render_view(&a, View::Auto, None);
    assert!(text.contains("│ TP04-DP02"), "{text}");
}
