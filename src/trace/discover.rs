//! Discovery of rank files and their identity.
//!
//! A profile directory holds one trace per rank, named by the framework that wrote it:
//!
//! - SGLang: `[{prefix}-]{profile_id}-TP-{tp}[-DP-{dp}][-PP-{pp}][-EP-{ep}][-{STAGE}].trace.json.gz`,
//!   a dimension only when its size is > 1, STAGE ∈ EXTEND, DECODE, prefill, decode;
//! - vLLM: `[{prefix}_]dp{d}_pp{p}_tp{t}_dcp{c}_ep{e}_rank{r}.{ns}.pt.trace.json[.gz]`, the older
//!   `{instance}-rank-{r}.{ns}.pt.trace.json[.gz]`; frontend `*.async_llm.*` traces are skipped;
//! - generic `…rank-N…`, `…rank_N…`, `…workerN…` `.json[.gz]`;
//! - otherwise `distributedInfo.rank` from the file's header, otherwise file order (warned).
//!
//! Names win over `distributedInfo.rank`: with DP > 1 it repeats across replicas (it is the
//! rank inside the TP group). Files are grouped by (directory, profile id, stage); `merged-*`
//! files are never picked up.
//!
//! Listing a directory ([`list_dir`]) or files given by name ([`list_files`]) is safe on any
//! file system:
//! - `--recursive` follows symlinked directories, but visits each directory (by device and
//!   inode) once, so a `dot -> .` link or two links into each other cannot loop, and goes at
//!   most [`MAX_DEPTH`] levels down;
//! - the same file (device and inode: a hard link, a symlink to a listed file) is listed once;
//! - only regular files are ever opened: a FIFO, socket or device named like a trace is skipped
//!   with a note (opening a FIFO would block);
//! - an entry named like a rank file that cannot be read (a dangling or looping symlink, a
//!   directory, one that vanished) is kept, so that the merge or analysis reports that rank as
//!   unreadable instead of quietly leaving it out.
//!
//! (Over ~500 lines: naming rules of every vendor with their tests.)

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use regex::Regex;

/// Where a rank file sits in the parallel layout. Dimensions absent from the name are `None`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RankId {
    pub tp: Option<u32>,
    pub dp: Option<u32>,
    pub pp: Option<u32>,
    pub ep: Option<u32>,
    /// vLLM's decode-context-parallel rank.
    pub dcp: Option<u32>,
    /// A global rank (vLLM `rank{r}`, generic names, `distributedInfo.rank`, file order).
    pub rank: Option<u32>,
}

impl RankId {
    /// Ordering as SGLang's merger sorts files: DP, EP, PP, TP, then the global rank.
    pub fn sort_key(&self) -> (u32, u32, u32, u32, u32, u32) {
        let z = |v: Option<u32>| v.unwrap_or(0);
        (
            z(self.dp),
            z(self.ep),
            z(self.pp),
            z(self.tp),
            z(self.dcp),
            z(self.rank),
        )
    }

    /// SGLang's `process_sort_index` base: `dp*1e8 + ep*1e6 + pp*1e4 + tp*100` (a GPU adds its
    /// device pid). Without a TP rank the global rank takes its place.
    pub fn sort_index_base(&self) -> i64 {
        let z = |v: Option<u32>| i64::from(v.unwrap_or(0));
        let tp = self.tp.or(self.rank);
        z(self.dp) * 100_000_000 + z(self.ep) * 1_000_000 + z(self.pp) * 10_000 + z(tp) * 100
    }

    /// The label of this rank with every dimension it has, without brackets: `TP01-DP01`,
    /// `RANK03`. (In a group, [`RankFile::label`] shows only the dimensions that vary.)
    pub fn label(&self) -> String {
        strip_brackets(&label_of(self, Shown::present())).to_string()
    }

    /// Parses a label such as `TP01-DP01`, `[TP01-DP01]` or `RANK03` (the inverse of
    /// [`RankId::label`]; unknown parts are ignored).
    pub fn from_label(label: &str) -> RankId {
        let mut id = RankId::default();
        for part in strip_brackets(label).split('-') {
            let digits = part.trim_start_matches(|c: char| c.is_ascii_alphabetic());
            let key = &part[..part.len() - digits.len()];
            let v: Option<u32> = digits.parse().ok();
            match key.to_ascii_uppercase().as_str() {
                "TP" => id.tp = v,
                "DP" => id.dp = v,
                "PP" => id.pp = v,
                "EP" => id.ep = v,
                "DCP" => id.dcp = v,
                "RANK" => id.rank = v,
                _ => {}
            }
        }
        id
    }
}

