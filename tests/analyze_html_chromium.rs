//! The HTML report in a real browser: headless Chromium loads the file (network off), takes a
//! screenshot and dumps the DOM it built; the page must render and hold the heatmaps with their
//! colour scales, the verdict and the tables; a click on a column header (a line of script the
//! test adds after the report's own) sorts the table; a CPU-only merged trace is called "ops",
//! not "kernels", and the report names the merged trace and how to open it. Skipped, loudly,
//! when no Chromium is installed (CI installs it).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{shared, Planted};
use rankprof::merge::{gather, merge_group, MergeOptions};

fn chromium() -> Option<PathBuf> {
    for name in [
        "chromium",
        "chromium-browser",
        "google-chrome",
        "google-chrome-stable",
    ] {
        if let Ok(out) = Command::new("which").arg(name).output() {
            if out.status.success() {
                let p = String::from_utf8_lossy(&out.stdout).trim().to_string();
                if !p.is_empty() {
                    return Some(PathBuf::from(p));
                }
            }
        }
    }
    None
}

/// Loads `html` in headless Chromium: the DOM it built and its screenshot (in `dir`).
fn load(browser: &Path, html: &Path, dir: &Path) -> (String, PathBuf) {
    let png = dir.join("shot.png");
    let profile = dir.join("chromium-profile");
    let url = format!("file://{}", html.display());
    let o = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--window-size=1400,1800",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("--screenshot={}", png.display()))
        .arg("--dump-dom")
        .arg(&url)
        .output()
        .expect("chromium runs");
    assert!(
        o.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    (String::from_utf8_lossy(&o.stdout).into_owned(), png)
}

/// The text of every cell in column `col` of table `id`'s body, in DOM order.
fn column(dom: &str, id: &str, col: usize) -> Vec<String> {
    let table = dom
        .split(&format!("<table id=\"{id}\""))
        .nth(1)
        .unwrap_or_else(|| panic!("no table {id}"));
    let body = table
        .split("<tbody>")
        .nth(1)
        .unwrap()
        .split("</tbody>")
        .next()
        .unwrap();
    body.split("<tr>")
        .skip(1)
        .map(|row| {
            let cell = row.split("<td").nth(col + 1).unwrap();
            let text = cell.split_once('>').unwrap().1;
            text.split("</td>").next().unwrap().to_string()
        })
        .collect()
}

/// The texts of every `<tag>` element (`h2`, `th`) of the DOM.
fn texts(dom: &str, tag: &str) -> Vec<String> {
    dom.split(&format!("<{tag}"))
        .skip(1)
        .map(|t| {
            let inner = t.split_once('>').unwrap().1;
            inner
                .split(&format!("</{tag}>"))
                .next()
                .unwrap()
                .to_string()
        })
        .collect()
}

fn says_kernel(s: &str) -> bool {
    s.split(|c: char| !c.is_alphanumeric() && c != '_')
        .any(|w| w.eq_ignore_ascii_case("kernel") || w.eq_ignore_ascii_case("kernels"))
}

#[test]
fn html_report_renders_in_headless_chromium() {
    let Some(browser) = chromium() else {
        eprintln!("SKIPPED html_report_renders_in_headless_chromium: no chromium on PATH (CI installs it: apt-get install chromium)");
        return;
    };
    let d = tempfile::tempdir().unwrap();
    Planted {
        ranks: 4,
        steps: 8,
        slow: 2,
        from: 3,
        factor: 1.5,
    }
    .write_ranks(d.path(), true);
    let out = tempfile::tempdir().unwrap();
    let html = out.path().join("report.html");
    let args = rankprof::analyze::AnalyzeOptions {
        profile_dir: Some(d.path().to_path_buf()),
        ..Default::default()
    };
    let a = rankprof::analyze::analyze(&args).unwrap();
    std::fs::write(&html, rankprof::report::html::render(&a)).unwrap();

    let (dom, png) = load(&browser, &html, out.path());
    let shot = std::fs::read(&png).expect("a screenshot");
    assert!(shot.starts_with(b"\x89PNG\r\n\x1a\n"), "not a PNG");
    assert!(
        shot.len() > 10_000,
        "a blank screenshot? {} bytes",
        shot.len()
    );
    // The DOM the browser built holds the report's parts.
    for want in [
        "id=\"verdict\" class=\"imbalanced\"",
        "<svg id=\"heat-classes\"",
        "<svg id=\"heat-steps\"",
        "<table id=\"t-ranks\"",
        "<table id=\"t-kernels\"",
        "<table id=\"t-steps\"",
        "<table id=\"t-collectives_ranks\"",
        "rank TP02 slower by 27 % from step 3",
    ] {
        assert!(dom.contains(want), "the DOM lacks {want}");
    }
    // 4 ranks x 7 classes with time > 0 in the class heatmap; 4 x 8 in the step heatmap.
    let rects = |id: &str| {
        let start = dom.find(&format!("<svg id=\"{id}\"")).unwrap();
        let end = start + dom[start..].find("</svg>").unwrap();
        dom[start..end].matches("<rect").count()
    };
    let classes_with_time = a
        .classes
        .classes
        .iter()
        .enumerate()
        .filter(|(k, _)| a.classes.ns.iter().any(|r| r[*k] > 0))
        .count();
    assert_eq!(rects("heat-classes"), 4 * classes_with_time);
    assert_eq!(rects("heat-steps"), 4 * 8);
    let rows = dom
        .split("<table id=\"t-ranks\"")
        .nth(1)
        .unwrap()
        .split("</table>")
        .next()
        .unwrap()
        .matches("<tr>")
        .count();
    assert_eq!(rows, 1 + 4);
    // Each heatmap has its colour scale: 11 swatches from -25 % to +25 %, the ends labelled.
    for id in ["heat-classes-legend", "heat-steps-legend"] {
        let start = dom
            .find(&format!("<svg id=\"{id}\""))
            .unwrap_or_else(|| panic!("no {id}"));
        let svg = &dom[start..start + dom[start..].find("</svg>").unwrap()];
        assert_eq!(svg.matches("<rect").count(), 11, "{id}");
        for want in [
            "≤ −25 %",
            "0 %",
            "≥ +25 %",
            "rgb(255,255,255)",
            "rgb(255,100,80)",
        ] {
            assert!(svg.contains(want), "{id} lacks {want}");
        }
    }
    // GPU traces say kernels; no merged trace was read or written, so none is named.
    assert!(dom.contains("<span id=\"source\">figures from GPU kernels</span>"));
    assert!(texts(&dom, "h2")
        .iter()
        .any(|h| h.starts_with("Kernel classes")));
    assert!(!dom.contains("id=\"merged-trace\""));
    // Keep the screenshot for people to look at.
    let keep = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("analyze-report.png");
    let _ = std::fs::copy(&png, keep);

    // Sorting: a click on "compute" in the rank summary sorts it largest first; two clicks on
    // "rank" in the class table sort it Z to A.
    let report = std::fs::read_to_string(&html).unwrap();
    let click = r##"<script>
function header(table, name) {
  return Array.prototype.find.call(document.querySelectorAll("#" + table + " th"),
    function (th) { return th.textContent === name; });
}
header("t-ranks", "compute").click();
header("t-classes", "rank").click();
header("t-classes", "rank").click();
</script></body>"##;
    let clicked = out.path().join("clicked.html");
    std::fs::write(&clicked, report.replace("</body>", click)).unwrap();
    let (sorted, _) = load(&browser, &clicked, out.path());
    let before = column(&dom, "t-ranks", 0);
    let after = column(&sorted, "t-ranks", 0);
    // The expected order, from the analysis: compute as shown (ms, 2 decimals), largest first,
    // ties in table order.
    let mut want: Vec<(f64, String)> = a
        .ranks
        .iter()
        .map(|r| {
            (
                format!("{:.2}", r.figures.compute_ns.get() as f64 / 1e6)
                    .parse()
                    .unwrap(),
                r.figures.rank.clone(),
            )
        })
        .collect();
    want.sort_by(|x, y| y.0.total_cmp(&x.0));
    let want: Vec<String> = want.into_iter().map(|(_, r)| r).collect();
    assert_eq!(after, want, "t-ranks sorted by compute");
    assert_ne!(after, before, "the click changed the order");
    assert_eq!(after[0], "TP02", "the slow rank computes most");
    assert!(sorted.contains("aria-sort=\"descending\">compute</th>"));
    let mut z_to_a = column(&dom, "t-classes", 0);
    z_to_a.sort();
    z_to_a.reverse();
    assert_eq!(
        column(&sorted, "t-classes", 0),
        z_to_a,
        "t-classes by rank, Z to A"
    );
}

/// A CPU-only merged trace (real SGLang on CPU): the report speaks of ops and names the merged
/// trace with how to open it.
#[test]
fn html_report_of_a_cpu_merged_trace_says_ops_and_names_the_trace() {
    let Some(browser) = chromium() else {
        eprintln!("SKIPPED html_report_of_a_cpu_merged_trace_says_ops_and_names_the_trace: no chromium on PATH (CI installs it: apt-get install chromium)");
        return;
    };
    let out = tempfile::tempdir().unwrap();
    let merged = out.path().join("merged-tp2.trace.json.gz");
    let d = gather(Some(&shared("sglang-cpu/tp2")), &[], false, None, None).unwrap();
    merge_group(&d.groups[0], &merged, &MergeOptions::default()).unwrap();
    let args = rankprof::analyze::AnalyzeOptions {
        files: vec![merged.clone()],
        ..Default::default()
    };
    let a = rankprof::analyze::analyze(&args).unwrap();
    assert_eq!(a.source, "cpu");
    assert_eq!(a.merged_trace.as_deref(), Some(merged.to_str().unwrap()));
    let html = out.path().join("report.html");
    std::fs::write(&html, rankprof::report::html::render(&a)).unwrap();
    let (dom, _) = load(&browser, &html, out.path());

    assert!(
        dom.contains("<span id=\"source\">CPU-only trace: figures from CPU ops (self time)</span>")
    );
    let heads: Vec<String> = texts(&dom, "h2")
        .into_iter()
        .chain(texts(&dom, "th"))
        .collect();
    assert!(heads.len() > 20, "{heads:?}");
    for h in &heads {
        assert!(!says_kernel(h), "a CPU-only report says kernel: {h}");
    }
    assert!(heads.iter().any(|h| h.starts_with("CPU op classes")));
    assert!(
        heads.iter().any(|h| h.contains(">op<") || h == "op"),
        "{heads:?}"
    );
    let p = dom
        .split("<p id=\"merged-trace\">")
        .nth(1)
        .expect("the merged trace is named")
        .split("</p>")
        .next()
        .unwrap();
    assert!(p.contains("<code>merged-tp2.trace.json.gz</code>"), "{p}");
    assert!(
        p.contains(&format!("<code>{}</code>", out.path().display())),
        "{p}"
    );
    assert!(
        p.contains("https://ui.perfetto.dev") && p.contains("chrome://tracing"),
        "{p}"
    );
}
