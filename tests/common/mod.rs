//! Helpers shared by the analyze tests: the fixtures path, running the analysis in-process,
//! running the independent Python checker, and comparing the two figure by figure.
#![allow(dead_code)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use rankprof::analyze::Analysis;
use rankprof::analyze::AnalyzeOptions;
use serde_json::Value;

pub mod attrib;

pub fn shared(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/fixtures")
        .join(rel)
}

/// Analyzes `files` (plus whatever `tweak` sets); every kernel kept in the summary.
pub fn analyze_files(files: &[PathBuf], tweak: impl FnOnce(&mut AnalyzeOptions)) -> Analysis {
    let mut args = AnalyzeOptions {
        files: files.to_vec(),
        summary_kernels: 1_000_000,
        ..Default::default()
    };
    tweak(&mut args);
    rankprof::analyze::analyze(&args).unwrap_or_else(|e| panic!("analyze {files:?}: {e:#}"))
}

/// Whether python3 runs; when not, says loudly that `what` is skipped — and fails under
/// `CI=true`, where a missing checker must not pass as `ok`.
pub fn have_python(what: &str) -> bool {
    let ok = Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "python3 not found under CI=true: {what} cannot be checked"
        );
        eprintln!("**** python3 not found: {what} skipped ****");
    }
    ok
}

/// Runs tests/check_analyze.py on `files` with extra arguments; its JSON output.
pub fn checker(files: &[PathBuf], extra: &[&str]) -> Value {
    python_json("tests/check_analyze.py", extra, files)
}

/// Runs the Python `script` (relative to the crate) with `extra` arguments and `files`; the
/// JSON it prints.
pub fn python_json(script: &str, extra: &[&str], files: &[PathBuf]) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join(script);
    let out = Command::new("python3")
        .arg(script)
        .args(extra)
        .args(files)
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "checker failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("checker prints JSON")
}

fn canon(p: &str) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| PathBuf::from(p))
}

fn i(v: &Value) -> i64 {
    v.as_i64().unwrap_or_else(|| panic!("not an integer: {v}"))
}

