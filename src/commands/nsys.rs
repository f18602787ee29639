//! `rankprof nsys list|start|stop`: arguments → [`NsysOptions`], the sessions listed or acted
//! on, a table (or JSON) on stdout, the exit code; `stop --analyze` then runs `analyze` on the
//! reports written (the table then goes to stderr).

use std::io::{self, Write};

use std::ffi::OsString;
use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::Parser;

use crate::capture::nsys::{act, list_within, nsys_binary, reports_written, NsysOptions};
use crate::cli::capture::{NsysArgs, NsysCommand, NsysStopArgs};
use crate::cli::Command;
use crate::exit;
use crate::report::nsys::{Acted, SessionList};
use crate::report::Format;

fn format(json: bool) -> Format {
    if json {
        Format::Json
    } else {
        Format::Terminal
    }
}

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
            crate::report::write(&SessionList(&sessions), format(a.json), &mut w)?;
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
            "nothing to analyze: nsys stop named no report that exists in its output (above); \
             give --profile-dir DIR, the folder of the sessions' `-o`"
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
    let acted = Acted {
        action,
        done: &done,
        exit_code: code,
    };
    crate::report::write(&acted, format(a.json), w)?;
    Ok((code, reports))
}
