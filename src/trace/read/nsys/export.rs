//! Nsight Systems reports (`*.nsys-rep`) read directly: each is exported once per run with
//! `nsys export --type sqlite --output OUT --force-overwrite true REPORT` and the export read
//! as any `*.sqlite` ([`super::read_nsys`]), the report's path standing for the export's in
//! what is said.
//!
//! - Where: a temporary folder (`rankprof-nsys-*` in the system's temporary directory),
//!   removed when the command ends, on error too ([`Scope`]); the input folder is untouched.
//!   With `--keep-sqlite` ([`keep_exports`]) the export is kept beside the report as
//!   `<stem>.sqlite` (written under a temporary name, then renamed), and an existing
//!   `<stem>.sqlite` newer than the report is read instead of exporting again.
//! - Once: the exports are cached per report for the run, so the passes that read a file
//!   again (its header, a second read) export nothing; a failed export is not retried.
//!   Ranks read in parallel export in parallel (as many as the reading threads).
//! - Bounded: `nsys export` is killed past [`DEFAULT_TIMEOUT`] ([`TIMEOUT_ENV`] changes it);
//!   its output goes to temporary files, not pipes.
//! - Without nsys (`$RANKPROF_NSYS`, else `nsys` on PATH) the report is refused with the
//!   command that exports it by hand.
//! - A report beside its own export (`x.nsys-rep` and `x.sqlite`) is one rank: the export is
//!   read ([`prefer_exports`]).

use std::collections::HashMap;
use std::ffi::OsString;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

/// The suffix of an Nsight Systems report.
pub(crate) const REP_SUFFIX: &str = ".nsys-rep";

/// The environment variable holding the seconds `nsys export` may take per report.
pub(crate) const TIMEOUT_ENV: &str = "RANKPROF_NSYS_EXPORT_TIMEOUT_S";

/// Longest one `nsys export` may run before it is killed (by default).
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);

/// Most bytes of nsys's output kept for an error message.
const OUTPUT_LIMIT: u64 = 4096;

/// Whether the file name says Nsight Systems report (`*.nsys-rep`).
pub(crate) fn is_rep_name(name: &str) -> bool {
    name.len() > REP_SUFFIX.len() && name.ends_with(REP_SUFFIX)
}

/// Whether `path` names a report (`*.nsys-rep`) or one GPU of one (`x.nsys-rep#gpu3`,
/// [`super::devices::device_path`]).
pub(crate) fn is_rep_path(path: &Path) -> bool {
    path.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
        is_rep_name(n) || super::devices::split_name(n).is_some_and(|(f, _)| is_rep_name(f))
    })
}

/// The path to read for `rep` (a report, or one GPU of one): its export, with the same GPU
/// marked; and the export itself.
fn exported_path(rep: &Path) -> io::Result<(PathBuf, Exported)> {
    let (file, device) = super::devices::split_path(rep);
    let e = export(&file)?;
    let db = match device {
        Some(d) => super::devices::device_path(&e.db, d),
        None => e.db.clone(),
    };
    Ok((db, e))
}

/// The export beside a report: `DIR/x.nsys-rep` → `DIR/x.sqlite`.
pub(crate) fn sqlite_beside(rep: &Path) -> Option<PathBuf> {
    let name = rep.file_name()?.to_str()?;
    let stem = name.strip_suffix(REP_SUFFIX)?;
    Some(rep.with_file_name(format!("{stem}.sqlite")))
}

/// Drops each report whose export (`x.sqlite` for `x.nsys-rep`) is among `paths` too: one
/// rank, read from the export. The notes say which. An export this run made (`--keep-sqlite`)
/// leaves its report the rank.
pub(crate) fn prefer_exports(paths: &[PathBuf]) -> (Vec<PathBuf>, Vec<String>) {
    let mut notes = Vec::new();
    // Exports `--keep-sqlite` put beside their reports moments ago (an earlier pass of this
    // command): the report stays the rank, read through that export.
    let made: Vec<PathBuf> = paths
        .iter()
        .filter(|p| exported_in_this_run(p))
        .filter_map(|p| sqlite_beside(p))
        .collect();
    let kept = paths
        .iter()
        .filter(|p| !made.contains(p))
        .filter(|p| {
            let Some(db) = sqlite_beside(p).filter(|db| paths.contains(db)) else {
                return true;
            };
            if made.contains(&db) {
                return true;
            }
            let older = match (modified(&db), modified(p)) {
                (Some(d), Some(r)) if d < r => {
                    " (the export is older than the report: remove it to read the report again)"
                }
                _ => "",
            };
            notes.push(format!(
                "{}: its export {} is beside it: read the export, not the report{older}",
                p.display(),
                db.display()
            ));
            false
        })
        .cloned()
        .collect();
    (kept, notes)
}