/// Asserts that every figure the checker computed for its ranks equals the analysis'.
pub fn assert_matches_checker(a: &Analysis, c: &Value) {
    let ranks = c["ranks"].as_object().expect("ranks");
    // Checker key (path or merged label) -> rank index in the analysis.
    let mut index: HashMap<String, usize> = HashMap::new();
    for key in ranks.keys() {
        let label = a
            .files
            .iter()
            .find(|f| canon(&f.path) == canon(key) && f.ranks.len() == 1)
            .map(|f| f.ranks[0].clone())
            .unwrap_or_else(|| key.clone());
        let r = a
            .ranks
            .iter()
            .position(|x| x.figures.rank == label)
            .unwrap_or_else(|| {
                panic!(
                    "checker rank {key} not in the analysis ({:?})",
                    a.ranks.iter().map(|r| &r.figures.rank).collect::<Vec<_>>()
                )
            });
        index.insert(key.clone(), r);
    }
    let summary = a.summary.as_ref().expect("summary");
    for (key, cr) in ranks {
        let r = index[key];
        let s = &a.ranks[r];
        let ctx = format!("rank {} ({key})", s.figures.rank);
        assert_eq!(
            s.figures.source,
            cr["mode"].as_str().unwrap(),
            "{ctx} source"
        );
        assert_eq!(s.figures.busy_ns.get(), i(&cr["busy_ns"]), "{ctx} busy");
        assert_eq!(
            s.figures.compute_ns.get(),
            i(&cr["compute_ns"]),
            "{ctx} compute"
        );
        assert_eq!(s.figures.comm_ns.get(), i(&cr["comm_ns"]), "{ctx} comm");
        assert_eq!(
            s.figures.exposed_comm_ns.get(),
            i(&cr["exposed_comm_ns"]),
            "{ctx} exposed comm"
        );
        assert_eq!(
            s.figures.memcpy_memset_ns.get(),
            i(&cr["copy_ns"]),
            "{ctx} memcpy/memset"
        );
        assert_eq!(s.figures.span_ns.get(), i(&cr["span_ns"]), "{ctx} span");
        assert_eq!(
            s.figures.idle_ns.get(),
            s.figures.span_ns.get() - s.figures.busy_ns.get(),
            "{ctx} idle"
        );
        assert_eq!(
            s.figures.kernels as i64,
            i(&cr["kernel_count"]),
            "{ctx} kernel count"
        );
        assert_eq!(
            s.figures.kernel_sum_ns.get(),
            i(&cr["kernel_total_ns"]),
            "{ctx} kernel time"
        );
        // Per-name totals of GPU ops.
        if let Some(ops) = cr["ops"].as_object() {
            let mine: HashMap<&str, (i64, u64)> = summary
                .kernels
                .iter()
                .filter(|k| k.count[r] > 0)
                .map(|k| (k.name.as_str(), (k.total_ns[r], k.count[r])))
                .collect();
            assert_eq!(mine.len(), ops.len(), "{ctx} distinct op names");
            for (name, v) in ops {
                let want = (i(&v[0]), i(&v[1]) as u64);
                assert_eq!(mine.get(name.as_str()), Some(&want), "{ctx} op {name}");
            }
        }
        // Steps: every row of the table against the checker's step of that rank.
        let csteps = cr["steps"].as_array().expect("steps");
        for row in &a.steps.rows {
            let k = row.idx[r];
            let cs = &csteps[k];
            assert_eq!(
                row.dur_ns[r].get(),
                i(&cs["dur_ns"]),
                "{ctx} step {} time",
                row.step
            );
            assert_eq!(
                row.busy_ns[r].get(),
                i(&cs["busy_ns"]),
                "{ctx} step {} busy",
                row.step
            );
            assert_eq!(
                row.work_ns[r].get(),
                i(&cs["work_ns"]),
                "{ctx} step {} work",
                row.step
            );
        }
        if a.ranks.len() == ranks.len()
            && a.steps
                .rows
                .first()
                .is_some_and(|row| row.step.parse::<i64>().ok() == Some(0))
        {
            let min = ranks
                .values()
                .map(|x| x["steps"].as_array().unwrap().len())
                .min()
                .unwrap_or(0);
            assert_eq!(a.steps.rows.len(), min, "steps on every rank");
        }
        // Collectives of this rank within its world.
        let cc = &c["collectives"]["ranks"][key];
        let mine = &a.collectives.ranks[r];
        assert_eq!(
            mine.wait_ns.get(),
            i(&cc["wait_ns"]),
            "{ctx} collective wait"
        );
        assert_eq!(
            mine.arrived_last as i64,
            i(&cc["arrived_last"]),
            "{ctx} arrived last"
        );
        assert_eq!(
            mine.matched as i64,
            i(&cc["matched"]),
            "{ctx} matched collectives"
        );
    }
    // Collective groups of the world these ranks form.
    let world = a.collectives.ranks[*index.values().next().expect("a rank")].world;
    let groups = c["collectives"]["groups"].as_object().expect("groups");
    let mine: Vec<_> = a
        .collectives
        .groups
        .iter()
        .filter(|g| g.world == world)
        .collect();
    assert_eq!(mine.len(), groups.len(), "collective groups");
    for g in mine {
        let cg = &groups[&g.key];
        assert_eq!(
            g.matched as i64,
            i(&cg["matched"]),
            "group {} matched",
            g.key
        );
        assert_eq!(g.ties as i64, i(&cg["ties"]), "group {} ties", g.key);
        assert_eq!(
            g.max_skew_ns.get(),
            i(&cg["skew_max_ns"]),
            "group {} max skew",
            g.key
        );
        let mean = i(&cg["skew_sum_ns"]) as f64 / g.matched as f64;
        assert!(
            (g.mean_skew_ns - mean).abs() < 1e-6,
            "group {} mean skew {} vs {mean}",
            g.key,
            g.mean_skew_ns
        );
    }
}

