//! One report holding several GPUs read as one rank per GPU: which rows belong to one GPU
//! ([`Select`]: its kernels, copies and sets by `deviceId`, the runtime calls and NVTX ranges of
//! the process that owns it by `globalTid`), as SQL conditions the readers of [`super::rows`]
//! and [`super::viewer`] add to their statements; which reports split so ([`gpus_of`], for
//! discovery), and how a rank's path names its GPU ([`device_path`], [`split_path`]).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use rusqlite::Connection;

use super::rows::{int, Rows};
use super::schema::{ident, Schema, GPUS, KERNEL, MEMCPY, MEMSET, RUNTIME};
use super::scope::{Select, Shared};

impl Rows<'_> {
    /// ` AND …`: the rows of GPU table `t` (alias `alias`) on the selected device; `""` when
    /// the whole report is read.
    pub(super) fn gpu_filter(&self, t: &str, alias: &str) -> String {
        match &self.select {
            Some(s) if self.schema.column(t, "deviceId").is_some() => {
                format!(" AND {alias}.{} = {}", ident("deviceId"), s.device)
            }
            _ => String::new(),
        }
    }

    /// ` AND …`: the rows of host table `t` (alias `alias`) of the selected device's process;
    /// when that process drives other GPUs too ([`Shared`]), only this GPU's: the runtime calls
    /// that launched its work (by `correlationId`), and the other rows (NVTX ranges, runtime
    /// calls that launched nothing) of the threads given to it ([`Shared::mine`]). `""`
    /// when the whole report is read.
    pub(super) fn host_filter(&self, t: &str, alias: &str) -> String {
        let Some(s) = &self.select else {
            return String::new();
        };
        if self.schema.column(t, "globalTid").is_none() {
            return String::new();
        }
        let tid = format!("{alias}.{}", ident("globalTid"));
        let mut out = format!(" AND ({tid} >> 24) = {}", s.global_pid >> 24);
        let Some(sh) = &s.shared else {
            return out;
        };
        let threads = sh.thread_sql(&tid);
        let corr = format!("{alias}.{}", ident("correlationId"));
        if t == RUNTIME && self.schema.column(t, "correlationId").is_some() {
            let mine = launched_sql(self.schema, &[s.device]);
            let any = launched_sql(self.schema, &sh.devices);
            out.push_str(&format!(
                " AND ({corr} IN ({mine}) OR (({corr} IS NULL OR {corr} NOT IN ({any})) AND \
                 {threads}))"
            ));
        } else {
            out.push_str(&format!(" AND {threads}"));
        }
        out
    }
}

/// The `correlationId`s of the GPU work (kernels, memcpy, memset) on `devices`, as a subquery.
fn launched_sql(schema: &Schema, devices: &[i64]) -> String {
    let list = sql_list(devices);
    [KERNEL, MEMCPY, MEMSET]
        .iter()
        .filter(|t| {
            schema.column(t, "deviceId").is_some() && schema.column(t, "correlationId").is_some()
        })
        .map(|t| {
            format!(
                "SELECT w.correlationId FROM {} AS w WHERE w.deviceId IN ({list}) AND \
                 w.correlationId IS NOT NULL",
                ident(t)
            )
        })
        .collect::<Vec<_>>()
        .join(" UNION ALL ")
}

/// `1, 2, 3` (SQLite takes an empty list: `x IN ()` is false).
fn sql_list(v: &[i64]) -> String {
    v.iter().map(i64::to_string).collect::<Vec<_>>().join(", ")
}

/// `0–3` or `0, 2, 5`: a set of GPUs in words.
pub(crate) fn gpu_words(v: &[i64]) -> String {
    match v {
        [a, .., b] if v.windows(2).all(|w| w[1] == w[0] + 1) && v.len() > 2 => format!("{a}–{b}"),
        _ => v.iter().map(i64::to_string).collect::<Vec<_>>().join(", "),
    }
}

impl Shared {
    /// The SQL condition on column `tid`: a thread given to the selected GPU, or one that
    /// launched nothing.
    fn thread_sql(&self, tid: &str) -> String {
        format!(
            "({tid} IN ({}) OR {tid} NOT IN ({}))",
            sql_list(&self.mine),
            sql_list(&self.launchers)
        )
    }

