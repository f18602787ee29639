//! The HTML report in a real browser: headless Chromium loads the file (network off), takes a
//! screenshot and dumps the DOM it built; the page must render and hold the heatmaps, the
//! verdict and the tables. Skipped, loudly, when no Chromium is installed (CI installs it).

mod common;

use std::path::PathBuf;
use std::process::Command;

use common::Planted;

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

    let png = out.path().join("shot.png");
    let profile = out.path().join("chromium-profile");
    let url = format!("file://{}", html.display());
    let o = Command::new(&browser)
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
    let dom = String::from_utf8_lossy(&o.stdout);
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
    // Keep the screenshot for people to look at.
    let keep = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("analyze-report.png");
    let _ = std::fs::copy(&png, keep);
}
