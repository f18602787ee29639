//! Opening input files: only regular files (after following symlinks), checked on the opened
//! descriptor so a FIFO, socket, device or directory named like a trace is refused rather than
//! blocking a read; and the kind of a file in words for the notes that say why.

use std::fs::{self, File};
use std::io;
use std::path::Path;

/// Opens `path` for reading if it is a regular file (after following symlinks), with its size.
///
/// The type is checked on the opened descriptor (`fstat`), not on the name, so a file swapped
/// for a FIFO after discovery is refused too; the open itself uses `O_NONBLOCK`, so opening a
/// FIFO never waits for a writer (the flag has no effect on regular files). Errors name the
/// path.
pub(crate) fn open_regular(path: &Path) -> io::Result<(File, u64)> {
    let named = |e: io::Error| io::Error::new(e.kind(), format!("{}: {e}", path.display()));
    let mut opts = fs::OpenOptions::new();
    opts.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.custom_flags(libc::O_NONBLOCK);
    }
    let file = opts.open(path).map_err(named)?;
    let meta = file.metadata().map_err(named)?;
    if !meta.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "{}: not a regular file ({})",
                path.display(),
                file_kind(&meta.file_type())
            ),
        ));
    }
    Ok((file, meta.len()))
}

/// What kind of file this is, in words: "a regular file", "a directory", "a FIFO", …
pub(crate) fn file_kind(ft: &fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if ft.is_fifo() {
            return "a FIFO";
        }
        if ft.is_socket() {
            return "a socket";
        }
        if ft.is_char_device() {
            return "a character device";
        }
        if ft.is_block_device() {
            return "a block device";
        }
    }
    if ft.is_dir() {
        "a directory"
    } else if ft.is_symlink() {
        "a symbolic link"
    } else if ft.is_file() {
        "a regular file"
    } else {
        "not a regular file"
    }
}
