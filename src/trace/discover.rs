//! Discovery of rank files and their identity.
//!
//! A profile directory holds one trace per rank, named by the framework that wrote it:
//!
//! - SGLang: `[{prefix}-]{profile_id}-TP-{tp}[-DP-{dp}][-PP-{pp}][-EP-{ep}][-{STAGE}].trace.json.gz`,
//!   a dimension only when its size is > 1, STAGE ∈ EXTEND, DECODE, prefill, decode (up to
//!   0.5.1: `1`, `2`, `ForwardMode.EXTEND`, `ForwardMode.DECODE`, read as EXTEND, DECODE);
//! - vLLM: `[{prefix}_]dp{d}_pp{p}_tp{t}_dcp{c}_ep{e}_rank{r}.{ns}.pt.trace.json[.gz]` (MoE
//!   models), `[{prefix}_]rank{r}.{ns}.pt.trace.json[.gz]` (dense models: no EP group; with
//!   DP > 1 the ranks come from the heads, `dense_dp`), the older
//!   `{instance}-rank-{r}.{ns}.pt.trace.json[.gz]`; frontend `*.async_llm.*` traces are
//!   skipped; `capture_traces/graph_capture_rank_0.{ns}.pt.trace.json.gz` (CUDA-graph
//!   capture at start-up) is kept as a profile of its own, with a note, as SGLang's
//!   `graph_capture_profile/cuda_graph_capture-{runner}-TP-{tp}.json.gz` is, one per runner;
//! - generic `…rank-N…`, `…rank_N…`, `…workerN…` `.json[.gz]`;
//! - otherwise `distributedInfo.rank` from the file's header, otherwise file order (warned;
//!   `trace/unnamed.rs`), by session for torch's own `{host}_{pid}.{ns}.pt.trace.json.gz`.
//!
//! Files stamped one by one (vLLM's `.{ns}`, SGLang 0.4's `{time.time()}-TP-{tp}`) are put
//! into the profiling sessions that wrote them (`trace/sessions.rs`).
//!
//! Names win over `distributedInfo.rank`: with DP > 1 it repeats across replicas (it is the
//! rank inside the TP group). Files are grouped by (directory, profile id, stage); `merged-*`
//! files are never picked up ([`super::merged`]).
//!
//! The candidate files come from [`super::listing`] (safe directory walks), re-exported here.
//!
//! (Over ~500 lines: the naming rules of every vendor, with their tests.)

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use regex::Regex;