    /// Gives threads to GPU `device` from `(globalTid, deviceId, launches)` counts.
    fn from_counts(device: i64, devices: Vec<i64>, counts: &[(i64, i64, i64)]) -> Shared {
        let mut top: BTreeMap<i64, i64> = BTreeMap::new();
        for &(t, _, n) in counts {
            let e = top.entry(t).or_insert(0);
            *e = (*e).max(n);
        }
        let given = |t: i64, n: i64| top.get(&t).is_some_and(|&m| 2 * n >= m);
        let mut per_thread: BTreeMap<i64, usize> = BTreeMap::new();
        for &(t, _, n) in counts {
            if given(t, n) {
                *per_thread.entry(t).or_insert(0) += 1;
            }
        }
        let mine: Vec<i64> = counts
            .iter()
            .filter(|&&(t, d, n)| d == device && given(t, n))
            .map(|c| c.0)
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let split = mine
            .iter()
            .filter(|t| per_thread.get(t).is_some_and(|&k| k > 1))
            .count();
        Shared {
            devices,
            launchers: top.keys().copied().collect(),
            mine,
            split,
        }
    }

    /// What the reader says of the rank (the rule is said once, by discovery).
    pub(super) fn said(&self, device: i64, pid: i64) -> String {
        format!(
            "GPU {device} of process {pid} (which drives GPUs {}): the NVTX ranges of {} \
             thread(s) that launched onto it most{}, and of those that launched nothing",
            gpu_words(&self.devices),
            self.mine.len(),
            if self.split > 0 {
                format!(" ({} also given to another GPU)", self.split)
            } else {
                String::new()
            },
        )
    }
}

/// What marks one GPU of a report in a rank's path: `node.sqlite#gpu3` is GPU 3 of
/// `node.sqlite` (`node.nsys-rep#gpu3` of the report, read through its export). Only discovery writes such paths (no file has that name): the readers take
/// the file and the GPU apart ([`split_path`]).
pub(crate) const GPU_MARK: &str = "#gpu";

/// The path that stands for GPU `device` of the report at `path`.
pub(crate) fn device_path(path: &Path, device: i64) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(format!("{GPU_MARK}{device}"));
    PathBuf::from(s)
}

/// A name's GPU mark taken off: (the export's name, the GPU), when it has one.
pub(crate) fn split_name(name: &str) -> Option<(&str, i64)> {
    let (file, dev) = name.rsplit_once(GPU_MARK)?;
    // An export, or a report (`*.nsys-rep`, read through its export).
    let ok = (file.ends_with(".sqlite") || file.ends_with(".nsys-rep"))
        && !dev.is_empty()
        && dev.bytes().all(|b| b.is_ascii_digit());
    Some((file, dev.parse().ok().filter(|_| ok)?))
}

/// The export a rank's path names, and its GPU when it names one ([`device_path`]).
pub(crate) fn split_path(path: &Path) -> (PathBuf, Option<i64>) {
    let split = path
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(split_name);
    match split {
        Some((file, dev)) => (path.with_file_name(file), Some(dev)),
        None => (path.to_path_buf(), None),
    }
}

/// The GPUs of a report read as one rank each ([`gpus_of`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Gpus {
    /// The `deviceId`s, ascending.
    pub(crate) devices: Vec<i64>,
    /// The processes driving several of them: (pid, their GPUs ascending).
    pub(crate) drivers: Vec<(i64, Vec<i64>)>,
}

/// What one pass over an export's kernels says of its GPUs: each (`deviceId`, `globalPid`)
/// pair that ran kernels (the pid `None` where the export has no `globalPid`), with the first
/// kernel's start and the last one's end over all of them. Discovery (the GPUs, when the report
/// ran) and every rank read of a report split by GPU (its world, its first GPU) ask it: it is
/// made once per file and command ([`census`]), so the kernel table is scanned once for all.
#[derive(Debug)]
struct Census {
    pairs: Vec<(i64, Option<i64>)>,
    span: Option<(i64, i64)>,
}

type CensusKey = (PathBuf, u64, Option<std::time::SystemTime>);

/// The [`Census`] of the export at `path`: one `GROUP BY` over its kernels, cached by the
/// file's path, size and modification time (a file rewritten is counted again).
fn census(path: &Path) -> io::Result<Arc<Census>> {
    static CACHE: OnceLock<Mutex<HashMap<CensusKey, Arc<Census>>>> = OnceLock::new();
    let md = std::fs::metadata(path)?;
    let key = (path.to_path_buf(), md.len(), md.modified().ok());
    let cache = CACHE.get_or_init(Mutex::default);
    if let Some(c) = cache.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
        return Ok(c.clone());
    }
    let (conn, schema, _) = super::open_export(path)?;
    let mut pairs = Vec::new();
    let mut span: Option<(i64, i64)> = None;
    if schema.column(KERNEL, "deviceId").is_some() {
        let pid = if schema.column(KERNEL, "globalPid").is_some() {
            "globalPid"
        } else {
            "NULL"
        };
        let sql = format!(
            "SELECT deviceId, {pid}, MIN(start), MAX(\"end\") FROM {} GROUP BY 1, 2 ORDER BY 1",
            ident(KERNEL)
        );
        let err = super::sql_err(path, "the kernels' GPUs");
        let mut st = conn.prepare(&sql).map_err(&err)?;
        let mut rows = st.query([]).map_err(&err)?;
        while let Some(r) = rows.next().map_err(&err)? {
            let Some(d) = int(r, 0) else { continue };
            pairs.push((d, int(r, 1)));
            if let (Some(lo), Some(hi)) = (int(r, 2), int(r, 3)) {
                span = Some(span.map_or((lo, hi), |(a, b)| (a.min(lo), b.max(hi))));
            }
        }
    }
    let c = Arc::new(Census { pairs, span });
    cache
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(key, c.clone());
    Ok(c)
}

