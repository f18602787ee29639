//! Writing traces: gzip built from independently compressed pieces, and atomic files.
//!
//! A merged trace is compressed in parallel by giving every rank its own piece of one deflate
//! stream: each piece is raw deflate ending in a sync flush (byte-aligned, not final), so pieces
//! compressed on different threads concatenate into one valid stream. The gzip trailer's CRC-32
//! is combined from the pieces' CRCs (`crc32fast::Hasher::combine`), as pigz does. The result is
//! one ordinary single-member `.gz` file that every reader (zcat, Python, Perfetto) opens.
//!
//! Every file is written atomically ([`write_atomic`]): through a temporary file renamed into
//! place, removed on failure and, through [`super::cleanup`], on SIGINT/SIGTERM.

use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use flate2::{Compress, Compression, FlushCompress, Status};

/// A compressed piece of the output: raw deflate, ending in a sync flush (or the final block).
/// A piece holds no reference to what precedes it, so one piece may be written many times.
#[derive(Clone)]
pub(crate) struct Piece {
    pub(crate) crc: crc32fast::Hasher,
    /// Uncompressed length.
    pub(crate) len: u64,
    pub(crate) data: PieceData,
}

#[derive(Clone)]
pub(crate) enum PieceData {
    Bytes(Vec<u8>),
    File(PathBuf),
}

/// Compresses a small buffer into a piece (`last`: it ends the deflate stream).
pub(crate) fn piece_from_bytes(data: &[u8], level: u32, last: bool) -> io::Result<Piece> {
    SmallPieces::new(level).piece(data, last)
}

/// Compresses small buffers into pieces, one deflate state for all of them (it is ~300 KB to
/// set up: a `.pftrace.gz` merge compresses a few small pieces per rank).
pub(crate) struct SmallPieces {
    comp: Compress,
}

impl SmallPieces {
    pub(crate) fn new(level: u32) -> Self {
        SmallPieces {
            comp: Compress::new(Compression::new(level), false),
        }
    }

    /// `data` as a piece of its own (`last`: it ends the deflate stream).
    pub(crate) fn piece(&mut self, data: &[u8], last: bool) -> io::Result<Piece> {
        self.comp.reset();
        let mut out = Vec::with_capacity(data.len() / 2 + 64);
        deflate(
            &mut self.comp,
            data,
            &mut out,
            if last {
                FlushCompress::Finish
            } else {
                FlushCompress::Sync
            },
        )?;
        // `deflate` reserves room generously; a merge can hold a thousand small pieces (one
        // separator a rank) until the file is written, so each keeps only what it holds.
        out.shrink_to_fit();
        let mut crc = crc32fast::Hasher::new();
        crc.update(data);
        Ok(Piece {
            crc,
            len: data.len() as u64,
            data: PieceData::Bytes(out),
        })
    }
}

/// Runs the compressor over `input` with `flush`, appending to `out`.
fn deflate(
    comp: &mut Compress,
    mut input: &[u8],
    out: &mut Vec<u8>,
    flush: FlushCompress,
) -> io::Result<()> {
    loop {
        if out.capacity() - out.len() < 32 * 1024 {
            out.reserve(input.len() / 2 + 64 * 1024);
        }
        let before = comp.total_in();
        let status = comp
            .compress_vec(input, out, flush)
            .map_err(|e| io::Error::other(format!("deflate: {e}")))?;
        input = &input[(comp.total_in() - before) as usize..];
        let room_left = out.len() < out.capacity();
        match (flush, status) {
            (_, Status::StreamEnd) => return Ok(()),
            (FlushCompress::Finish, _) => {}
            _ if input.is_empty() && room_left => return Ok(()),
            _ => {}
        }
    }
}

/// Streams bytes into one compressed piece stored in a file.
pub(crate) struct PieceWriter {
    comp: Compress,
    level: u32,
    crc: crc32fast::Hasher,
    len: u64,
    staged: Vec<u8>,
    /// The compressor's output, zeroed once: `compress_vec` would zero its spare capacity on
    /// every call (1 % of a merge's CPU time). Written to the file as it comes (128 KB at
    /// most a write), so no second buffer.
    zbuf: Box<[u8]>,
    file: File,
    path: PathBuf,
    /// Written as it comes, uncompressed ([`PieceWriter::create_raw`]).
    raw: bool,
}

const STAGE: usize = 256 * 1024;
const ZBUF: usize = 128 * 1024;

/// What a finished [`PieceWriter`] leaves its thread for the next: the deflate state (~300 KB,
/// reset rather than rebuilt) and both buffers. Allocating them afresh for each of a thousand
/// small ranks left the heap fragmented: a merge of 1,024 ranks of 1 MB peaked at 75–150 MB
/// RSS for 12 MB of live heap.
struct Spare {
    comp: Compress,
    level: u32,
    staged: Vec<u8>,
    zbuf: Box<[u8]>,
}