/// A small synthetic profile with a planted imbalance, written by hand (no rankprof code):
/// `ranks` TP ranks, `steps` ProfilerSteps of 10 ms each on the CPU. Per step each rank launches
/// (from inside its step window) a GEMM (3 ms), a flash-attention kernel (2 ms) and an RMS norm
/// (0.5 ms) back to back on stream 7, then an NCCL all-reduce on stream 20 that starts when the
/// rank's compute is done and ends 0.2 ms after the last rank's compute is done. The GPU runs
/// `LAG` behind the CPU, so kernels of step s run into the CPU window of step s+1 (only the
/// launch correlation puts them in the right step). Rank r starts r µs late (jitter, so that
/// no two ranks tie). From step `from` on, rank `slow`'s GEMM takes `factor` times as long.
pub struct Planted {
    pub ranks: usize,
    pub steps: usize,
    pub slow: usize,
    pub from: usize,
    pub factor: f64,
}

pub const STEP_NS: i64 = 10_000_000;
pub const LAG_NS: i64 = 6_000_000;
pub const GEMM_NS: i64 = 3_000_000;
pub const ATTN_NS: i64 = 2_000_000;
pub const NORM_NS: i64 = 500_000;
pub const TAIL_NS: i64 = 200_000;
pub const BASE_NS: i64 = 1_700_000_000_000_000_000;

fn us(ns: i64) -> String {
    format!("{}.{:03}", ns / 1000, ns % 1000)
}

impl Planted {
    pub fn gemm(&self, r: usize, s: usize) -> i64 {
        if r == self.slow && s >= self.from {
            (GEMM_NS as f64 * self.factor).round() as i64
        } else {
            GEMM_NS
        }
    }
    /// Compute (work) of rank r in step s.
    pub fn work(&self, r: usize, s: usize) -> i64 {
        self.gemm(r, s) + ATTN_NS + NORM_NS
    }
    pub fn jitter(&self, r: usize) -> i64 {
        r as i64 * 1_000
    }
    /// GPU start of rank r's step s (file time).
    pub fn gpu_start(&self, r: usize, s: usize) -> i64 {
        s as i64 * STEP_NS + LAG_NS + self.jitter(r)
    }
    /// (start, end) of the all-reduce of rank r in step s.
    pub fn allreduce(&self, r: usize, s: usize) -> (i64, i64) {
        let start = self.gpu_start(r, s) + self.work(r, s);
        let end = (0..self.ranks)
            .map(|q| self.gpu_start(q, s) + self.work(q, s))
            .max()
            .unwrap()
            + TAIL_NS;
        (start, end)
    }