/// The GPUs of a report to read as one rank each: `Some` when its kernels ran on two GPUs or
/// more and each GPU's kernels come from one process (a process owning one GPU gives it its
/// runtime calls and NVTX ranges; one driving several shares them out, [`Shared`]); `None`
/// when the report is one rank (one GPU, or a GPU shared by processes: read whole, noted by
/// the reader). The export's [`census`], skipped when `TARGET_INFO_GPU` lists one GPU.
pub(crate) fn gpus_of(path: &Path) -> io::Result<Option<Gpus>> {
    let (conn, schema, _) = super::open_export(path)?;
    if schema.column(KERNEL, "deviceId").is_none() || schema.column(KERNEL, "globalPid").is_none() {
        return Ok(None);
    }
    if schema.has_table(GPUS) {
        let n: i64 = conn
            .query_row(&format!("SELECT COUNT(*) FROM {}", ident(GPUS)), [], |r| {
                r.get(0)
            })
            .unwrap_or(2);
        if n == 1 {
            return Ok(None);
        }
    }
    let mut pairs: Vec<(i64, i64)> = Vec::new();
    for &(d, p) in &census(path)?.pairs {
        match p {
            Some(p) => pairs.push((d, p)),
            None => return Ok(None),
        }
    }
    let devices: BTreeSet<i64> = pairs.iter().map(|p| p.0).collect();
    if devices.len() < 2 || devices.len() != pairs.len() {
        return Ok(None);
    }
    let mut by_proc: BTreeMap<i64, Vec<i64>> = BTreeMap::new();
    for &(d, p) in &pairs {
        by_proc.entry((p >> 24) & 0xFF_FFFF).or_default().push(d);
    }
    Ok(Some(Gpus {
        devices: devices.into_iter().collect(),
        drivers: by_proc.into_iter().filter(|(_, d)| d.len() > 1).collect(),
    }))
}

/// The lowest `deviceId` of the export's kernels (its first rank when read one rank per GPU).
pub(crate) fn first_device(path: &Path) -> Option<i64> {
    census(path).ok()?.pairs.iter().map(|p| p.0).min()
}

/// How many GPUs the export's kernels ran on (`None`: none, or no `deviceId`).
pub(crate) fn gpu_count(path: &Path) -> Option<usize> {
    let c = census(path).ok()?;
    let n = c.pairs.iter().map(|p| p.0).collect::<BTreeSet<_>>().len();
    (n > 0).then_some(n)
}

/// When the export's kernels ran on the wall clock: (first start, last end), ns since the
/// epoch; `None` without the session start (`TARGET_INFO_SESSION_START_TIME`: the times are
/// then relative to a start nobody knows) or without kernels. From the export's [`census`],
/// for discovery to tell whether reports were recorded together.
pub(crate) fn span_of(path: &Path) -> io::Result<Option<(i64, i64)>> {
    let (conn, schema, _) = super::open_export(path)?;
    let Some(base) = super::session_start(&conn, &schema) else {
        return Ok(None);
    };
    Ok(census(path)?.span.map(|(lo, hi)| (base + lo, base + hi)))
}

