//! What a name written by `torch.profiler.tensorboard_trace_handler` says
//! (`{worker_name}.{stamp}.pt.trace.json[.gz]`, [`parse`]): the worker name, the stamp, and
//! the rank in the worker name when there is one. Which writers use which worker names, and
//! how their files make profiles, is [`super::handler`]'s doc.

use std::sync::OnceLock;

use regex::Regex;

/// What a `tensorboard_trace_handler` name says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct HandlerName {
    /// The worker name as written.
    pub(crate) worker: String,
    /// The stamp as written (ms or ns).
    pub(crate) stamp: String,
    /// The stamp in ns.
    pub(crate) ns: u128,
    /// The rank in the worker name, with the pattern the name follows (`worker{r}_step_12`)
    /// and the profile id it gives (`worker_step_12`); `None` for torch's `{host}_{pid}`.
    pub(crate) rank: Option<NamedRank>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct NamedRank {
    pub(crate) rank: u32,
    pub(crate) pattern: String,
    pub(crate) id: String,
}

fn re(cell: &'static OnceLock<Regex>, pat: &str) -> &'static Regex {
    cell.get_or_init(|| Regex::new(pat).expect("static regex"))
}

/// Reads a `{worker_name}.{stamp}.pt.trace.json[.gz]` name (stamp: 13 digits in ms, or 16 to
/// 20 in ns).
pub(crate) fn parse(name: &str) -> Option<HandlerName> {
    static NAME: OnceLock<Regex> = OnceLock::new();
    let c = re(
        &NAME,
        r"^(?P<worker>.+)\.(?P<stamp>\d{13}|\d{16,20})\.pt\.trace\.json(?:\.gz)?$",
    )
    .captures(name)?;
    let stamp = c["stamp"].to_string();
    let n: u128 = stamp.parse().ok()?;
    let ns = if stamp.len() == 13 { n * 1_000_000 } else { n };
    let worker = c["worker"].to_string();
    let rank = named_rank(&worker);
    Some(HandlerName {
        worker,
        stamp,
        ns,
        rank,
    })
}

/// The rank in a worker name: the number after `rank`, else `worker`, else `gpu`, `device`,
/// `proc` (with an optional `-`/`_` between); none in torch's own `{host}_{pid}` (a host name
/// has no `_`; `gpu-worker-3_4242`'s 3 is the host's).
fn named_rank(worker: &str) -> Option<NamedRank> {
    static HOST_PID: OnceLock<Regex> = OnceLock::new();
    static KW_END: OnceLock<Regex> = OnceLock::new();
    static TOKEN: OnceLock<Regex> = OnceLock::new();
    if let Some(c) = re(&HOST_PID, r"^(?P<host>[A-Za-z0-9.-]+)_\d+$").captures(worker) {
        // `rank_3`, `worker_3`: a keyword, not a host.
        if !re(&KW_END, r"(?i)(?:rank|worker|gpu|device|proc)$").is_match(&c["host"]) {
            return None;
        }
    }
    let token = re(
        &TOKEN,
        r"(?i)(?:^|[^a-z])(?P<kw>rank|worker|gpu|device|proc)[-_]?(?P<n>\d+)(?:$|[^0-9])",
    );
    const ORDER: [&str; 5] = ["rank", "worker", "gpu", "device", "proc"];
    let mut best: Option<(usize, regex::Captures<'_>)> = None;
    let mut at = 0;
    while at < worker.len() {
        let Some(c) = token.captures_at(worker, at) else {
            break;
        };
        let kw = c["kw"].to_ascii_lowercase();
        let p = ORDER.iter().position(|k| *k == kw).unwrap_or(ORDER.len());
        let n = c.name("n").map_or(worker.len(), |m| m.end());
        if best.as_ref().is_none_or(|(q, _)| p < *q) {
            best = Some((p, c));
        }
        at = n;
    }
    let (_, c) = best?;
    let (kw, n) = (c.name("kw")?, c.name("n")?);
    let rank = n.as_str().parse().ok()?;
    // A node index is a stable part too (`node{n}_rank{r}`: one run over several nodes).
    static NODE: OnceLock<Regex> = OnceLock::new();
    let node = re(&NODE, r"(?i)(?P<kw>node)(?P<sep>[-_]?)\d+");
    let stable = |s: &str, with: &str| node.replace_all(s, with).into_owned();
    let pattern = format!(
        "{}{{r}}{}",
        stable(&worker[..n.start()], "${kw}${sep}{n}"),
        stable(&worker[n.end()..], "${kw}${sep}{n}")
    );
    let before = stable(&worker[..kw.end()], "${kw}");
    let after = stable(&worker[n.end()..], "${kw}");
    let id = format!("{before}{after}")
        .trim_matches(['-', '_', '.'])
        .to_string();
    Some(NamedRank { rank, pattern, id })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (rank, pattern, profile id); `None`: torch's own `{host}_{pid}`.
    type Want = Option<(u32, &'static str, &'static str)>;

    #[test]
    fn ranks_in_worker_names() {
        let cases: &[(&str, Want)] = &[
            ("worker3", Some((3, "worker{r}", "worker"))),
            (
                "worker3_step_12",
                Some((3, "worker{r}_step_12", "worker_step_12")),
            ),
            (
                "trainer_rank3_step_12",
                Some((3, "trainer_rank{r}_step_12", "trainer_rank_step_12")),
            ),
            ("rank_3", Some((3, "rank_{r}", "rank"))),
            ("worker_12", Some((12, "worker_{r}", "worker"))),
            ("node1_rank3", Some((3, "node{n}_rank{r}", "node_rank"))),
            ("gpu7", Some((7, "gpu{r}", "gpu"))),
            // `rank` wins over `worker` and `gpu` wherever it stands.
            (
                "gpu0_worker2_rank5",
                Some((5, "gpu0_worker2_rank{r}", "gpu0_worker2_rank")),
            ),
            // torch's default: the host's numbers are not ranks.
            ("gpu-worker-3_4242", None),
            ("trainer-rank0_1111", None),
            ("ip-10-0-0-7_31337", None),
        ];
        for &(worker, want) in cases {
            let got = named_rank(worker).map(|r| (r.rank, r.pattern, r.id));
            let want = want.map(|(r, p, i)| (r, p.to_string(), i.to_string()));
            assert_eq!(got, want, "{worker}");
        }
    }

    #[test]
    fn stamps_in_ms_and_ns() {
        let h = parse("worker3.1712000000123.pt.trace.json").unwrap();
        assert_eq!(
            (h.ns, h.stamp.as_str()),
            (1_712_000_000_123_000_000, "1712000000123")
        );
        let h = parse("host_42.1712000000123456789.pt.trace.json.gz").unwrap();
        assert_eq!((h.ns, h.rank), (1_712_000_000_123_456_789, None));
        // Neither ms nor ns, or not the handler's suffix.
        assert!(parse("worker3.17120000.pt.trace.json").is_none());
        assert!(parse("worker3.1712000000123.trace.json").is_none());
    }
}
