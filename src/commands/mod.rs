//! From parsed command lines to the libraries: each submodule turns one subcommand's
//! arguments into its library's options type, calls the library, prints the result and maps
//! the outcome to an exit code ([`crate::exit`]).

pub(crate) mod analyze;
pub mod capture;
pub mod compare;
pub(crate) mod demo;
pub(crate) mod docs;
mod heap;
pub(crate) mod inflate;
mod interrupt;
pub(crate) mod ls;
pub(crate) mod merge;
pub(crate) mod nsys;
pub(crate) mod synth;
pub mod watch;

use std::path::{Path, PathBuf};

use anyhow::{bail, Result};

use crate::cli::{Command, ReportFormat};
use crate::exit;
use crate::report::Format;

/// `println!` that returns the error of the write (a closed pipe) instead of panicking.
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        writeln!(std::io::stdout().lock(), $($arg)*)
    }};
}
pub(crate) use outln;

/// Whether `e` is a write to a closed pipe (`rankprof … | head`): the reader has what it
/// wanted, so the command ends quietly with exit code 0, as ripgrep does.
fn broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .map(std::io::Error::kind)
            .or_else(|| c.downcast_ref::<serde_json::Error>()?.io_error_kind())
            == Some(std::io::ErrorKind::BrokenPipe)
    })
}

/// Runs one command, prints any error on stderr, returns the exit code.
pub fn main(cmd: Command) -> i32 {
    heap::tune();
    // The temporary exports of Nsight Systems reports go when the command ends, failed or not.
    let _exports = crate::trace::read::nsys::export::Scope::begin();
    match run(cmd) {
        Ok(code) => code,
        Err(e) if broken_pipe(&e) => exit::OK,
        Err(e) => {
            eprintln!("error: {e:#}");
            exit::USAGE
        }
    }
}

pub fn run(cmd: Command) -> Result<i32> {
    match cmd {
        Command::Ls(a) => ls::run(&a),
        Command::Merge(a) => merge::run(&a),
        Command::Synth(a) => synth::run(&a),
        Command::Demo(a) => demo::run(&a),
        Command::Inflate(a) => inflate::run(&a),
        Command::Analyze(a) => analyze::run(&a),
        Command::Compare(a) => compare::run(&a),
        Command::Capture(c) => capture::run(&c),
        Command::Nsys(c) => nsys::run(&c),
        Command::Watch(a) => watch::run(&a),
        Command::Completions(a) => docs::completions(&a),
        Command::Man(a) => docs::man(&a),
    }
}

/// An output file named on the command line (`flag`), checked before any input is read, so
/// that a mistyped path or a read-only place is said at once rather than after an hour of
/// reading: it must not be a directory, its directory must exist, and a file can be created
/// there ([`probe_dir`]).
pub(crate) fn check_output_file(flag: &str, o: &Path) -> Result<()> {
    if o.is_dir() {
        bail!("{flag} {}: is a directory; name a file", o.display());
    }
    let parent = o.parent().filter(|p| !p.as_os_str().is_empty());
    if let Some(p) = parent.filter(|p| !p.is_dir()) {
        bail!(
            "{flag} {}: the directory {} does not exist",
            o.display(),
            p.display()
        );
    }
    probe_dir(
        &format!("{flag} {}", o.display()),
        parent.unwrap_or(Path::new(".")),
        "name a file in a writable directory",
    )
}

/// An output directory named on the command line (`flag`), made before any input is read
/// (with its parents) so that one that cannot be is said at once: a file of that name, no
/// permission or a read-only file system fails here rather than after the work.
pub(crate) fn make_output_dir(flag: &str, d: &Path) -> Result<()> {
    if d.exists() && !d.is_dir() {
        bail!("{flag} {}: is a file; name a directory", d.display());
    }
    std::fs::create_dir_all(d)
        .map_err(|e| anyhow::anyhow!("{flag} {}: cannot create it: {e}", d.display()))?;
    probe_dir(
        &format!("{flag} {}", d.display()),
        d,
        "name a writable directory",
    )
}

/// The inputs of a command line: one positional folder is the profile folder (`analyze DIR`,
/// `merge DIR`, as `ls DIR`), otherwise `--profile-dir` and the files as given.
pub(crate) fn inputs(
    profile_dir: &Option<PathBuf>,
    files: &[PathBuf],
) -> (Option<PathBuf>, Vec<PathBuf>) {
    match (profile_dir, files) {
        (None, [one]) if one.is_dir() => (Some(one.clone()), Vec::new()),
        _ => (profile_dir.clone(), files.to_vec()),
    }
}

/// Creates (and removes) an empty file in `dir`, so that an output that cannot be written
/// there (permissions, a read-only or full file system) fails before the work; `what` names
/// the output and `fix` says what to do instead.
pub(crate) fn probe_dir(what: &str, dir: &Path, fix: &str) -> Result<()> {
    match tempfile::Builder::new()
        .prefix(".rankprof-probe-")
        .tempfile_in(dir)
    {
        Ok(f) => {
            drop(f);
            Ok(())
        }
        Err(e) => bail!("{what}: cannot write in {}: {e}; {fix}", dir.display()),
    }
}

/// The report format of a command line: `--json` or `--format`.
/// `--rank-from` as the discovery library's [`RankFrom`](crate::trace::discover::RankFrom) (left out: its own choice).
pub(crate) fn rank_from(a: Option<crate::cli::RankFromArg>) -> crate::trace::discover::RankFrom {
    use crate::cli::RankFromArg as A;
    use crate::trace::discover::RankFrom as R;
    match a {
        None => R::Auto,
        Some(A::Name) => R::Name,
        Some(A::DistributedInfo) => R::DistributedInfo,
        Some(A::Order) => R::Order,
    }
}

pub(crate) fn format(format: ReportFormat, json: bool) -> Format {
    if json {
        return Format::Json;
    }
    match format {
        ReportFormat::Table => Format::Terminal,
        ReportFormat::Json => Format::Json,
        ReportFormat::Csv => Format::Csv,
        ReportFormat::Markdown => Format::Markdown,
    }
}
