//! Temporary files that must not outlive an interrupted run.
//!
//! A merge writes its per-rank pieces into a `.rankprof-merge-<pid>-*` directory beside the
//! output, and every output goes through a `.<name>.tmp-<pid>` file renamed into place
//! ([`super::writer::write_atomic`]). Normally their owners remove them; on Ctrl-C (SIGINT) or
//! SIGTERM nothing would. So the owners [`register`] them, and on the first registration a
//! handler is installed that removes every registered path and exits with 128 + the signal
//! (130 for SIGINT, 143 for SIGTERM), as a shell reports a process killed by it.
//!
//! The handler comes from `signal-hook` (its `iterator`: the signal only wakes a thread, which
//! then does ordinary file-system work outside signal context). Not `ctrlc`: its handler is
//! not told which signal came, so it cannot exit with 130 or 143 accordingly. A signal that was
//! ignored when the process started (`nohup`, a background job of a non-interactive shell)
//! stays ignored. The handler holds the registry lock until the process exits, so nothing new
//! is registered (and then created) behind its back.
//!
//! What no handler can catch (SIGKILL, a power cut) is swept later: [`remove_stale`] deletes
//! our temporary directories older than a day (by mtime); merge runs it on every start.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::{Duration, SystemTime};

/// Name prefix of merge's temporary directories: `.rankprof-merge-<pid>-<random>`.
pub(crate) const MERGE_TMP_PREFIX: &str = ".rankprof-merge-";

/// Temporary directories older than this are left over from a run that was killed.
pub(crate) const STALE_AGE: Duration = Duration::from_secs(24 * 60 * 60);

/// Entries of `dir` named `name` (or starting with it when `prefix`).
#[derive(Debug)]
struct Pattern {
    id: u64,
    dir: PathBuf,
    name: String,
    prefix: bool,
}

#[derive(Default)]
struct Registry {
    next: u64,
    patterns: Vec<Pattern>,
}

static REGISTRY: Mutex<Registry> = Mutex::new(Registry {
    next: 0,
    patterns: Vec::new(),
});

fn registry() -> MutexGuard<'static, Registry> {
    REGISTRY.lock().unwrap_or_else(|e| e.into_inner())
}

/// Keeps a path registered; dropping it unregisters (it does not delete: the owner does).
#[derive(Debug)]
#[must_use = "the path is unregistered when the guard is dropped"]
pub(crate) struct Guard {
    id: u64,
}

impl Drop for Guard {
    fn drop(&mut self) {
        registry().patterns.retain(|p| p.id != self.id);
    }
}

/// Registers the entry `name` of `dir` (with `prefix`: every entry whose name starts with
/// `name`) for removal if SIGINT or SIGTERM ends the process. Call it before creating the
/// entry, so that no signal can come between the two.
pub(crate) fn register(dir: &Path, name: &str, prefix: bool) -> Guard {
    install();
    let mut r = registry();
    r.next += 1;
    let id = r.next;
    r.patterns.push(Pattern {
        id,
        dir: dir.to_path_buf(),
        name: name.to_string(),
        prefix,
    });
    Guard { id }
}

/// Removes a file, or a directory with its contents, whichever `path` is (symlinks are not
/// followed). A directory still being written to may gain entries while it is removed: tried
/// a few times.
fn remove(path: &Path) -> io::Result<()> {
    let meta = fs::symlink_metadata(path)?;
    if !meta.is_dir() {
        return fs::remove_file(path);
    }
    let mut last = Ok(());
    for _ in 0..5 {
        last = fs::remove_dir_all(path);
        if last.is_ok() || !path.exists() {
            return Ok(());
        }
    }
    last
}

/// Removes every registered path that exists; returns how many.
fn remove_registered(r: &Registry) -> usize {
    let mut n = 0;
    for p in &r.patterns {
        if !p.prefix {
            n += usize::from(remove(&p.dir.join(&p.name)).is_ok());
            continue;
        }
        let Ok(rd) = fs::read_dir(&p.dir) else {
            continue;
        };
        for e in rd.flatten() {
            if e.file_name().to_string_lossy().starts_with(&p.name) {
                n += usize::from(remove(&e.path()).is_ok());
            }
        }
    }
    n
}