/// Whether this run has exported `rep` already (its export is in the run's cache).
fn exported_in_this_run(rep: &Path) -> bool {
    // Nothing exported yet (every run without a report): no path to resolve (at 1,024 ranks
    // a `realpath` of three `readlink`s and a `getcwd` for each file).
    if state().exports.is_empty() {
        return false;
    }
    let key = std::fs::canonicalize(rep).unwrap_or_else(|_| rep.to_path_buf());
    state()
        .exports
        .get(&key)
        .is_some_and(|c| c.get().is_some_and(Result::is_ok))
}

fn modified(p: &Path) -> Option<std::time::SystemTime> {
    std::fs::metadata(p).and_then(|m| m.modified()).ok()
}

/// One report's export: the SQLite file to read and what to say about it.
#[derive(Clone, Debug)]
pub(crate) struct Exported {
    pub(crate) db: PathBuf,
    pub(crate) said: String,
}

type Cell = Arc<OnceLock<Result<Exported, String>>>;

#[derive(Default)]
struct State {
    keep: bool,
    dir: Option<tempfile::TempDir>,
    made: usize,
    exports: HashMap<PathBuf, Cell>,
}

fn state() -> MutexGuard<'static, State> {
    static STATE: OnceLock<Mutex<State>> = OnceLock::new();
    STATE
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner())
}

/// Keep the exports beside their reports (`--keep-sqlite`) for the rest of the run.
pub(crate) fn keep_exports(keep: bool) {
    state().keep = keep;
}

/// The run's exports: dropping it removes the temporary ones (the caller holds it for the
/// whole command, so they go on error too) and forgets the cache.
#[must_use = "the temporary exports are removed when the scope is dropped"]
pub(crate) struct Scope(());

impl Scope {
    pub(crate) fn begin() -> Scope {
        Scope(())
    }
}

impl Drop for Scope {
    fn drop(&mut self) {
        let mut s = state();
        s.exports.clear();
        s.keep = false;
        if let Some(d) = s.dir.take() {
            let _ = d.close();
        }
    }
}

/// The export of `rep`, made on first use and cached for the run (a failure too).
pub(crate) fn export(rep: &Path) -> io::Result<Exported> {
    let key = std::fs::canonicalize(rep).unwrap_or_else(|_| rep.to_path_buf());
    let cell: Cell = state().exports.entry(key).or_default().clone();
    cell.get_or_init(|| export_now(rep))
        .clone()
        .map_err(io::Error::other)
}

/// The seconds `nsys export` may take: [`TIMEOUT_ENV`], else [`DEFAULT_TIMEOUT`].
pub(crate) fn timeout() -> Result<Duration, String> {
    match std::env::var(TIMEOUT_ENV) {
        Err(_) => Ok(DEFAULT_TIMEOUT),
        Ok(v) => match v.trim().parse::<f64>() {
            Ok(s) if s.is_finite() && s > 0.0 => Ok(Duration::from_secs_f64(s.min(1e9))),
            _ => Err(format!(
                "{TIMEOUT_ENV}={v:?}: give the seconds `nsys export` may take, a number above 0"
            )),
        },
    }
}

/// The nsys binary: `$RANKPROF_NSYS`, else `nsys` on PATH.
fn nsys_binary() -> PathBuf {
    std::env::var_os("RANKPROF_NSYS")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("nsys"))
}

