//! `rankprof demo`: the main job on the bundled `fixtures/` — list the profiles, merge each one
//! (into a scratch directory, never into fixtures/), then analyze them, through
//! [`crate::pipeline`].

use std::path::PathBuf;

use anyhow::{bail, Result};

use crate::cli::synth::DemoArgs;
use crate::cli::LsArgs;
use crate::exit;
use crate::pipeline::{run_group, AnalyzeInput, PipelineOptions};
use crate::report::analysis::AnalysisReport;
use crate::report::merged::MergeReport;
use crate::report::Format;
use crate::trace::discover;
use crate::trace::write::writer::write_atomic_bytes;

pub(crate) fn run(args: &DemoArgs) -> Result<i32> {
    let fixtures = args
        .fixtures
        .clone()
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures"));
    if !fixtures.is_dir() {
        bail!(
            "{}: no fixtures directory (give --fixtures DIR)",
            fixtures.display()
        );
    }
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/demo"));
    std::fs::create_dir_all(&out)?;
    super::outln!(
        "== rankprof ls {} --recursive --count\n",
        fixtures.display()
    )?;
    let mut code = super::ls::run(&LsArgs {
        dir: fixtures.clone(),
        recursive: true,
        count: true,
        rank_from: None,
        format: crate::cli::ReportFormat::Table,
        json: false,
    })?;
    let found = discover(&fixtures, true)?;
    let mut opts = PipelineOptions {
        analyze_input: AnalyzeInput::Ranks,
        ..PipelineOptions::default()
    };
    opts.analyze.top_n = 8;
    let mut runs = Vec::new();
    let mut used = std::collections::HashSet::new();
    for g in &found.groups {
        // Profiles of one name in several folders (the real-gloo recordings) each get their
        // folder's name as a subfolder, so that none overwrites another's outputs.
        let mut dest = out.join(g.merged_name());
        if !used.insert(dest.clone()) {
            let sub = out.join(g.dir.file_name().unwrap_or_default());
            std::fs::create_dir_all(&sub)?;
            dest = sub.join(g.merged_name());
        }
        super::outln!(
            "\n== rankprof merge --profile-dir {} --profile-id {} -o {}\n",
            g.dir.display(),
            g.profile_id,
            dest.display()
        )?;
        let run = run_group(g, &dest, &opts);
        let html = dest.with_file_name(g.merged_name().replace(".trace.json.gz", ".html"));
        let res = run.merge.as_ref().map_err(|e| anyhow::anyhow!("{e:#}"))?;
        let one = MergeReport {
            merged: vec![super::merge::merged(g, res, run.merge_secs)],
            notes: &[],
        };
        crate::report::print(&one, Format::Terminal)?;
        code = exit::worst(code, res.outcome().code());
        runs.push((run, html));
    }
    for (run, html) in runs {
        let g = &run.group;
        super::outln!(
            "\n== analyze-profile --profile-dir {} --profile-id {} --all-ranks --html {}\n",
            g.dir.display(),
            g.profile_id,
            html.display()
        )?;
        let Some(a) = run.analysis else { continue };
        let a = a?;
        for n in &a.notes {
            eprintln!("{}", crate::report::note(n));
        }
        crate::report::print(&AnalysisReport::new(&a), Format::Terminal)?;
        write_atomic_bytes(&html, crate::report::html::render(&a).as_bytes())?;
        eprintln!("wrote {}", html.display());
        code = exit::worst(code, if a.damaged { exit::PARTIAL } else { exit::OK });
    }
    super::outln!(
        "\nmerged traces and HTML reports are in {} (open the traces in https://ui.perfetto.dev)",
        out.display()
    )?;
    Ok(code)
}