fn strip_brackets(label: &str) -> &str {
    label.trim_start_matches('[').trim_end_matches(']')
}

/// The prefix of every merged trace's file name.
pub const MERGED_PREFIX: &str = "merged-";

/// `merged-<id>[-<stage>].trace.json.gz`: the name of a profile's merged trace.
pub fn merged_name(profile_id: &str, stage: Option<&str>) -> String {
    match stage {
        Some(s) => format!("{MERGED_PREFIX}{profile_id}-{s}.trace.json.gz"),
        None => format!("{MERGED_PREFIX}{profile_id}.trace.json.gz"),
    }
}

/// Is this file a merged trace (by its name, `merged-*`)? Rank discovery never picks one up.
pub fn is_merged_trace(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with(MERGED_PREFIX))
}

/// The profile id (and stage, if any) a merged trace's name carries: `merged-1234-EXTEND` for
/// `merged-1234-EXTEND.trace.json.gz`, without the prefix: `1234-EXTEND`.
pub fn merged_profile_id(path: &Path) -> String {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("merged");
    name.trim_start_matches(MERGED_PREFIX)
        .trim_end_matches(".gz")
        .trim_end_matches(".json")
        .trim_end_matches(".trace")
        .to_string()
}

/// Does this path name a trace file (`*.json` or `*.json.gz`)?
pub fn is_trace_path(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(is_trace_name)
}

/// How a file's rank was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Naming {
    Sglang,
    Vllm,
    Generic,
    DistributedInfo,
    FileOrder,
}

/// One rank's trace file.
#[derive(Clone, Debug)]
pub struct RankFile {
    pub path: PathBuf,
    pub id: RankId,
    /// The rank label used in merged pids, e.g. `[TP01-DP01]`.
    pub label: String,
    pub size: u64,
    pub naming: Naming,
}

impl RankFile {
    /// [`RankFile::label`] without its brackets: `TP01-DP01`.
    pub fn id_label(&self) -> String {
        strip_brackets(&self.label).to_string()
    }
}

/// The rank files of one profile (and stage) in one directory, in rank order.
#[derive(Clone, Debug)]
pub struct Group {
    pub dir: PathBuf,
    pub profile_id: String,
    pub stage: Option<String>,
    pub files: Vec<RankFile>,
}

impl Group {
    /// `merged-<id>[-<stage>].trace.json.gz`.
    pub fn merged_name(&self) -> String {
        merged_name(&self.profile_id, self.stage.as_deref())
    }

    /// Ranks absent from the full TP × DP × PP grid, as labels. EP is left out of the grid:
    /// it splits the TP group (each TP rank has one EP rank), it is not a dimension of its own.
    pub fn missing(&self) -> Vec<String> {
        let max = |f: fn(&RankId) -> Option<u32>| self.files.iter().filter_map(|r| f(&r.id)).max();
        let (Some(tp), dp, pp) = (max(|r| r.tp), max(|r| r.dp), max(|r| r.pp)) else {
            return self.missing_global();
        };
        let mut out = Vec::new();
        for d in 0..=dp.unwrap_or(0) {
            for p in 0..=pp.unwrap_or(0) {
                for t in 0..=tp {
                    let found = self.files.iter().any(|r| {
                        r.id.tp == Some(t) && r.id.dp.unwrap_or(0) == d && r.id.pp.unwrap_or(0) == p
                    });
                    if !found {
                        let id = RankId {
                            tp: Some(t),
                            dp: dp.map(|_| d),
                            pp: pp.map(|_| p),
                            ..Default::default()
                        };
                        out.push(label_of(&id, Shown::present()));
                    }
                }
            }
        }
        out
    }

    fn missing_global(&self) -> Vec<String> {
        let ranks: Vec<u32> = self.files.iter().filter_map(|r| r.id.rank).collect();
        let Some(&max) = ranks.iter().max() else {
            return Vec::new();
        };
        (0..=max)
            .filter(|r| !ranks.contains(r))
            .map(|r| format!("[RANK{r:02}]"))
            .collect()
    }
}

/// What discovery found, plus notes about files it skipped or had to guess.
#[derive(Clone, Debug, Default)]
pub struct Discovery {
    pub groups: Vec<Group>,
    pub notes: Vec<String>,
}

