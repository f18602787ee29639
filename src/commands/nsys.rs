//! `rankprof nsys list|start|stop`: arguments → [`NsysOptions`], the sessions listed or acted
//! on, a table (or JSON) on stdout, the exit code.

use std::io::{self, Write};

use anyhow::Result;
use comfy_table::{presets::UTF8_FULL_CONDENSED, Table};
use serde_json::json;

use crate::capture::nsys::{act, list_within, nsys_binary, NsysOptions};
use crate::cli::{NsysArgs, NsysCommand};
use crate::exit;

/// The library's options from the command line.
pub fn options(a: &NsysArgs) -> NsysOptions {
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
pub fn run(c: &NsysCommand) -> Result<i32> {
    let mut w = io::stdout().lock();
    match c {
        NsysCommand::List(a) => {
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
        NsysCommand::Start(a) | NsysCommand::Stop(a) => {
            let action = if matches!(c, NsysCommand::Start(_)) {
                "start"
            } else {
                "stop"
            };
            let done = act(&options(a), action)?;
            let code = if done.iter().all(|d| d.ok) {
                exit::OK
            } else {
                exit::FAILED
            };
            if a.json {
                serde_json::to_writer_pretty(
                    &mut w,
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
            Ok(code)
        }
    }
}
