//! What a rank file's name says about its rank ([`parse_name`]: the naming rules of every
//! vendor, listed in [`super`]'s doc, with their tests), which names are traces at all
//! (`is_trace_name`, [`is_trace_path`]); the names torch's handler writes for training runs
//! are [`super::handler`]'s.

use std::path::Path;
use std::sync::OnceLock;

use regex::Regex;

use super::rankfile::Naming;
use crate::trace::rankid::RankId;

/// Does this path name a trace file (`*.json`, `*.json.gz`, an Nsight Systems export,
/// `*.sqlite`, or report, `*.nsys-rep`)?
pub(crate) fn is_trace_path(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(is_trace_name)
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
/// The names are tried in order: SGLang's, vLLM's, vLLM's with the global rank alone,
/// SGLang's CUDA-graph capture trace; torch's handler's names are [`super::handler`]'s; then
/// any name with a rank or worker number, and Nsight Systems' exports.
pub fn parse_name(name: &str) -> Option<Parsed> {
    if let Some(p) = sglang_name(name)
        .or_else(|| vllm_name(name))
        .or_else(|| vllm_rank_name(name))
    {
        return Some(p);
    }
    if name.starts_with(CUDA_GRAPH) {
        // Named as SGLang names it, or not a rank file at all.
        return cuda_graph_name(name);
    }
    // `torch.profiler.tensorboard_trace_handler`'s names, `{worker_name}.{stamp}`: their
    // rank, stamp and run are [`super::handler`]'s to read (a host name such as
    // `gpu-worker-3` in torch's own `{host}_{pid}` says nothing of the rank).
    if super::handler_names::parse(name).is_some() {
        return None;
    }
    generic_name(name).or_else(|| nsys_name(name))
}

/// SGLang's `[{prefix}-]{id}-TP-{tp}[-DP-{dp}][-PP-{pp}][-EP-{ep}][-{STAGE}].trace.json[.gz]`.
fn sglang_name(name: &str) -> Option<Parsed> {
    static SGLANG: OnceLock<Regex> = OnceLock::new();
    let sglang = re(
        &SGLANG,
        r"^(?P<key>.+?)-TP-(?P<tp>\d+)(?:-DP-(?P<dp>\d+))?(?:-PP-(?P<pp>\d+))?(?:-EP-(?P<ep>\d+))?(?:-(?P<stage>EXTEND|DECODE|prefill|decode|(?:ForwardMode\.)?(?:EXTEND|DECODE)|1|2))?\.trace\.json(?:\.gz)?$",
    );
    let c = sglang.captures(name)?;
    Some(Parsed {
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
    })
}

/// vLLM's `[{prefix}_]dp{d}_pp{p}_tp{t}[_dcp{c}][_ep{e}]_rank{r}.{ns}.pt.trace.json[.gz]`.
fn vllm_name(name: &str) -> Option<Parsed> {
    static VLLM: OnceLock<Regex> = OnceLock::new();
    let vllm = re(
        &VLLM,
        r"^(?:(?P<key>.+)_)?dp(?P<dp>\d+)_pp(?P<pp>\d+)_tp(?P<tp>\d+)(?:_dcp(?P<dcp>\d+))?(?:_ep(?P<ep>\d+))?_rank(?P<rank>\d+)\.(?P<ns>\d+)\.pt\.trace\.json(?:\.gz)?$",
    );
    let c = vllm.captures(name)?;
    Some(Parsed {
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
    })
}

/// Two more vLLM names with the global rank alone: a dense (non-MoE) model's, whose workers
/// make no expert-parallel group so their name falls back to `rank{r}`
/// (`get_worker_rank_suffix`, vllm/distributed/utils.py), and older vLLM's
/// `{instance}-rank-{r}`. Their stamp is `time.time_ns()`: a 13-digit stamp in ms is torch
/// 1.8–1.9's handler, a training run's `rank{r}` worker name (generic naming). A node index in
/// the prefix (`node1_rank3`) is a training run's worker name, over nodes:
/// [`super::handler_names`] reads it.
fn vllm_rank_name(name: &str) -> Option<Parsed> {
    static VLLM_RANK: OnceLock<Regex> = OnceLock::new();
    static NODE: OnceLock<Regex> = OnceLock::new();
    let vllm_rank = re(
        &VLLM_RANK,
        r"^(?:(?P<key>.+)-rank-|(?:(?P<prefix>.+)_)?rank)(?P<rank>\d+)\.(?P<ns>\d+)\.pt\.trace\.json(?:\.gz)?$",
    );
    let node = re(&NODE, r"(?i)(?:^|[^a-z])node[-_]?\d");
    let c = vllm_rank
        .captures(name)
        .filter(|c| c.name("prefix").is_none_or(|p| !node.is_match(p.as_str())))?;
    let ms = c["ns"].len() == 13;
    Some(Parsed {
        naming: if ms { Naming::Generic } else { Naming::Vllm },
        key: c
            .name("key")
            .or(c.name("prefix"))
            // No prefix: `rank{r}.{ns}` is also torch's handler with `worker_name=f"rank{r}"`
            // (a training run's), so the profile is not called vLLM's.
            .map_or("rank", |m| m.as_str())
            .to_string(),
        stage: None,
        id: RankId {
            rank: num(&c, "rank"),
            ..Default::default()
        },
        ns: c["ns"].parse().ok(),
    })
}

/// The start of [`cuda_graph_name`]'s names.
const CUDA_GRAPH: &str = "cuda_graph_capture-";

/// SGLang's CUDA-graph capture trace (`SGLANG_ENABLE_CUDA_GRAPH_CAPTURE_TRACE=1`,
/// `export_cuda_graph_capture_trace` in `profile_utils.py`): one profile per runner.
fn cuda_graph_name(name: &str) -> Option<Parsed> {
    let rest = name.strip_prefix(CUDA_GRAPH)?;
    let (runner, tp) = rest
        .strip_suffix(".json.gz")
        .or_else(|| rest.strip_suffix(".json"))?
        .rsplit_once("-TP-")?;
    Some(Parsed {
        naming: Naming::Sglang,
        key: format!("cuda_graph_capture-{runner}"),
        stage: None,
        id: RankId {
            tp: Some(tp.parse().ok()?),
            ..Default::default()
        },
        ns: None,
    })
}

/// Any name with a rank or worker number (`…rank3….json`, `worker-3.sqlite`): the text around
/// the number is the run's key.
fn generic_name(name: &str) -> Option<Parsed> {
    static GENERIC: OnceLock<Regex> = OnceLock::new();
    let generic = re(
        &GENERIC,
        r"(?i)^(?P<key>.*?)[-_.]?(?:rank[-_]?|worker[-_]?)(?P<rank>\d+)(?P<rest>[^/]*?)\.(?:json(?:\.gz)?|sqlite|nsys-rep)$",
    );
    let c = generic.captures(name)?;
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
    Some(Parsed {
        naming: Naming::Generic,
        key,
        stage: None,
        id: RankId {
            rank: num(&c, "rank"),
            ..Default::default()
        },
        ns: None,
    })
}

/// An Nsight Systems export named by `nsys profile -o NAME_%q{RANK}` (or `%q{SLURM_PROCID}`,
/// `%q{OMPI_COMM_WORLD_RANK}`, `%q{LOCAL_RANK}`): `NAME_3.sqlite`, `NAME-3.sqlite` (and the
/// reports themselves, `NAME_3.nsys-rep`). The number
/// must follow a `_` or `-` and have at most 4 digits, so that nsys's own numbering
/// (`report1`, `report2`, …, no separator) and `%h_%p` process ids (5 digits and more) are not
/// taken for ranks: those files get their ranks in file order, as other unnamed traces.
fn nsys_name(name: &str) -> Option<Parsed> {
    static NSYS: OnceLock<Regex> = OnceLock::new();
    let c = re(
        &NSYS,
        r"^(?P<key>.*?)[-_](?P<rank>\d{1,4})\.(?:sqlite|nsys-rep)$",
    )
    .captures(name)?;
    let key = c["key"].trim_matches(['-', '_', '.']);
    Some(Parsed {
        naming: Naming::Generic,
        key: if key.is_empty() { "nsys" } else { key }.to_string(),
        stage: None,
        id: RankId {
            rank: num(&c, "rank"),
            ..Default::default()
        },
        ns: None,
    })
}

pub(crate) fn is_trace_name(name: &str) -> bool {
    name.ends_with(".json")
        || name.ends_with(".json.gz")
        || crate::trace::read::nsys::is_nsys_name(name)
        || crate::trace::read::nsys::export::is_rep_name(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(name: &str) -> Option<(Naming, String, Option<String>, RankId)> {
        parse_name(name).map(|p| (p.naming, p.key, p.stage, p.id))
    }

    #[test]
    fn nsys_export_names() {
        let rank = |n: &str| parse_name(n).map(|p| (p.key, p.id.rank));
        let k = |s: &str, r| Some((s.to_string(), Some(r)));
        assert_eq!(rank("rank3.sqlite"), k("trace", 3));
        assert_eq!(rank("report_rank3.sqlite"), k("report", 3));
        assert_eq!(rank("profile_3.sqlite"), k("profile", 3));
        assert_eq!(rank("llama-70b-12.sqlite"), k("llama-70b", 12));
        // nsys's own numbering and `%h_%p` are not ranks.
        assert_eq!(rank("report1.sqlite"), None);
        assert_eq!(rank("gpu-node-7_123456.sqlite"), None);
        assert!(is_trace_name("report1.sqlite"));
        assert!(is_trace_name("report1.nsys-rep"));
        // Reports carry their rank as their exports do.
        assert_eq!(rank("rank3.nsys-rep"), k("trace", 3));
        assert_eq!(rank("profile_3.nsys-rep"), k("profile", 3));
        assert_eq!(rank("report1.nsys-rep"), None);
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