    /// The events of rank r, as JSON objects (GPU ops first, then CPU: not in time order).
    pub fn events(&self, r: usize, pid_cpu: &str, pid_gpu: &str) -> Vec<String> {
        let mut gpu = Vec::new();
        let mut cpu = Vec::new();
        let mut corr = 1000;
        for s in 0..self.steps {
            let t0 = s as i64 * STEP_NS;
            cpu.push(format!(
                r#"{{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#{s}", "pid": {pid_cpu}, "tid": 1, "ts": {}, "dur": {}, "args": {{"External id": {s}}}}}"#,
                us(t0),
                us(STEP_NS)
            ));
            let mut t = self.gpu_start(r, s);
            let kernels = [
                ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1", self.gemm(r, s)),
                ("void flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 64, 64, 4, false, false, cutlass::bfloat16_t> >(Flash_fwd_params)", ATTN_NS),
                ("void vllm::rms_norm_kernel<c10::BFloat16, 8>(c10::BFloat16*, c10::BFloat16 const*, float, int, int)", NORM_NS),
            ];
            for (k, (name, dur)) in kernels.iter().enumerate() {
                corr += 1;
                let launch = t0 + 100_000 + k as i64 * 20_000;
                cpu.push(format!(
                    r#"{{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": {pid_cpu}, "tid": 1, "ts": {}, "dur": 5, "args": {{"correlation": {corr}}}}}"#,
                    us(launch)
                ));
                gpu.push(format!(
                    r#"{{"ph": "X", "cat": "kernel", "name": "{name}", "pid": {pid_gpu}, "tid": 7, "ts": {}, "dur": {}, "args": {{"device": 0, "stream": 7, "correlation": {corr}}}}}"#,
                    us(t),
                    us(*dur)
                ));
                t += dur;
            }
            corr += 1;
            let (a, b) = self.allreduce(r, s);
            cpu.push(format!(
                r#"{{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": {pid_cpu}, "tid": 1, "ts": {}, "dur": 5, "args": {{"correlation": {corr}}}}}"#,
                us(t0 + 200_000)
            ));
            gpu.push(format!(
                r#"{{"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "pid": {pid_gpu}, "tid": 20, "ts": {}, "dur": {}, "args": {{"device": 0, "stream": 20, "correlation": {corr}, "Collective name": "allreduce", "Process Group Name": "0", "Process Group Ranks": "[0, 1, 2, 3]"}}}}"#,
                us(a),
                us(b - a)
            ));
        }
        gpu.extend(cpu);
        gpu
    }

    fn header(&self, r: usize) -> String {
        format!(
            r#""schemaVersion": 1, "deviceProperties": [{{"id": 0, "name": "NVIDIA H100 80GB HBM3"}}], "distributedInfo": {{"backend": "nccl", "rank": {r}, "world_size": {}}}"#,
            self.ranks
        )
    }

    /// One file per rank, SGLang names (`planted-TP-{r}.trace.json[.gz]`).
    pub fn write_ranks(&self, dir: &Path, gzip: bool) -> Vec<PathBuf> {
        (0..self.ranks)
            .map(|r| {
                let body = format!(
                    "{{{}, \"traceEvents\": [\n{}\n], \"baseTimeNanoseconds\": {BASE_NS}}}",
                    self.header(r),
                    self.events(r, "1234", "0").join(",\n")
                );
                let name = format!("planted-TP-{r}.trace.json{}", if gzip { ".gz" } else { "" });
                let path = dir.join(name);
                write_maybe_gz(&path, body.as_bytes(), gzip);
                path
            })
            .collect()
    }

    /// One merged trace with `[TPnn] pid` labels (as SGLang's merger and ours write them).
    pub fn write_merged(&self, dir: &Path) -> PathBuf {
        let mut all = Vec::new();
        for r in 0..self.ranks {
            all.extend(self.events(
                r,
                &format!("\"[TP{r:02}] 1234\""),
                &format!("\"[TP{r:02}] 0\""),
            ));
        }
        let body = format!(
            "{{{}, \"traceEvents\": [\n{}\n], \"baseTimeNanoseconds\": {BASE_NS}}}",
            self.header(0),
            all.join(",\n")
        );
        let path = dir.join("merged-planted.trace.json.gz");
        write_maybe_gz(&path, body.as_bytes(), true);
        path
    }
}

fn write_maybe_gz(path: &Path, bytes: &[u8], gzip: bool) {
    use std::io::Write;
    if gzip {
        let f = std::fs::File::create(path).unwrap();
        let mut e = flate2::write::GzEncoder::new(f, flate2::Compression::fast());
        e.write_all(bytes).unwrap();
        e.finish().unwrap();
    } else {
        std::fs::write(path, bytes).unwrap();
    }
}