thread_local! {
    static SPARE: std::cell::RefCell<Option<Spare>> = const { std::cell::RefCell::new(None) };
}

impl PieceWriter {
    pub(crate) fn create(path: &Path, level: u32) -> io::Result<Self> {
        let file = File::create(path)?;
        let spare = SPARE.with(|s| s.borrow_mut().take());
        let (comp, staged, zbuf) = match spare {
            Some(mut sp) if sp.level == level => {
                sp.comp.reset();
                sp.staged.clear();
                (sp.comp, sp.staged, sp.zbuf)
            }
            _ => (
                Compress::new(Compression::new(level), false),
                Vec::with_capacity(STAGE + 64 * 1024),
                vec![0; ZBUF].into_boxed_slice(),
            ),
        };
        Ok(PieceWriter {
            comp,
            level,
            crc: crc32fast::Hasher::new(),
            len: 0,
            staged,
            zbuf,
            file,
            path: path.to_path_buf(),
            raw: false,
        })
    }

    /// A writer of an uncompressed piece (a `.pftrace` merge's rank: protobuf packets that
    /// concatenate as they are); its piece's `crc` is not kept.
    pub(crate) fn create_raw(path: &Path) -> io::Result<Self> {
        let mut w = Self::create(path, 0)?;
        w.raw = true;
        Ok(w)
    }

    /// The staging buffer: append uncompressed bytes here, then call [`PieceWriter::maybe_flush`].
    pub(crate) fn buf(&mut self) -> &mut Vec<u8> {
        &mut self.staged
    }

    pub(crate) fn maybe_flush(&mut self) -> io::Result<()> {
        if self.staged.len() >= STAGE {
            self.compress(FlushCompress::None)?;
        }
        Ok(())
    }

    /// Compresses what is staged with `flush` (`None` or `Sync`), straight into the file.
    fn compress(&mut self, flush: FlushCompress) -> io::Result<()> {
        self.len += self.staged.len() as u64;
        if self.raw {
            self.file.write_all(&self.staged)?;
            self.staged.clear();
            return Ok(());
        }
        self.crc.update(&self.staged);
        let mut input = &self.staged[..];
        loop {
            let (in0, out0) = (self.comp.total_in(), self.comp.total_out());
            self.comp
                .compress(input, &mut self.zbuf, flush)
                .map_err(|e| io::Error::other(format!("deflate: {e}")))?;
            let used = (self.comp.total_in() - in0) as usize;
            let made = (self.comp.total_out() - out0) as usize;
            input = &input[used..];
            self.file.write_all(&self.zbuf[..made])?;
            // Done when all input is taken and the output was not full (a flush that filled
            // it may have more to give).
            if input.is_empty() && made < self.zbuf.len() {
                break;
            }
        }
        self.staged.clear();
        Ok(())
    }

    /// Ends the piece with a sync flush.
    pub(crate) fn finish(mut self) -> io::Result<Piece> {
        self.compress(FlushCompress::Sync)?;
        let PieceWriter {
            comp,
            level,
            crc,
            len,
            staged,
            zbuf,
            file,
            path,
            ..
        } = self;
        drop(file);
        if staged.capacity() <= 4 * STAGE {
            SPARE.with(|s| {
                *s.borrow_mut() = Some(Spare {
                    comp,
                    level,
                    staged,
                    zbuf,
                })
            });
        }
        Ok(Piece {
            crc,
            len,
            data: PieceData::File(path),
        })
    }
}

/// Writes a gzip file made of `pieces` (the last must end the deflate stream) atomically.
pub(crate) fn write_gzip(out: &Path, pieces: &[Piece]) -> io::Result<u64> {
    let mut crc = crc32fast::Hasher::new();
    let mut len: u64 = 0;
    for p in pieces {
        crc.combine(&p.crc);
        len += p.len;
    }
    let crc = crc.finalize();
    write_atomic(out, |w| {
        // Header: magic, deflate, no flags, no mtime, no extra flags, OS unknown.
        w.write_all(&[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff])?;
        for p in pieces {
            match &p.data {
                PieceData::Bytes(b) => w.write_all(b)?,
                PieceData::File(path) => {
                    let mut f = File::open(path)?;
                    io::copy(&mut f, w)?;
                }
            }
        }
        w.write_all(&crc.to_le_bytes())?;
        w.write_all(&((len & 0xffff_ffff) as u32).to_le_bytes())?;
        Ok(())
    })?;
    Ok(len)
}

