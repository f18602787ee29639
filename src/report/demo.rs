//! `rankprof demo`: the main job on the bundled `fixtures/` — list the profiles, merge each one
//! (into a scratch directory, never into fixtures/), then analyze them.

use std::path::PathBuf;

use anyhow::{bail, Result};

use crate::cli::{AnalyzeArgs, Command, DemoArgs, LsArgs, MergeArgs};
use crate::commands::{self, exit};
use crate::trace::discover;

pub fn run(args: &DemoArgs) -> Result<i32> {
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
    println!(
        "== rankprof ls {} --recursive --count\n",
        fixtures.display()
    );
    let mut code = commands::run(Command::Ls(LsArgs {
        dir: fixtures.clone(),
        recursive: true,
        count: true,
    }))?;
    let found = discover(&fixtures, true)?;
    for g in &found.groups {
        let name = g.merged_name();
        let dest = out.join(&name);
        println!(
            "\n== rankprof merge --profile-dir {} --profile-id {} -o {}\n",
            g.dir.display(),
            g.profile_id,
            dest.display()
        );
        let merge = MergeArgs {
            profile_dir: Some(g.dir.clone()),
            profile_id: Some(g.profile_id.clone()),
            stage: g.stage.clone(),
            output: Some(dest),
            ..MergeArgs::default()
        };
        code = code.max(commands::run(Command::Merge(merge))?);
    }
    for g in &found.groups {
        let html = out.join(g.merged_name().replace(".trace.json.gz", ".html"));
        println!(
            "\n== analyze-profile --profile-dir {} --profile-id {} --all-ranks --html {}\n",
            g.dir.display(),
            g.profile_id,
            html.display()
        );
        let analyze = AnalyzeArgs {
            profile_dir: Some(g.dir.clone()),
            profile_id: Some(g.profile_id.clone()),
            stage: g.stage.clone(),
            all_ranks: true,
            html: Some(html),
            top_n: 8,
            ..AnalyzeArgs::default()
        };
        code = code.max(commands::run(Command::Analyze(analyze))?);
    }
    println!(
        "\nmerged traces and HTML reports are in {} (open the traces in https://ui.perfetto.dev)",
        out.display()
    );
    Ok(if code == exit::OK { exit::OK } else { code })
}
