//! `rankprof nsys list|start|stop`: arguments → [`NsysOptions`], the sessions listed or acted
//! on, a table (or JSON) on stdout, the exit code; `stop --analyze` then runs `analyze` on the
//! reports written (the table then goes to stderr).

use std::io::{self, Write};

use std::ffi::OsString;
use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::Parser;
use comfy_table::{presets::UTF8_FULL_CONDENSED, Table};
use serde_json::json;

use crate::capture::nsys::{act, list_within, nsys_binary, reports_written, NsysOptions};
use crate::cli::capture::{NsysArgs, NsysCommand, NsysStopArgs};
use crate::cli::Command;
use crate::exit;

/// The library's options from the command line.
pub(crate) fn options(a: &NsysArgs) -> NsysOptions {
    NsysOptions {
        session: a.session.clone(),
        all: a.all,
        nsys: a.nsys.clone(),
        extra: a.extra.clone(),
        timeout: a.timeout,
        stop_timeout: a.stop_timeout,
    }
}

/// `rankprof nsys …`.
pub(crate) fn run(c: &NsysCommand) -> Result<i32> {
    match c {
        NsysCommand::List(a) => {
            let mut w = io::stdout().lock();
            let o = options(a);
            let sessions = list_within(&nsys_binary(&o), o.limit("list"))?;
            if a.json {
                serde_json::to_writer_pretty(&mut w, &json!({ "sessions": sessions }))?;
                writeln!(w)?;
            } else if sessions.is_empty() {
                writeln!(w, "no nsys sessions")?;
            } else {
                let mut t = Table::new();
                t.load_preset(UTF8_FULL_CONDENSED);
                t.set_header(vec!["id", "time", "state", "launch", "name"]);
                for s in &sessions {
                    t.add_row(vec![&s.id, &s.time, &s.state, &s.launch, &s.name]);
                }
                writeln!(w, "{t}")?;
            }
            Ok(exit::OK)
        }
        NsysCommand::Start(a) => Ok(act_on(a, "start", &mut io::stdout().lock())?.0),
        NsysCommand::Stop(s) if s.analyze => {
            // The analysis is the output: the stop table goes to stderr.
            let (code, reports) = act_on(&s.nsys, "stop", &mut io::stderr().lock())?;
            Ok(exit::worst(code, analyze_after(s, &reports)?))
        }
        NsysCommand::Stop(s) => Ok(act_on(&s.nsys, "stop", &mut io::stdout().lock())?.0),
    }
}

/// `nsys stop --analyze`: the analysis of `--profile-dir`, else of the reports nsys named, as
/// `rankprof analyze` gives it (JSON with `--json`).
fn analyze_after(s: &NsysStopArgs, reports: &[PathBuf]) -> Result<i32> {
    let mut argv: Vec<OsString> = vec!["rankprof".into(), "analyze".into()];
    if s.nsys.json {
        argv.extend(["--format".into(), "json".into()]);
    }
    if s.keep_sqlite {
        argv.push("--keep-sqlite".into());
    }
    match &s.profile_dir {
        Some(dir) => argv.extend(["--profile-dir".into(), dir.into()]),
        None if reports.is_empty() => bail!(
            "nothing to analyze: nsys stop named no report that exists in its output (above);              give --profile-dir DIR, the folder of the sessions' `-o`"
        ),
        None => {
            argv.push("--".into());
            argv.extend(reports.iter().map(OsString::from));
        }
    }
    eprintln!(
        "analyzing {}",
        s.profile_dir.as_ref().map_or_else(
            || reports
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
            |d| d.display().to_string()
        )
    );
    match crate::cli::Cli::try_parse_from(argv)?.command {
        Command::Analyze(a) => super::analyze::run(&a),
        _ => bail!("internal: the analyze command line did not parse as analyze"),
    }
}

/// `nsys start|stop` on the chosen sessions, the table (or JSON) written to `w`; the exit code
/// and the reports nsys said it wrote ([`reports_written`]).
fn act_on(a: &NsysArgs, action: &'static str, w: &mut dyn Write) -> Result<(i32, Vec<PathBuf>)> {
    let done = act(&options(a), action)?;
    let reports: Vec<PathBuf> = done
        .iter()
        .flat_map(|d| reports_written(&d.output))
        .collect();
    let code = if done.iter().all(|d| d.ok) {
        exit::OK
    } else {
        exit::FAILED
    };
    if a.json {
        serde_json::to_writer_pretty(
            &mut *w,
            &json!({ "action": action, "sessions": done, "exit_code": code }),
        )?;
        writeln!(w)?;
    } else {
        let mut t = Table::new();
        t.load_preset(UTF8_FULL_CONDENSED);
        t.set_header(vec!["session", "state before", "nsys", "result", "output"]);
        for d in &done {
            t.add_row(vec![
                format!("{} {}", d.session.id, d.session.name),
                d.session.state.clone(),
                match (d.timed_out, d.exit) {
                    (true, _) => format!("{action} killed (timeout)"),
                    (false, Some(c)) => format!("{action} exit {c}"),
                    (false, None) => format!("{action} exit signal"),
                },
                if d.ok { "ok".into() } else { "FAILED".into() },
                d.output.clone(),
            ]);
        }
        writeln!(w, "{t}")?;
    }
    Ok((code, reports))
}