/// Whether `sig` is ignored now (it was when the process started: `nohup`, `&`).
#[cfg(unix)]
fn ignored(sig: libc::c_int) -> bool {
    // SAFETY: sigaction with a null new action only reads the current one into `old`, a
    // zero-initialised plain C struct owned here.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        libc::sigaction(sig, std::ptr::null(), &mut old) == 0 && old.sa_sigaction == libc::SIG_IGN
    }
}

/// Installs the SIGINT/SIGTERM handler once. If it cannot be installed the signals keep their
/// default action (the process dies; [`remove_stale`] sweeps later).
fn install() {
    static INSTALLED: OnceLock<()> = OnceLock::new();
    INSTALLED.get_or_init(|| {
        #[cfg(unix)]
        {
            use signal_hook::consts::{SIGINT, SIGTERM};
            let sigs: Vec<libc::c_int> = [SIGINT, SIGTERM]
                .into_iter()
                .filter(|&s| !ignored(s))
                .collect();
            if sigs.is_empty() {
                return;
            }
            let Ok(mut signals) = signal_hook::iterator::Signals::new(&sigs) else {
                return;
            };
            let _ = std::thread::Builder::new()
                .name("rankprof-signals".into())
                .spawn(move || {
                    if let Some(sig) = signals.forever().next() {
                        // Held until exit: nothing is registered, and so created, after this.
                        let r = registry();
                        remove_registered(&r);
                        std::process::exit(128 + sig);
                    }
                });
        }
    });
}

/// Removes the directories in `dir` whose name starts with `prefix` and whose mtime is older
/// than `age` (symlinks are never followed). Returns the paths removed; errors are ignored
/// (another run may be removing the same ones).
pub(crate) fn remove_stale(dir: &Path, prefix: &str, age: Duration) -> Vec<PathBuf> {
    let mut removed = Vec::new();
    let Ok(rd) = fs::read_dir(dir) else {
        return removed;
    };
    let now = SystemTime::now();
    for e in rd.flatten() {
        if !e.file_name().to_string_lossy().starts_with(prefix) {
            continue;
        }
        let Ok(meta) = fs::symlink_metadata(e.path()) else {
            continue;
        };
        let old = meta
            .modified()
            .ok()
            .and_then(|m| now.duration_since(m).ok())
            .is_some_and(|d| d > age);
        if meta.is_dir() && old && fs::remove_dir_all(e.path()).is_ok() {
            removed.push(e.path());
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registered_paths_are_removed_and_guards_unregister() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path().join(".x-1-abc");
        fs::create_dir(&d).unwrap();
        fs::write(d.join("piece"), b"x").unwrap();
        fs::write(t.path().join(".out.tmp-1"), b"x").unwrap();
        fs::write(t.path().join("keep"), b"x").unwrap();
        let g1 = register(t.path(), ".x-1-", true);
        let g2 = register(t.path(), ".out.tmp-1", false);
        {
            let r = registry();
            let mine: Vec<&Pattern> = r.patterns.iter().filter(|p| p.dir == t.path()).collect();
            assert_eq!(mine.len(), 2);
            let only = Registry {
                next: 0,
                patterns: mine
                    .iter()
                    .map(|p| Pattern {
                        id: p.id,
                        dir: p.dir.clone(),
                        name: p.name.clone(),
                        prefix: p.prefix,
                    })
                    .collect(),
            };
            assert_eq!(remove_registered(&only), 2);
        }
        assert!(!d.exists() && !t.path().join(".out.tmp-1").exists());
        assert!(t.path().join("keep").exists());
        drop((g1, g2));
        assert!(registry().patterns.iter().all(|p| p.dir != t.path()));
    }
}
