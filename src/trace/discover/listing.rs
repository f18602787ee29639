//! Listing candidate trace files, safely on any file system: a directory ([`list_dir`]) or
//! files given by name ([`list_files`]). Which of them are ranks, and whose, is
//! [`super`]'s business.
//!
//! - `--recursive` follows symlinked directories, but visits each directory (by device and
//!   inode) once, so a `dot -> .` link or two links into each other cannot loop, and goes at
//!   most [`MAX_DEPTH`] levels down;
//! - the same file (device and inode: a hard link, a symlink to a listed file) is listed once;
//! - only regular files are ever opened: a FIFO, socket or device named like a trace is skipped
//!   with a note (opening a FIFO would block);
//! - an entry named like a rank file that cannot be read (a dangling or looping symlink, a
//!   directory, one that vanished) is kept, so that the merge or analysis reports that rank as
//!   unreadable instead of quietly leaving it out.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use super::names::{is_trace_name, parse_name};
use crate::trace::read::open::file_kind;

/// How many directory levels `--recursive` descends below the directory given.
pub const MAX_DEPTH: usize = 32;

/// Candidate trace files (`*.json`, `*.json.gz`, `merged-*` included), and notes on what was
/// skipped and why.
#[derive(Clone, Debug, Default)]
pub(crate) struct Listing {
    pub(crate) files: Vec<PathBuf>,
    pub(crate) notes: Vec<String>,
}

/// (device, inode): a file's identity whatever the path to it.
type FileKey = (u64, u64);

/// `None` where the platform has no inodes (then nothing is de-duplicated).
fn key_of(m: &fs::Metadata) -> Option<FileKey> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        Some((m.dev(), m.ino()))
    }
    #[cfg(not(unix))]
    {
        let _ = m;
        None
    }
}

#[derive(Default)]
struct Walk {
    dirs: HashSet<FileKey>,
    files: HashMap<FileKey, PathBuf>,
    out: Listing,
}

impl Walk {
    /// Takes one path whose name is a trace name. `meta`: its metadata, symlinks followed.
    fn entry(&mut self, p: &Path, name: &str, meta: io::Result<fs::Metadata>) {
        match meta {
            Ok(m) if m.is_file() => {
                if let Some(k) = key_of(&m) {
                    if let Some(first) = self.files.get(&k) {
                        self.out.notes.push(format!(
                            "{}: the same file as {}; listed once",
                            p.display(),
                            first.display()
                        ));
                        return;
                    }
                    self.files.insert(k, p.to_path_buf());
                }
                self.out.files.push(p.to_path_buf());
            }
            Ok(m) if m.is_dir() => {
                if parse_name(name).is_some() {
                    self.out.notes.push(format!(
                        "{}: a directory named like a rank file; that rank is unreadable",
                        p.display()
                    ));
                    self.out.files.push(p.to_path_buf());
                }
            }
            Ok(m) => self.out.notes.push(format!(
                "{}: {}, not a regular file; skipped (never opened)",
                p.display(),
                file_kind(&m.file_type())
            )),
            Err(e) => {
                // A dangling or looping symlink, or gone since it was listed.
                if parse_name(name).is_some() {
                    self.out.notes.push(format!(
                        "{}: cannot be read ({e}); that rank is unreadable",
                        p.display()
                    ));
                }
                self.out.files.push(p.to_path_buf());
            }
        }
    }

    fn dir(&mut self, dir: &Path, depth: usize, recursive: bool) -> io::Result<()> {
        let mut entries: Vec<PathBuf> = fs::read_dir(dir)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", dir.display())))?
            .filter_map(Result::ok)
            .map(|e| e.path())
            .collect();
        entries.sort();
        for p in entries {
            let name = p
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or_default()
                .to_string();
            let meta = fs::metadata(&p);
            if recursive {
                if let Some(m) = meta.as_ref().ok().filter(|m| m.is_dir()) {
                    if depth >= MAX_DEPTH {
                        self.out.notes.push(format!(
                            "{}: deeper than {MAX_DEPTH} levels; not searched",
                            p.display()
                        ));
                    } else if key_of(m).is_some_and(|k| !self.dirs.insert(k)) {
                        self.out.notes.push(format!(
                            "{}: a directory already searched (a symlink loop?); skipped",
                            p.display()
                        ));
                    } else if let Err(e) = self.dir(&p, depth + 1, true) {
                        self.out
                            .notes
                            .push(format!("cannot read directory {e}; skipped"));
                    }
                }
            }
            if is_trace_name(&name) {
                self.entry(&p, &name, meta);
            }
        }
        Ok(())
    }
}

/// Lists the candidate trace files in `dir` (and below it with `recursive`), safely: see the
/// module doc. Fails only when `dir` itself cannot be read.
pub(crate) fn list_dir(dir: &Path, recursive: bool) -> io::Result<Listing> {
    let mut w = Walk::default();
    if let Some(k) = fs::metadata(dir).ok().as_ref().and_then(key_of) {
        w.dirs.insert(k);
    }
    w.dir(dir, 0, recursive)?;
    Ok(w.out)
}

/// Checks trace files given by name. Fails when nothing at all is at a path (not even a
/// symlink), or a path is a directory not named like a trace (it wants `--profile-dir`).
/// Otherwise as [`list_dir`]: non-regular files skipped with a note, a file given twice listed
/// once, unreadable ones kept so that their rank is reported.
pub(crate) fn list_files(paths: &[PathBuf]) -> io::Result<Listing> {
    let mut w = Walk::default();
    for p in paths {
        if let Err(e) = fs::symlink_metadata(p) {
            return Err(io::Error::new(
                e.kind(),
                format!("{}: no such file", p.display()),
            ));
        }
        let name = p
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_string();
        let meta = fs::metadata(p);
        if let Ok(m) = &meta {
            if m.is_dir() && !is_trace_name(&name) {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("{}: a directory (give it as --profile-dir)", p.display()),
                ));
            }
        }
        w.entry(p, &name, meta);
    }
    Ok(w.out)
}
