//! Annotations written into a merged trace on top of the ranks' own events: slices on one
//! extra process per rank and overlay (e.g. the critical path's late arrivals, `merge
//! --critical-path`; the ideal timeline, `merge --what-if`), each process belonging to its rank
//! (`"[TP02] critical path"`, sorted at the end of the rank's processes by the overlay's own
//! offset), so that a viewer shows them beside the rank they explain and every process of the
//! merged trace still carries its rank's label. Inside the process, one thread per `tid` the
//! slices name (slices on one thread must nest).
//!
//! Times come in on the common clock (absolute ns, as an analysis holds them) and are written
//! as the merge writes every event: µs from the merged trace's base time.

use serde_json::{json, Map, Value};

use crate::trace::Ns;

/// One annotated interval of one rank.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Slice {
    /// The rank's label as the merged trace shows it (`TP02`, `TP01-DP01`).
    pub rank: String,
    pub name: String,
    /// Start on the common clock.
    pub start_ns: Ns,
    pub dur_ns: Ns,
    pub args: Map<String, Value>,
    /// The thread of the rank's process it is on ([`Overlay::threads`] names it).
    pub tid: u32,
    /// Flow arrows it begins and ends (ids unique in the overlay), drawn 1 ns before its end:
    /// two slices joined by a flow end at the same time (a late arrival, and a wait for it).
    pub flows_out: Vec<u64>,
    pub flows_in: Vec<u64>,
}

/// Slices to add to a merged trace, on a track named `track` per rank.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Overlay {
    pub track: String,
    /// Added to the rank's process sort index base: where its process sits among the rank's
    /// (the rank's own processes are below 99; each overlay takes its own offset).
    pub sort: i64,
    /// The names of the threads other than `track` (tid, name); a tid not named is `track`.
    pub threads: Vec<(u32, String)>,
    pub slices: Vec<Slice>,
}

/// The sort offset of the critical path's process ([`Overlay::sort`]): last of the rank's.
pub(crate) const CRITICAL_PATH_SORT: i64 = 99;
/// The what-if's ideal timeline: just before the critical path's.
pub(crate) const WHAT_IF_SORT: i64 = 98;

impl Overlay {
    /// The overlay's events as comma-separated JSON objects (no leading or trailing comma), with
    /// their count: the slices whose rank `sort_base` knows (its process sort index base), times
    /// minus `base_ns`, and each rank's process name and sort index. `missing` gets the ranks
    /// the merged trace does not hold.
    pub fn events(
        &self,
        sort_base: impl Fn(&str) -> Option<i64>,
        base_ns: i64,
        missing: &mut Vec<String>,
    ) -> (Vec<u8>, u64) {
        let mut out: Vec<Value> = Vec::new();
        let mut procs: Vec<(String, i64)> = Vec::new();
        let mut threads: Vec<(String, u32)> = Vec::new();
        for s in &self.slices {
            let Some(sort) = sort_base(&s.rank) else {
                if !missing.contains(&s.rank) {
                    missing.push(s.rank.clone());
                }
                continue;
            };
            let pid = format!("[{}] {}", s.rank, self.track);
            if !procs.iter().any(|(p, _)| *p == pid) {
                procs.push((pid.clone(), sort));
            }
            if !threads.iter().any(|(p, t)| *p == pid && *t == s.tid) {
                threads.push((pid.clone(), s.tid));
            }
            let tid = s.tid;
            let ts = (s.start_ns.get() - base_ns) as f64 / 1e3;
            out.push(json!({
                "ph": "X", "cat": "rankprof", "name": s.name, "pid": pid, "tid": tid,
                "ts": (ts * 1e3).round() / 1e3,
                "dur": (s.dur_ns.get().max(0) as f64).round() / 1e3,
                "args": s.args,
            }));
            let at = (s.start_ns.get() + s.dur_ns.get() - 1 - base_ns) as f64 / 1e3;
            let flow = |ph: &str, id: u64| {
                let mut f = json!({"ph": ph, "cat": "rankprof", "name": "waited for", "id": id,
                    "pid": pid, "tid": tid, "ts": (at * 1e3).round() / 1e3});
                if ph == "f" {
                    f["bp"] = "e".into();
                }
                f
            };
            out.extend(s.flows_out.iter().map(|&id| flow("s", id)));
            out.extend(s.flows_in.iter().map(|&id| flow("f", id)));
        }
        for (pid, sort) in &procs {
            out.push(
                json!({"name": "process_name", "ph": "M", "pid": pid, "tid": 0,
                            "args": {"name": format!("{pid} (rankprof)")}}),
            );
            out.push(
                json!({"name": "process_sort_index", "ph": "M", "pid": pid, "tid": 0,
                            "args": {"sort_index": sort + self.sort}}),
            );
        }
        for (pid, tid) in &threads {
            out.push(
                json!({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid,
                            "args": {"name": self.thread_name(*tid)}}),
            );
        }
        let mut bytes = Vec::new();
        for e in &out {
            if !bytes.is_empty() {
                bytes.extend_from_slice(b",\n");
            }
            bytes.extend_from_slice(e.to_string().as_bytes());
        }
        (bytes, out.len() as u64)
    }

    /// The name of thread `tid` of each rank's process.
    fn thread_name(&self, tid: u32) -> &str {
        self.threads
            .iter()
            .find(|(t, _)| *t == tid)
            .map_or(self.track.as_str(), |(_, name)| name.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_land_in_their_rank_process_on_the_base() {
        let o = Overlay {
            track: "critical path".into(),
            sort: CRITICAL_PATH_SORT,
            threads: vec![(1, "other".into())],
            slices: vec![
                Slice {
                    rank: "TP02".into(),
                    name: "late".into(),
                    start_ns: Ns::new(1_000_002_500),
                    dur_ns: Ns::new(2_000_000),
                    args: Map::new(),
                    ..Slice::default()
                },
                Slice {
                    rank: "TP02".into(),
                    name: "beside".into(),
                    start_ns: Ns::new(1_000_002_500),
                    dur_ns: Ns::new(10),
                    tid: 1,
                    ..Slice::default()
                },
                Slice {
                    rank: "TP09".into(),
                    name: "late".into(),
                    start_ns: Ns::new(0),
                    dur_ns: Ns::new(1),
                    args: Map::new(),
                    ..Slice::default()
                },
            ],
        };
        let mut missing = Vec::new();
        let (bytes, n) = o.events(
            |r| (r == "TP02").then_some(200),
            1_000_000_000,
            &mut missing,
        );
        assert_eq!(missing, vec!["TP09".to_string()]);
        assert_eq!(n, 6);
        let v: Value = serde_json::from_slice(&[b"[", &bytes[..], b"]"].concat()).unwrap();
        assert_eq!(v[0]["pid"], "[TP02] critical path");
        assert_eq!(v[0]["ts"], 2.5);
        assert_eq!(v[0]["dur"], 2000.0);
        assert_eq!(v[1]["tid"], 1);
        assert_eq!(v[3]["args"]["sort_index"], 299);
        // One thread name per thread of the process: the track's, and the one named.
        assert_eq!(v[4]["args"]["name"], "critical path");
        assert_eq!(
            (&v[5]["tid"], &v[5]["args"]["name"]),
            (&1.into(), &"other".into())
        );
    }
}