/// Writes `out` through a temporary file in the same directory, renamed into place only when
/// `write` succeeded: readers never see a half-written file. The temporary file is removed on
/// failure, and on SIGINT/SIGTERM too ([`super::cleanup`]).
pub(crate) fn write_atomic(
    out: &Path,
    write: impl FnOnce(&mut BufWriter<File>) -> io::Result<()>,
) -> io::Result<()> {
    let dir = match out.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = out
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "out".into());
    let tmp_name = format!(".{name}.tmp-{}", std::process::id());
    let tmp = dir.join(&tmp_name);
    // Removed by the signal handler if SIGINT/SIGTERM comes before the rename.
    let _registered = super::cleanup::register(&dir, &tmp_name, false);
    let result = (|| {
        let mut w = BufWriter::with_capacity(1 << 20, File::create(&tmp)?);
        write(&mut w)?;
        let f = w.into_inner().map_err(|e| e.into_error())?;
        f.sync_all()?;
        fs::rename(&tmp, out)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result.map_err(|e| io::Error::new(e.kind(), format!("writing {}: {e}", out.display())))
}

/// [`write_atomic`] of a byte buffer (reports, summaries): the one atomic writer.
pub(crate) fn write_atomic_bytes(out: &Path, bytes: &[u8]) -> io::Result<()> {
    write_atomic(out, |w| w.write_all(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::read::GzDecoder;
    use std::io::Read;

    #[test]
    fn pieces_concatenate_into_one_gzip_member() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = PieceWriter::create(&dir.path().join("p1"), 1).unwrap();
        let big: Vec<u8> = (0..600_000u32)
            .flat_map(|i| (i % 251).to_le_bytes())
            .collect();
        w.buf().extend_from_slice(&big);
        w.maybe_flush().unwrap();
        w.buf().extend_from_slice(b"tail of piece one");
        let p1 = w.finish().unwrap();
        let head = piece_from_bytes(b"head:", 6, false).unwrap();
        let end = piece_from_bytes(b":end", 6, true).unwrap();
        let out = dir.path().join("out.gz");
        write_gzip(&out, &[head, p1, end]).unwrap();
        let mut got = Vec::new();
        // A single-member decoder must read it all: one member, valid CRC and size.
        GzDecoder::new(File::open(&out).unwrap())
            .read_to_end(&mut got)
            .unwrap();
        let mut want = b"head:".to_vec();
        want.extend_from_slice(&big);
        want.extend_from_slice(b"tail of piece one:end");
        assert_eq!(got, want);
    }

    fn write_piece(path: &Path, level: u32, data: &[u8]) -> Piece {
        let mut w = PieceWriter::create(path, level).unwrap();
        w.buf().extend_from_slice(data);
        w.finish().unwrap()
    }

    /// A thread's second piece reuses the first's compressor (reset) and buffers; a piece at
    /// another level does not. Each compresses as a fresh compressor would, and a piece (here
    /// the separator) may be written twice.
    #[test]
    fn a_reused_compressor_writes_what_a_fresh_one_does() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().to_path_buf();
        let text = |n: u32| -> Vec<u8> {
            (0..50_000u32)
                .flat_map(|i| format!("{{\"ts\": {}}},", i * n % 977).into_bytes())
                .collect()
        };
        let (a, b, c) = (text(3), text(7), text(11));
        let pieces = std::thread::scope(|s| {
            s.spawn(|| {
                [
                    write_piece(&d.join("a"), 1, &a),
                    write_piece(&d.join("b"), 1, &b),
                    write_piece(&d.join("c"), 6, &c),
                ]
            })
            .join()
            .unwrap()
        });
        // Each on a thread of its own: a fresh compressor.
        for (name, level, data) in [("b", 1, &b), ("c", 6, &c)] {
            let fresh = d.join(format!("{name}-fresh"));
            std::thread::scope(|s| s.spawn(|| write_piece(&fresh, level, data)).join().unwrap());
            assert_eq!(
                fs::read(d.join(name)).unwrap(),
                fs::read(&fresh).unwrap(),
                "{name}"
            );
        }
        let sep = piece_from_bytes(b",", 1, false).unwrap();
        match &sep.data {
            PieceData::Bytes(v) => assert!(v.capacity() < 1024, "{}", v.capacity()),
            PieceData::File(_) => panic!("a piece from bytes is bytes"),
        }
        let [pa, pb, pc] = pieces;
        let end = piece_from_bytes(b"", 1, true).unwrap();
        let out = d.join("out.gz");
        write_gzip(&out, &[pa, sep.clone(), pb, sep, pc, end]).unwrap();
        let mut got = Vec::new();
        GzDecoder::new(File::open(&out).unwrap())
            .read_to_end(&mut got)
            .unwrap();
        assert_eq!(got, [&a[..], b",", &b, b",", &c].concat());
    }
}