/// GPU `device` of the export and the process that owns it (the first kernel's); when that
/// process drives other GPUs too, which of its threads go to this one ([`Shared`]: one
/// `GROUP BY` over the process's launches joined to its GPU work by `correlationId`).
pub(super) fn select(conn: &Connection, schema: &Schema, device: i64) -> Option<Select> {
    schema.column(KERNEL, "deviceId")?;
    schema.column(KERNEL, "globalPid")?;
    let sql = format!(
        "SELECT globalPid FROM {} WHERE deviceId = ?1 AND globalPid IS NOT NULL LIMIT 1",
        ident(KERNEL)
    );
    let global_pid = conn.query_row(&sql, [device], |r| Ok(int(r, 0))).ok()??;
    let sql = format!(
        "SELECT DISTINCT deviceId FROM {} WHERE (globalPid >> 24) = ?1 ORDER BY 1",
        ident(KERNEL)
    );
    let mut devices = Vec::new();
    {
        let mut st = conn.prepare(&sql).ok()?;
        let mut rows = st.query([global_pid >> 24]).ok()?;
        while let Ok(Some(r)) = rows.next() {
            devices.extend(int(r, 0));
        }
    }
    let shared = if devices.len() > 1 {
        Some(shared(conn, schema, device, global_pid, devices)?)
    } else {
        None
    };
    Some(Select {
        device,
        global_pid,
        shared,
    })
}

/// [`Shared`] for GPU `device` of process `global_pid` driving `devices`: each thread's
/// launches per GPU (a few rows per thread).
fn shared(
    conn: &Connection,
    schema: &Schema,
    device: i64,
    global_pid: i64,
    devices: Vec<i64>,
) -> Option<Shared> {
    let launched = [KERNEL, MEMCPY, MEMSET]
        .iter()
        .filter(|t| {
            schema.column(t, "deviceId").is_some() && schema.column(t, "correlationId").is_some()
        })
        .map(|t| {
            format!(
                "SELECT w.correlationId AS c, w.deviceId AS d FROM {} AS w WHERE w.deviceId \
                 IN ({}) AND w.correlationId IS NOT NULL",
                ident(t),
                sql_list(&devices)
            )
        })
        .collect::<Vec<_>>()
        .join(" UNION ALL ");
    let mut counts = Vec::new();
    let has = |c| schema.column(RUNTIME, c).is_some();
    if has("globalTid") && has("correlationId") {
        let sql = format!(
            "SELECT r.globalTid, g.d, COUNT(*) FROM {} AS r JOIN ({launched}) AS g ON g.c = \
             r.correlationId WHERE (r.globalTid >> 24) = ?1 GROUP BY r.globalTid, g.d",
            ident(RUNTIME)
        );
        let mut st = conn.prepare(&sql).ok()?;
        let mut rows = st.query([global_pid >> 24]).ok()?;
        while let Ok(Some(r)) = rows.next() {
            if let (Some(t), Some(d), Some(n)) = (int(r, 0), int(r, 1), int(r, 2)) {
                counts.push((t, d, n));
            }
        }
    }
    Some(Shared::from_counts(device, devices, &counts))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gpu_path_names_its_export_and_gpu() {
        let p = device_path(Path::new("/run/node.sqlite"), 3);
        assert_eq!(p, Path::new("/run/node.sqlite#gpu3"));
        assert_eq!(split_path(&p), (PathBuf::from("/run/node.sqlite"), Some(3)));
        assert_eq!(
            split_path(Path::new("/run/rank1.sqlite")),
            (PathBuf::from("/run/rank1.sqlite"), None)
        );
        for name in [
            "a.json#gpu1",
            "a.sqlite#gpu",
            "a.sqlite#gpux",
            "a.sqlite#gpu-1",
        ] {
            assert_eq!(split_name(name), None, "{name}");
        }
        assert_eq!(
            split_name("a#gpu1.sqlite#gpu12"),
            Some(("a#gpu1.sqlite", 12))
        );
    }

    #[test]
    fn threads_go_to_the_gpus_they_launched_onto_most() {
        // Thread 1: 10 launches onto GPU 0, 1 stray onto GPU 1; thread 2: 6 onto GPU 1;
        // thread 3: evenly onto GPUs 0 and 1 (5 and 3: within half of its most).
        let counts = [(1, 0, 10), (1, 1, 1), (2, 1, 6), (3, 0, 5), (3, 1, 3)];
        let zero = Shared::from_counts(0, vec![0, 1], &counts);
        assert_eq!(zero.mine, [1, 3]);
        assert_eq!(zero.launchers, [1, 2, 3]);
        assert_eq!(zero.split, 1);
        let one = Shared::from_counts(1, vec![0, 1], &counts);
        assert_eq!(one.mine, [2, 3]);
        assert_eq!(one.thread_sql("t"), "(t IN (2, 3) OR t NOT IN (1, 2, 3))");
        let none = Shared::from_counts(1, vec![0, 1], &[]);
        assert_eq!(none.thread_sql("t"), "(t IN () OR t NOT IN ())");
        assert_eq!(gpu_words(&[0, 1, 2, 3]), "0–3");
        assert_eq!(gpu_words(&[0, 1]), "0, 1");
        assert_eq!(gpu_words(&[0, 2, 5]), "0, 2, 5");
    }
}