impl Discovery {
    /// Keeps only the groups of one profile id (exact, or as the part after a prefix).
    pub fn select(&mut self, profile_id: Option<&str>, stage: Option<&str>) {
        if let Some(id) = profile_id {
            self.groups.retain(|g| {
                g.profile_id == id
                    || g.profile_id.ends_with(&format!("-{id}"))
                    || g.profile_id.ends_with(&format!("_{id}"))
            });
        }
        if let Some(st) = stage {
            self.groups.retain(|g| {
                g.stage
                    .as_deref()
                    .is_some_and(|s| s.eq_ignore_ascii_case(st))
            });
        }
    }
}

/// Finds the rank files under `dir` (and its subdirectories with `recursive`).
pub fn discover(dir: &Path, recursive: bool) -> io::Result<Discovery> {
    let listing = list_dir(dir, recursive)?;
    let mut d = discover_files(&listing.files);
    d.notes.splice(0..0, listing.notes);
    Ok(d)
}

/// How many directory levels `--recursive` descends below the directory given.
pub const MAX_DEPTH: usize = 32;

/// Candidate trace files (`*.json`, `*.json.gz`, `merged-*` included), and notes on what was
/// skipped and why.
#[derive(Clone, Debug, Default)]
pub struct Listing {
    pub files: Vec<PathBuf>,
    pub notes: Vec<String>,
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
                super::reader::file_kind(&m.file_type())
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
pub fn list_dir(dir: &Path, recursive: bool) -> io::Result<Listing> {
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
pub fn list_files(paths: &[PathBuf]) -> io::Result<Listing> {
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

/// What a file name says about its rank.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Parsed {
    pub naming: Naming,
    /// The profile key: SGLang's `[prefix-]profile_id`, vLLM's prefix, a generic stem.
    pub key: String,
    pub stage: Option<String>,
    pub id: RankId,
    /// vLLM's time stamp in the name: ranks of one session are split from other sessions.
    pub ns: Option<u128>,
}

fn re(cell: &'static OnceLock<Regex>, pat: &str) -> &'static Regex {
    cell.get_or_init(|| Regex::new(pat).expect("static regex"))
}

fn num(c: &regex::Captures<'_>, name: &str) -> Option<u32> {
    c.name(name).and_then(|m| m.as_str().parse().ok())
}

/// Reads the rank identity from a file name alone. `None`: not a rank-file name we know.
pub fn parse_name(name: &str) -> Option<Parsed> {
    static SGLANG: OnceLock<Regex> = OnceLock::new();
    static VLLM: OnceLock<Regex> = OnceLock::new();
    static VLLM_OLD: OnceLock<Regex> = OnceLock::new();
    static GENERIC: OnceLock<Regex> = OnceLock::new();
    let sglang = re(
        &SGLANG,
        r"^(?P<key>.+?)-TP-(?P<tp>\d+)(?:-DP-(?P<dp>\d+))?(?:-PP-(?P<pp>\d+))?(?:-EP-(?P<ep>\d+))?(?:-(?P<stage>EXTEND|DECODE|prefill|decode))?\.trace\.json(?:\.gz)?$",
    );
    if let Some(c) = sglang.captures(name) {
        return Some(Parsed {
            naming: Naming::Sglang,
            key: c["key"].to_string(),
            stage: c.name("stage").map(|m| m.as_str().to_string()),
            id: RankId {
                tp: num(&c, "tp"),
                dp: num(&c, "dp"),
                pp: num(&c, "pp"),
                ep: num(&c, "ep"),
                ..Default::default()
            },
            ns: None,
        });
    }
    let vllm = re(
        &VLLM,
        r"^(?:(?P<key>.+)_)?dp(?P<dp>\d+)_pp(?P<pp>\d+)_tp(?P<tp>\d+)(?:_dcp(?P<dcp>\d+))?(?:_ep(?P<ep>\d+))?_rank(?P<rank>\d+)\.(?P<ns>\d+)\.pt\.trace\.json(?:\.gz)?$",
    );
    if let Some(c) = vllm.captures(name) {
        return Some(Parsed {
            naming: Naming::Vllm,
            key: c.name("key").map_or("vllm", |m| m.as_str()).to_string(),
            stage: None,
            id: RankId {
                tp: num(&c, "tp"),
                dp: num(&c, "dp"),
                pp: num(&c, "pp"),
                ep: num(&c, "ep"),
                dcp: num(&c, "dcp"),
                rank: num(&c, "rank"),
            },
            ns: c["ns"].parse().ok(),
        });
    }
    let vllm_old = re(
        &VLLM_OLD,
        r"^(?P<key>.+)-rank-(?P<rank>\d+)\.(?P<ns>\d+)\.pt\.trace\.json(?:\.gz)?$",
    );
    if let Some(c) = vllm_old.captures(name) {
        return Some(Parsed {
            naming: Naming::Vllm,
            key: c["key"].to_string(),
            stage: None,
            id: RankId {
                rank: num(&c, "rank"),
                ..Default::default()
            },
            ns: c["ns"].parse().ok(),
        });
    }
    let generic = re(
        &GENERIC,
        r"(?i)^(?P<key>.*?)[-_.]?(?:rank[-_]?|worker[-_]?)(?P<rank>\d+)(?P<rest>[^/]*?)\.json(?:\.gz)?$",
    );
    if let Some(c) = generic.captures(name) {
        let mut key = c["key"].trim_matches(['-', '_', '.']).to_string();
        let rest = c["rest"]
            .trim_end_matches(".trace")
            .trim_end_matches(".pt")
            .trim_matches(['-', '_', '.']);
        if !rest.is_empty() {
            key = if key.is_empty() {
                rest.to_string()
            } else {
                format!("{key}-{rest}")
            };
        }
        if key.is_empty() {
            key = "trace".into();
        }
        return Some(Parsed {
            naming: Naming::Generic,
            key,
            stage: None,
            id: RankId {
                rank: num(&c, "rank"),
                ..Default::default()
            },
            ns: None,
        });
    }
    None
}

fn is_trace_name(name: &str) -> bool {
    name.ends_with(".json") || name.ends_with(".json.gz")
}

/// (directory, profile key, stage).
type GroupKey = (PathBuf, String, Option<String>);

/// Groups the given files by profile and stage, with rank identities.
pub fn discover_files(paths: &[PathBuf]) -> Discovery {
    let mut d = Discovery::default();
    // (dir, naming, key, stage) -> files
    let mut by_key: BTreeMap<GroupKey, Vec<(Parsed, PathBuf)>> = BTreeMap::new();
    let mut unnamed: BTreeMap<PathBuf, Vec<PathBuf>> = BTreeMap::new();
    for path in paths {
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        if !is_trace_name(name) {
            continue;
        }
        if name.starts_with(MERGED_PREFIX) {
            d.notes.push(format!(
                "{}: a merged trace, not a rank file; skipped",
                path.display()
            ));
            continue;
        }
        if name.contains(".async_llm.") {
            d.notes.push(format!(
                "{}: a vLLM frontend (async_llm) trace, not a rank; skipped",
                path.display()
            ));
            continue;
        }
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        match parse_name(name) {
            Some(p) => by_key
                .entry((dir, p.key.clone(), p.stage.clone()))
                .or_default()
                .push((p, path.clone())),
            None => unnamed.entry(dir).or_default().push(path.clone()),
        }
    }
    for ((dir, key, stage), mut files) in by_key {
        files.sort_by(|a, b| a.0.ns.cmp(&b.0.ns).then(a.1.cmp(&b.1)));
        // vLLM writes a time stamp per file: one session holds each rank once.
        let mut sessions: Vec<Vec<(Parsed, PathBuf)>> = Vec::new();
        for f in files {
            let clash = sessions
                .last()
                .is_some_and(|s| f.0.ns.is_some() && s.iter().any(|g| g.0.id == f.0.id));
            if sessions.is_empty() || clash {
                sessions.push(Vec::new());
            }
            if let Some(s) = sessions.last_mut() {
                s.push(f);
            }
        }
        let n = sessions.len();
        for s in sessions {
            let profile_id = match (n > 1, s.first().and_then(|f| f.0.ns)) {
                (true, Some(ns)) => format!("{key}.{ns}"),
                _ => key.clone(),
            };
            let files = s
                .into_iter()
                .map(|(p, path)| rank_file(path, p.id, p.naming))
                .collect();
            d.groups
                .push(finish_group(dir.clone(), profile_id, stage.clone(), files));
        }
    }
    for (dir, paths) in unnamed {
        let mut files = Vec::new();
        for path in paths {
            match super::reader::read_head(&path) {
                Ok(Some(h)) => {
                    let rank = h.distributed_rank().and_then(|r| u32::try_from(r).ok());
                    let naming = if rank.is_some() {
                        Naming::DistributedInfo
                    } else {
                        Naming::FileOrder
                    };
                    files.push(rank_file(
                        path,
                        RankId {
                            rank,
                            ..Default::default()
                        },
                        naming,
                    ));
                }
                Ok(None) => {}
                Err(e) => d
                    .notes
                    .push(format!("{}: cannot read: {e}; skipped", path.display())),
            }
        }
        if files.is_empty() {
            continue;
        }
        // Ranks from distributedInfo must be distinct to be trusted.
        let mut ranks: Vec<_> = files.iter().filter_map(|f| f.id.rank).collect();
        ranks.sort_unstable();
        ranks.dedup();
        if ranks.len() != files.len() {
            d.notes.push(format!(
                "{}: {} trace files without a rank in their names and without distinct \
                 distributedInfo.rank; ranks given in file-name order",
                dir.display(),
                files.len()
            ));
            files.sort_by(|a, b| a.path.cmp(&b.path));
            for (i, f) in files.iter_mut().enumerate() {
                f.id.rank = Some(i as u32);
                f.naming = Naming::FileOrder;
            }
        }
        let id = dir
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("trace")
            .to_string();
        d.groups.push(finish_group(dir, id, None, files));
    }
    d
}

fn rank_file(path: PathBuf, id: RankId, naming: Naming) -> RankFile {
    let size = fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    RankFile {
        path,
        id,
        label: String::new(),
        size,
        naming,
    }
}

/// Which dimensions a label shows.
#[derive(Clone, Copy)]
struct Shown {
    tp: bool,
    dp: bool,
    pp: bool,
    ep: bool,
    dcp: bool,
}

impl Shown {
    fn present() -> Self {
        Shown {
            tp: true,
            dp: true,
            pp: true,
            ep: true,
            dcp: true,
        }
    }
}

fn label_of(id: &RankId, shown: Shown) -> String {
    let mut parts = Vec::new();
    let mut add = |name: &str, v: Option<u32>, show: bool| {
        if let (Some(v), true) = (v, show) {
            parts.push(format!("{name}{v:02}"));
        }
    };
    // SGLang's order: TP, DP, PP, EP.
    add("TP", id.tp, shown.tp);
    add("DP", id.dp, shown.dp);
    add("PP", id.pp, shown.pp);
    add("EP", id.ep, shown.ep);
    add("DCP", id.dcp, shown.dcp);
    if parts.is_empty() {
        parts.push(format!("RANK{:02}", id.rank.unwrap_or(0)));
    }
    format!("[{}]", parts.join("-"))
}

fn finish_group(
    dir: PathBuf,
    profile_id: String,
    stage: Option<String>,
    mut files: Vec<RankFile>,
) -> Group {
    files.sort_by(|a, b| {
        a.id.sort_key()
            .cmp(&b.id.sort_key())
            .then(a.path.cmp(&b.path))
    });
    // vLLM names every dimension even of size 1: show only those that vary (TP at least).
    let vllm = files
        .iter()
        .any(|f| f.naming == Naming::Vllm && f.id.tp.is_some());
    let shown = if vllm {
        let varies = |f: fn(&RankId) -> Option<u32>| {
            let mut v: Vec<_> = files.iter().map(|r| f(&r.id)).collect();
            v.sort_unstable();
            v.dedup();
            v.len() > 1
        };
        let (dp, pp, ep, dcp) = (
            varies(|r| r.dp),
            varies(|r| r.pp),
            varies(|r| r.ep),
            varies(|r| r.dcp),
        );
        Shown {
            tp: varies(|r| r.tp) || !(dp || pp || ep || dcp),
            dp,
            pp,
            ep,
            dcp,
        }
    } else {
        Shown::present()
    };
    for f in &mut files {
        f.label = label_of(&f.id, shown);
    }
    Group {
        dir,
        profile_id,
        stage,
        files,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(name: &str) -> Option<(Naming, String, Option<String>, RankId)> {
        parse_name(name).map(|p| (p.naming, p.key, p.stage, p.id))
    }

    #[test]
    fn sglang_names() {
        let (n, k, s, id) = p("1795212682.6326063-TP-1.trace.json.gz").unwrap();
        assert_eq!(
            (n, k.as_str(), s, id.tp, id.dp),
            (Naming::Sglang, "1795212682.6326063", None, Some(1), None)
        );
        let (_, k, _, id) = p("1795213098.719915-TP-1-DP-1.trace.json.gz").unwrap();
        assert_eq!(
            (k.as_str(), id.tp, id.dp),
            ("1795213098.719915", Some(1), Some(1))
        );
        let (_, k, s, id) = p("bystage-1-TP-0-EXTEND.trace.json.gz").unwrap();
        assert_eq!(
            (k.as_str(), s.as_deref(), id.tp),
            ("bystage-1", Some("EXTEND"), Some(0))
        );
    }
}