/// The rank trace files of a directory (`*.json.gz`, not a merged output), sorted.
/// The profile folders bundled with the project, synthetic and recorded (real gloo, NCCL,
/// SGLang serving): those holding rank traces, sorted.
pub fn bundled_profile_dirs() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    for top in [
        "fixtures",
        "fixtures/real-gloo",
        "fixtures/real-nccl",
        "fixtures/real-sglang",
    ] {
        for e in std::fs::read_dir(manifest(top)).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() && !rank_files(&p).is_empty() {
                dirs.push(p);
            }
        }
    }
    dirs.sort();
    dirs
}

pub fn rank_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let n = p.file_name().unwrap().to_string_lossy().into_owned();
            n.ends_with(".json.gz") && !n.starts_with("merged-")
        })
        .collect();
    v.sort();
    v
}

pub fn manifest(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// Runs a Python checker from tests/ and parses the JSON it prints.
pub fn python(script: &str, args: &[&Path], extra: &[&str]) -> serde_json::Value {
    let out = Command::new("python3")
        .arg(manifest("tests").join(script))
        .args(args)
        .args(extra)
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "{script} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("checker prints JSON")
}

pub fn write_gz(path: &Path, text: &[u8]) {
    use std::io::Write;
    let f = std::fs::File::create(path).unwrap();
    let mut w = flate2::write::GzEncoder::new(f, flate2::Compression::fast());
    w.write_all(text).unwrap();
    w.finish().unwrap();
}

/// A small Kineto-shaped trace: `n` kernels on GPU 0 (each with a launch, a flow pair and a
/// correlation), one ProfilerStep per kernel, and `baseTimeNanoseconds` after the events as
/// Kineto writes it.
pub fn kineto(base_ns: Option<i64>, n: usize, ts0_us: f64) -> String {
    let mut ev = vec![
        r#"{"ph":"M","name":"process_name","pid":100,"tid":0,"args":{"name":"python3"}}"#
            .to_string(),
        r#"{"ph":"M","name":"process_name","pid":0,"tid":0,"args":{"name":"GPU 0"}}"#.to_string(),
        r#"{"ph":"M","name":"process_sort_index","pid":0,"tid":0,"args":{"sort_index":0}}"#
            .to_string(),
    ];
    for i in 0..n {
        let t = ts0_us + 100.0 * i as f64;
        let c = 1000 + i;
        ev.push(format!(r#"{{"ph":"X","cat":"user_annotation","name":"ProfilerStep#{i}","pid":100,"tid":1,"ts":{t:.3},"dur":90}}"#));
        ev.push(format!(r#"{{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":100,"tid":1,"ts":{:.3},"dur":5,"args":{{"correlation":{c},"External id":{}}}}}"#, t + 1.0, 50 + i));
        ev.push(format!(
            r#"{{"ph":"s","cat":"ac2g","name":"ac2g","id":{c},"pid":100,"tid":1,"ts":{:.3}}}"#,
            t + 1.0
        ));
        ev.push(format!(r#"{{"ph":"X","cat":"kernel","name":"gemm_kernel","pid":0,"tid":7,"ts":{:.3},"dur":40.5,"args":{{"device":0,"stream":7,"correlation":{c},"External id":{}}}}}"#, t + 10.0, 50 + i));
        ev.push(format!(r#"{{"ph":"f","bp":"e","cat":"ac2g","name":"ac2g","id":{c},"pid":0,"tid":7,"ts":{:.3}}}"#, t + 10.0));
        ev.push(format!(r#"{{"ph":"X","cat":"python_function","name":"forward","pid":100,"tid":1,"ts":{:.3},"dur":3}}"#, t + 0.5));
    }
    let mut doc = format!(
        "{{\"schemaVersion\": 1, \"deviceProperties\": [{{\"id\": 0, \"name\": \"NVIDIA H100\"}}],\n\"traceEvents\": [\n{}\n]",
        ev.join(",\n")
    );
    doc.push_str(", \"traceName\": \"x\", \"displayTimeUnit\": \"ms\"");
    if let Some(b) = base_ns {
        doc.push_str(&format!(", \"baseTimeNanoseconds\": {b}"));
    }
    doc.push_str("}\n");
    doc
}
