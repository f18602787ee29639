//! `rankprof completions SHELL` (clap_complete) and `rankprof man DIR` (clap_mangen): both
//! generated from the same clap definitions as the command line itself, so they never drift.
//!
//! `man` is a visible subcommand rather than a build script: packagers run the installed
//! binary (`rankprof man /usr/share/man/man1`), and `cargo install` users get the pages too.

use std::path::Path;

use anyhow::{Context, Result};

use crate::cli::{CompletionsArgs, ManArgs};
use crate::exit;
use crate::trace::write::writer::write_atomic_bytes;

/// Prints the completion script for a shell on stdout.
pub fn completions(a: &CompletionsArgs) -> Result<i32> {
    let mut cmd = crate::cli::command();
    clap_complete::generate(a.shell, &mut cmd, "rankprof", &mut std::io::stdout());
    Ok(exit::OK)
}

/// Writes `rankprof.1` and `rankprof-<sub>.1` (nested: `rankprof-capture-run.1`) into the
/// directory.
pub fn man(a: &ManArgs) -> Result<i32> {
    std::fs::create_dir_all(&a.dir)
        .with_context(|| format!("cannot create {}", a.dir.display()))?;
    let mut cmd = crate::cli::command();
    cmd.build();
    let mut n = 0;
    write_pages(&cmd, "rankprof", &a.dir, &mut n)?;
    eprintln!("wrote {n} man pages into {}", a.dir.display());
    Ok(exit::OK)
}

fn write_pages(cmd: &clap::Command, name: &str, dir: &Path, n: &mut usize) -> Result<()> {
    if cmd.is_hide_set() {
        return Ok(());
    }
    let page = cmd.clone().name(name.to_string());
    let mut buf = Vec::new();
    clap_mangen::Man::new(page).render(&mut buf)?;
    let path = dir.join(format!("{name}.1"));
    write_atomic_bytes(&path, &buf).with_context(|| format!("cannot write {}", path.display()))?;
    *n += 1;
    for sub in cmd.get_subcommands() {
        if sub.get_name() == "help" {
            continue;
        }
        write_pages(sub, &format!("{name}-{}", sub.get_name()), dir, n)?;
    }
    Ok(())
}