/// A path as a shell word (quoted when it must be).
fn shell(p: &Path) -> String {
    let s = p.display().to_string();
    if !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+,:@%".contains(&b))
    {
        s
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// The commands that export `rep` by hand: this report, and every report of its folder.
pub(crate) fn by_hand(rep: &Path) -> String {
    let dir = rep.parent().filter(|d| !d.as_os_str().is_empty());
    let out = sqlite_beside(rep)
        .map(|p| p.with_extension(""))
        .unwrap_or_else(|| rep.to_path_buf());
    let all = dir.map_or_else(
        || "*.nsys-rep".to_string(),
        |d| format!("{}/*.nsys-rep", shell(d)),
    );
    format!(
        "`nsys export --type sqlite -o {} {}` (every report of the folder: `for r in {all}; do \
         nsys export --type sqlite -o \"${{r%.nsys-rep}}\" \"$r\"; done`)",
        shell(&out),
        shell(rep)
    )
}

fn export_now(rep: &Path) -> Result<Exported, String> {
    let keep = state().keep;
    let beside = sqlite_beside(rep).ok_or_else(|| format!("{}: not a .nsys-rep", rep.display()))?;
    if keep {
        if let (Some(d), Some(r)) = (modified(&beside), modified(rep)) {
            if d >= r {
                return Ok(Exported {
                    said: format!(
                        "{}: read {}, its export, newer than the report (--keep-sqlite): not \
                         exported again",
                        rep.display(),
                        beside.display()
                    ),
                    db: beside,
                });
            }
        }
    }
    let limit = timeout()?;
    let stem = beside
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "report".into());
    let out = if keep {
        beside.with_file_name(format!(".{stem}.rankprof-{}.sqlite", std::process::id()))
    } else {
        let mut s = state();
        if s.dir.is_none() {
            let d = tempfile::Builder::new()
                .prefix("rankprof-nsys-")
                .tempdir()
                .map_err(|e| {
                    format!(
                        "{}: cannot make a temporary folder for its export: {e}",
                        rep.display()
                    )
                })?;
            s.dir = Some(d);
        }
        s.made += 1;
        let n = s.made;
        match &s.dir {
            Some(d) => d.path().join(format!("{n}-{stem}.sqlite")),
            None => return Err(format!("{}: no temporary folder", rep.display())),
        }
    };
    let started = Instant::now();
    let ran = run_export(rep, &out, limit);
    if let Err(e) = ran {
        let _ = std::fs::remove_file(&out);
        return Err(e);
    }
    let took = started.elapsed().as_secs_f64();
    if !out.is_file() {
        return Err(format!(
            "{}: `nsys export` succeeded but wrote no {}; export it by hand: {}",
            rep.display(),
            out.display(),
            by_hand(rep)
        ));
    }
    if keep {
        if let Err(e) = std::fs::rename(&out, &beside) {
            let _ = std::fs::remove_file(&out);
            return Err(format!(
                "{}: cannot keep its export as {}: {e}",
                rep.display(),
                beside.display()
            ));
        }
        return Ok(Exported {
            said: format!(
                "{}: exported by `nsys export --type sqlite` in {took:.1} s, kept as {} \
                 (--keep-sqlite)",
                rep.display(),
                beside.display()
            ),
            db: beside,
        });
    }
    Ok(Exported {
        said: format!(
            "{}: exported by `nsys export --type sqlite` in {took:.1} s into a temporary file \
             (removed at exit; --keep-sqlite keeps it beside the report)",
            rep.display()
        ),
        db: out,
    })
}

/// Runs `nsys export` for `rep` into `out`, killed past `limit`.
fn run_export(rep: &Path, out: &Path, limit: Duration) -> Result<(), String> {
    let bin = nsys_binary();
    let args: Vec<OsString> = vec![
        "export".into(),
        "--type".into(),
        "sqlite".into(),
        "--output".into(),
        out.into(),
        "--force-overwrite".into(),
        "true".into(),
        rep.into(),
    ];
    let logs = (tempfile::tempfile(), tempfile::tempfile());
    let (Ok(o), Ok(e)) = logs else {
        return Err(format!(
            "{}: cannot make a temporary file for nsys's output",
            rep.display()
        ));
    };
    let io_err = |e: io::Error| format!("{}: running {}: {e}", rep.display(), bin.display());
    let mut child = Command::new(&bin)
        .args(&args)
        .stdin(Stdio::null())
        .stdout(o.try_clone().map_err(io_err)?)
        .stderr(e.try_clone().map_err(io_err)?)
        .spawn()
        .map_err(|e| {
            if e.kind() == io::ErrorKind::NotFound {
                format!(
                    "{}: an Nsight Systems report, and `{}` is not found to export it: install \
                     Nsight Systems and put nsys on PATH (or set RANKPROF_NSYS), or export it \
                     first: {}",
                    rep.display(),
                    bin.display(),
                    by_hand(rep)
                )
            } else {
                format!("{}: cannot run {}: {e}", rep.display(), bin.display())
            }
        })?;
    let end = Instant::now() + limit;
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) => {}
            Err(e) => return Err(io_err(e)),
        }
        let Some(left) = end.checked_duration_since(Instant::now()) else {
            // SIGKILL, then reap it: no nsys left running.
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!(
                "{}: `nsys export` did not finish within {} s and was killed (set {TIMEOUT_ENV} \
                 to allow longer, or export it by hand: {})",
                rep.display(),
                limit.as_secs_f64(),
                by_hand(rep)
            ));
        };
        std::thread::sleep(left.min(Duration::from_millis(20)));
    };
    if !status.success() {
        let text = [tail(o), tail(e)]
            .into_iter()
            .filter(|t| !t.is_empty())
            .collect::<Vec<_>>()
            .join("\n");
        return Err(format!(
            "{}: `{} export --type sqlite` failed ({status}): {}",
            rep.display(),
            bin.display(),
            if text.is_empty() { "no output" } else { &text }
        ));
    }
    Ok(())
}

