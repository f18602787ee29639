//! `rankprof completions SHELL` (clap_complete) and `rankprof man DIR` (clap_mangen): both
//! generated from the same clap definitions as the command line itself, so they never drift.
//!
//! `man` is a visible subcommand rather than a build script: packagers run the installed
//! binary (`rankprof man /usr/share/man/man1`), and `cargo install` users get the pages too.
//!
//! A page's EXAMPLES and EXIT STATUS sections come from [`crate::cli::examples`] and
//! [`exit::HELP`], the text `--help` ends with; they are rendered here (each example line kept
//! as one unfilled line) rather than as clap_mangen's EXTRA section, which fills every line of
//! `after_help` into one paragraph.

use std::path::Path;

use std::io::Write;

use anyhow::{Context, Result};

use crate::cli::{CompletionsArgs, ManArgs};
use crate::exit;
use crate::trace::write::writer::write_atomic_bytes;

/// Prints the completion script for a shell on stdout.
pub(crate) fn completions(a: &CompletionsArgs) -> Result<i32> {
    let mut cmd = crate::cli::command();
    // Into memory first: clap_complete panics on a failed write (a closed pipe).
    let mut script = Vec::new();
    clap_complete::generate(a.shell, &mut cmd, "rankprof", &mut script);
    let mut out = std::io::stdout().lock();
    out.write_all(&script)?;
    out.flush()?;
    Ok(exit::OK)
}

/// Writes `rankprof.1` and `rankprof-<sub>.1` (nested: `rankprof-capture-run.1`) into the
/// directory.
pub(crate) fn man(a: &ManArgs) -> Result<i32> {
    // The folder itself may be made, not a chain of missing parents (a mistyped path).
    if let Some(p) = a
        .dir
        .parent()
        .filter(|p| !p.as_os_str().is_empty() && !p.is_dir())
    {
        anyhow::bail!(
            "{}: the directory {} does not exist; create it first or name an existing one",
            a.dir.display(),
            p.display()
        );
    }
    std::fs::create_dir_all(&a.dir)
        .with_context(|| format!("cannot create {}", a.dir.display()))?;
    let mut cmd = crate::cli::command_at(None);
    cmd.build();
    let mut n = 0;
    write_pages(&cmd, "rankprof", "", &a.dir, &mut n)?;
    eprintln!("wrote {n} man pages into {}", a.dir.display());
    Ok(exit::OK)
}

fn write_pages(
    cmd: &clap::Command,
    name: &str,
    path: &str,
    dir: &Path,
    n: &mut usize,
) -> Result<()> {
    if cmd.is_hide_set() {
        return Ok(());
    }
    let page = cmd
        .clone()
        .name(name.to_string())
        .after_help(None::<&str>)
        .after_long_help(None::<&str>);
    let mut buf = Vec::new();
    clap_mangen::Man::new(page).render(&mut buf)?;
    let roff = with_examples_and_exit_status(&String::from_utf8_lossy(&buf), path);
    let file = dir.join(format!("{name}.1"));
    write_atomic_bytes(&file, roff.as_bytes())
        .with_context(|| format!("cannot write {}", file.display()))?;
    *n += 1;
    for sub in cmd.get_subcommands() {
        if sub.get_name() == "help" {
            continue;
        }
        let sub_path = match path {
            "" => sub.get_name().to_string(),
            p => format!("{p} {}", sub.get_name()),
        };
        write_pages(
            sub,
            &format!("{name}-{}", sub.get_name()),
            &sub_path,
            dir,
            n,
        )?;
    }
    Ok(())
}

/// The page with EXIT STATUS and EXAMPLES inserted before its VERSION section (at the end when
/// it has none).
fn with_examples_and_exit_status(page: &str, path: &str) -> String {
    let mut extra = String::from(".SH \"EXIT STATUS\"\n");
    extra.push_str(&roff_text(exit::HELP));
    extra.push('\n');
    let list = crate::cli::examples::examples(path);
    if !list.is_empty() {
        extra.push_str(".SH EXAMPLES\n");
        for e in list {
            extra.push_str(".PP\n");
            extra.push_str(&roff_text(e.what));
            extra.push_str("\n.RS 4\n.nf\n");
            for line in e.line.lines() {
                extra.push_str(&roff_text(line));
                extra.push('\n');
            }
            extra.push_str(".fi\n.RE\n");
        }
    }
    match page.find("\n.SH VERSION") {
        Some(at) => format!("{}\n{extra}{}", &page[..at], &page[at + 1..]),
        None => format!("{page}{extra}"),
    }
}

/// One line of text for roff: backslashes and minus signs escaped, a leading `.` or `'` (which
/// would start a request) guarded, newlines made spaces.
fn roff_text(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    if s.starts_with('.') || s.starts_with('\'') {
        out.push_str("\\&");
    }
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\e"),
            '-' => out.push_str("\\-"),
            '\n' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}