pub use super::grid::missing_in;
pub use super::merged::{is_merged_trace, merged_name, merged_profile_id, MERGED_PREFIX};
pub use super::rankid::RankId;
use super::rankid::{label_of, strip_brackets};

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

    /// Where this profile's merged trace goes in `dir` by default, and a note when that is
    /// not [`Group::merged_name`] (another writer's merged trace holds that name; see
    /// [`super::merged::merged_path`]).
    pub fn merged_path(&self, dir: &Path) -> (PathBuf, Option<String>) {
        super::merged::merged_path(dir, &self.profile_id, self.stage.as_deref())
    }

    /// Ranks absent from the full TP × DP × PP grid, as labels (see [`missing_in`]).
    pub fn missing(&self) -> Vec<String> {
        let ids: Vec<RankId> = self.files.iter().map(|f| f.id.clone()).collect();
        super::grid::missing_shown(&ids, super::grid::shown_of(&self.files))
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

pub use super::listing::{list_dir, list_files, Listing, MAX_DEPTH};

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

/// SGLang's stage suffix as the stage's name. SGLang up to 0.5.1 wrote `-{stage.__str__()}`
/// of its `ForwardMode` `IntEnum`: `-1` / `-2` under Python 3.11 and later,
/// `-ForwardMode.EXTEND` under 3.10; 0.5.3 on write `-EXTEND` / `-DECODE` (and its second
/// profiler `-prefill` / `-decode`, kept as written).
fn stage_name(suffix: &str) -> String {
    match suffix.trim_start_matches("ForwardMode.") {
        "1" => "EXTEND",
        "2" => "DECODE",
        s => s,
    }
    .to_string()
}

/// Reads the rank identity from a file name alone. `None`: not a rank-file name we know.
pub fn parse_name(name: &str) -> Option<Parsed> {
    static SGLANG: OnceLock<Regex> = OnceLock::new();
    static VLLM: OnceLock<Regex> = OnceLock::new();
    static VLLM_RANK: OnceLock<Regex> = OnceLock::new();
    static GENERIC: OnceLock<Regex> = OnceLock::new();
    let sglang = re(
        &SGLANG,
        r"^(?P<key>.+?)-TP-(?P<tp>\d+)(?:-DP-(?P<dp>\d+))?(?:-PP-(?P<pp>\d+))?(?:-EP-(?P<ep>\d+))?(?:-(?P<stage>EXTEND|DECODE|prefill|decode|(?:ForwardMode\.)?(?:EXTEND|DECODE)|1|2))?\.trace\.json(?:\.gz)?$",
    );
    if let Some(c) = sglang.captures(name) {
        return Some(Parsed {
            naming: Naming::Sglang,
            key: c["key"].to_string(),
            stage: c.name("stage").map(|m| stage_name(m.as_str())),
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
    // Two more vLLM names with the global rank alone: a dense (non-MoE) model's, whose
    // workers make no expert-parallel group so their name falls back to `rank{r}`
    // (`get_worker_rank_suffix`, vllm/distributed/utils.py), and older vLLM's
    // `{instance}-rank-{r}`.
    let vllm_rank = re(
        &VLLM_RANK,
        r"^(?:(?P<key>.+)-rank-|(?:(?P<prefix>.+)_)?rank)(?P<rank>\d+)\.(?P<ns>\d+)\.pt\.trace\.json(?:\.gz)?$",
    );
    if let Some(c) = vllm_rank.captures(name) {
        return Some(Parsed {
            naming: Naming::Vllm,
            key: c
                .name("key")
                .or(c.name("prefix"))
                .map_or("vllm", |m| m.as_str())
                .to_string(),
            stage: None,
            id: RankId {
                rank: num(&c, "rank"),
                ..Default::default()
            },
            ns: c["ns"].parse().ok(),
        });
    }
    // SGLang's CUDA-graph capture trace (`SGLANG_ENABLE_CUDA_GRAPH_CAPTURE_TRACE=1`,
    // `export_cuda_graph_capture_trace` in `profile_utils.py`): one profile per runner.
    if let Some(rest) = name.strip_prefix("cuda_graph_capture-") {
        let (runner, tp) = rest
            .strip_suffix(".json.gz")
            .or_else(|| rest.strip_suffix(".json"))?
            .rsplit_once("-TP-")?;
        return Some(Parsed {
            naming: Naming::Sglang,
            key: format!("cuda_graph_capture-{runner}"),
            stage: None,
            id: RankId {
                tp: Some(tp.parse().ok()?),
                ..Default::default()
            },
            ns: None,
        });
    }
    // `torch.profiler.tensorboard_trace_handler`'s own name, `{hostname}_{pid}.{ns}`: the
    // host name says nothing of the rank (`gpu-worker-3`), the file's head does.
    if torch_handler_stamp(name).is_some() {
        return None;
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

/// The time stamp of a name as `torch.profiler.tensorboard_trace_handler` writes it without a
/// worker name (vLLM before its rank names, V0 and early V1):
/// `{socket.gethostname()}_{os.getpid()}.{time.time_ns()}.pt.trace.json[.gz]`.
pub(crate) fn torch_handler_stamp(name: &str) -> Option<u128> {
    static TORCH: OnceLock<Regex> = OnceLock::new();
    let c = re(
        &TORCH,
        r"^.+_\d+\.(?P<ns>\d{16,20})\.pt\.trace\.json(?:\.gz)?$",
    )
    .captures(name)?;
    c["ns"].parse().ok()
}

pub(crate) fn is_trace_name(name: &str) -> bool {
    name.ends_with(".json") || name.ends_with(".json.gz")
}

use super::sessions::GroupKey;

/// One profile's ranks spread over several directories (one per node, or files listed from
/// several places) make one group when no rank appears twice among them, kept under the first
/// directory; otherwise each directory keeps its own group (the same profile id in per-step
/// folders, or two sessions).
fn join_split_profiles(
    by_key: BTreeMap<GroupKey, Vec<(Parsed, PathBuf)>>,
) -> BTreeMap<GroupKey, Vec<(Parsed, PathBuf)>> {
    type Dirs = Vec<(PathBuf, Vec<(Parsed, PathBuf)>)>;
    let mut by_profile: BTreeMap<(String, Option<String>), Dirs> = BTreeMap::new();
    for ((dir, key, stage), files) in by_key {
        by_profile
            .entry((key, stage))
            .or_default()
            .push((dir, files));
    }
    let mut out = BTreeMap::new();
    for ((key, stage), dirs) in by_profile {
        let mut ids: Vec<&RankId> = dirs
            .iter()
            .flat_map(|(_, f)| f.iter().map(|(p, _)| &p.id))
            .collect();
        let n = ids.len();
        ids.sort_unstable();
        ids.dedup();
        if dirs.len() > 1 && ids.len() == n {
            let dir = dirs[0].0.clone();
            let all = dirs.into_iter().flat_map(|(_, f)| f).collect();
            out.insert((dir, key, stage), all);
        } else {
            for (dir, f) in dirs {
                out.insert((dir, key.clone(), stage.clone()), f);
            }
        }
    }
    out
}

/// Groups the given files by profile and stage, with rank identities.
pub fn discover_files(paths: &[PathBuf]) -> Discovery {
    let mut d = Discovery::default();
    // (dir, naming, key, stage) -> files
    let mut by_key: BTreeMap<GroupKey, Vec<(Parsed, PathBuf)>> = BTreeMap::new();
    let mut unnamed: BTreeMap<PathBuf, Vec<PathBuf>> = BTreeMap::new();
    let mut stamped: BTreeMap<PathBuf, Vec<(u128, PathBuf)>> = BTreeMap::new();
    let mut sglang_captures: BTreeMap<PathBuf, usize> = BTreeMap::new();
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
        if name.starts_with("graph_capture_rank_") {
            // `torch_profiler_dir/capture_traces/`, `capture_torch_profiler` in vLLM's
            // `--profiler-config` (`gpu_model_runner.py`): a profile of its own, kept.
            d.notes.push(format!(
                "{}: vLLM's CUDA-graph capture trace (written at start-up, local rank 0 only), \
                 not a serving profile: listed as a profile of its own",
                path.display()
            ));
        }
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        if name.starts_with("cuda_graph_capture-") {
            *sglang_captures.entry(dir.clone()).or_default() += 1;
        }
        match parse_name(name) {
            Some(p) => by_key
                .entry((dir, p.key.clone(), p.stage.clone()))
                .or_default()
                .push((p, path.clone())),
            None => match torch_handler_stamp(name) {
                Some(ns) => stamped.entry(dir).or_default().push((ns, path.clone())),
                None => unnamed.entry(dir).or_default().push(path.clone()),
            },
        }
    }
    for (dir, n) in sglang_captures {
        d.notes.push(format!(
            "{}: {n} SGLang CUDA-graph capture trace(s) (cuda_graph_capture-*, written at \
             start-up), not a serving profile: listed as a profile of their own per runner",
            super::unnamed::shown_dir(&dir)
        ));
    }
    super::sessions::join_sglang_stamps(&mut by_key, &mut d.notes);
    for ((dir, key, stage), mut files) in join_split_profiles(by_key) {
        super::dense_dp::global_ranks(&dir, &mut files, &mut d.notes);
        files.sort_by(|a, b| a.0.ns.cmp(&b.0.ns).then(a.1.cmp(&b.1)));
        // vLLM writes a time stamp per file: one session holds each rank once.
        let sessions = super::sessions::split(files, |f| f.0.ns, |f| &f.0.id);
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
    note_stageless_beside_stages(&d.groups, &mut d.notes);
    for (dir, paths) in unnamed {
        if let Some(g) = super::unnamed::group(dir, paths, &mut d.notes) {
            d.groups.push(g);
        }
    }
    for (dir, files) in stamped {
        let groups = super::unnamed::stamped_groups(dir, files, &mut d.notes);
        d.groups.extend(groups);
    }
    d
}

/// A by-stage SGLang profile stopped by hand (`/stop_profile` before `num_steps` ended each
/// stage; `capture run --profile-by-stage` with `--requests` or `--duration` does this) writes
/// the stage still open without a stage suffix (`_stop_profile()` with no stage, in
/// `profiler_manager.py`): a stage-less group beside stage groups of the same id is that window.
fn note_stageless_beside_stages(groups: &[Group], notes: &mut Vec<String>) {
    for g in groups.iter().filter(|g| g.stage.is_none()) {
        let staged: Vec<&str> = groups
            .iter()
            .filter(|s| s.dir == g.dir && s.profile_id == g.profile_id)
            .filter_map(|s| s.stage.as_deref())
            .collect();
        if !staged.is_empty() {
            notes.push(format!(
                "{}: profile {} has files without a stage beside its {} files: SGLang writes \
                 the stage still open when a by-stage profile is stopped by hand without a \
                 stage suffix; they are listed as a profile of their own",
                super::unnamed::shown_dir(&g.dir),
                g.profile_id,
                staged.join("/")
            ));
        }
    }
}

pub(super) fn rank_file(path: PathBuf, id: RankId, naming: Naming) -> RankFile {
    let size = fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    RankFile {
        path,
        id,
        label: String::new(),
        size,
        naming,
    }
}

pub(super) fn finish_group(
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
    let shown = super::grid::shown_of(&files);
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