/// The last [`OUTPUT_LIMIT`] bytes of a log, trimmed.
fn tail(mut f: File) -> String {
    let len = f.seek(SeekFrom::End(0)).unwrap_or(0);
    let mut v = Vec::new();
    if f.seek(SeekFrom::Start(len.saturating_sub(OUTPUT_LIMIT)))
        .is_ok()
    {
        let _ = f.read_to_end(&mut v);
    }
    String::from_utf8_lossy(&v).trim().to_string()
}

/// [`super::read_nsys`] of a report through its export; the report stands for the export in
/// the [`super::super::damage::ReadReport`] and its notes, the first of which says how it
/// was exported.
pub(crate) fn read_rep(
    rep: &Path,
    want: Option<super::Want>,
    on_event: impl FnMut(&super::Event<'_>),
) -> io::Result<super::ReadReport> {
    let (db, e) = exported_path(rep)?;
    let (file, device) = super::devices::split_path(rep);
    let shown = |s: &str| s.replace(&e.db.display().to_string(), &file.display().to_string());
    let mut r = super::read_nsys(&db, want, on_event)
        .map_err(|err| io::Error::new(err.kind(), shown(&err.to_string())))?;
    r.path = rep.to_path_buf();
    for s in &mut r.said {
        *s = shown(s);
    }
    // How the report was exported is said once: by its first GPU's rank when it is read one
    // rank per GPU.
    if device.is_none() || device == super::devices::first_device(&e.db) {
        r.said.insert(0, e.said);
    }
    Ok(r)
}

/// [`super::read_head`] of a report through its export.
pub(crate) fn read_head(rep: &Path) -> io::Result<Option<super::Header>> {
    let (db, e) = exported_path(rep)?;
    let (file, _) = super::devices::split_path(rep);
    super::read_head(&db).map_err(|err| {
        io::Error::new(
            err.kind(),
            err.to_string()
                .replace(&e.db.display().to_string(), &file.display().to_string()),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_the_export_beside() {
        assert!(is_rep_name("rank0.nsys-rep"));
        assert!(!is_rep_name(".nsys-rep"));
        assert!(!is_rep_name("rank0.sqlite"));
        assert_eq!(
            sqlite_beside(Path::new("d/rank_3.nsys-rep")),
            Some(PathBuf::from("d/rank_3.sqlite"))
        );
        let paths: Vec<PathBuf> = ["d/a.nsys-rep", "d/a.sqlite", "d/b.nsys-rep"]
            .iter()
            .map(PathBuf::from)
            .collect();
        let (kept, notes) = prefer_exports(&paths);
        assert_eq!(
            kept,
            [PathBuf::from("d/a.sqlite"), PathBuf::from("d/b.nsys-rep")]
        );
        assert_eq!(notes.len(), 1);
        assert!(notes[0].starts_with("d/a.nsys-rep: its export d/a.sqlite"));
    }

    #[test]
    fn the_command_by_hand() {
        let s = by_hand(Path::new("/runs/x 1/rank0.nsys-rep"));
        assert!(
            s.starts_with(
                "`nsys export --type sqlite -o '/runs/x 1/rank0' '/runs/x 1/rank0.nsys-rep'`"
            ),
            "{s}"
        );
        assert!(s.contains("for r in '/runs/x 1'/*.nsys-rep; do"), "{s}");
    }
}
