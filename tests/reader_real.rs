//! The reader on real traces: event counts and kernel times must equal the figures that
//! ../shared/fixtures/README.md gives (computed there by an independent Python script).

use std::path::{Path, PathBuf};

use rankprof::trace::{read_trace, read_trace_with, Id, Nested, Ns};

fn shared(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/fixtures")
        .join(rel)
}

struct Figures {
    events: u64,
    kernels: u64,
    kernel_ns: i64,
    nccl_ns: i64,
}

fn figures(rel: &str) -> Figures {
    let mut f = Figures {
        events: 0,
        kernels: 0,
        kernel_ns: 0,
        nccl_ns: 0,
    };
    let report = read_trace(&shared(rel), |ev| {
        if ev.ph == b'X' && ev.cat.eq_str("kernel") {
            f.kernels += 1;
            let d = ev.dur.unwrap_or(Ns::ZERO).get();
            f.kernel_ns += d;
            let n = ev.name.get().to_lowercase();
            if n.contains("nccl") || n.contains("rccl") {
                f.nccl_ns += d;
            }
        }
    })
    .unwrap();
    assert!(!report.is_damaged(), "{report}");
    f.events = report.events;
    f
}

#[test]
fn hta_counts_and_kernel_times_match_the_readme() {
    // (file, events, kernel events, kernel µs, NCCL µs) from ../shared/fixtures/README.md
    let table: &[(&str, u64, u64, f64, f64)] = &[
        (
            "hta/sampled-rank-0.json.gz",
            4_855,
            1_154,
            606_519.0,
            396_199.0,
        ),
        (
            "hta/sampled-rank-1.json.gz",
            4_720,
            1_104,
            651_026.0,
            379_053.0,
        ),
        (
            "hta/nccl-a100-rank-0.json.gz",
            40_573,
            2_700,
            162_532.34,
            46_876.493,
        ),
        ("hta/rocm-mi250.json.gz", 220, 14, 110.881, 0.0),
        ("hta/cpu-only-rank-34.pt.trace.json.gz", 30, 0, 0.0, 0.0),
        ("hta/triton-example.json.gz", 71, 1, 1.76, 0.0),
        ("hta/alexnet-single-gpu.json.gz", 1_408, 79, 10_692.0, 0.0),
    ];
    for &(file, events, kernels, kernel_us, nccl_us) in table {
        let f = figures(file);
        assert_eq!(f.events, events, "{file} events");
        assert_eq!(f.kernels, kernels, "{file} kernels");
        assert_eq!(
            f.kernel_ns,
            (kernel_us * 1000.0).round() as i64,
            "{file} kernel time"
        );
        assert_eq!(
            f.nccl_ns,
            (nccl_us * 1000.0).round() as i64,
            "{file} NCCL time"
        );
    }
}

#[test]
fn sglang_merged_output_counts_match_the_readme() {
    let a = figures("sglang-cpu/merge_by_sglang/manual-1-TP-0.trace.json.gz");
    let b = figures("sglang-cpu/merge_by_sglang/manual-1-TP-1.trace.json.gz");
    let m = figures("sglang-cpu/merge_by_sglang/merged-manual-1.trace.json.gz");
    assert_eq!((a.events, b.events, m.events), (74_273, 69_229, 143_502));
}

#[test]
fn header_keys_on_both_sides_of_the_events() {
    let r = read_trace(&shared("hta/nccl-a100-rank-0.json.gz"), |_| {}).unwrap();
    assert!(r.header.base_time_ns.is_some());
    assert_eq!(r.header.distributed_rank(), Some(0));
    assert!(!r.header.device_names().is_empty());
    let r = read_trace(&shared("hta/sampled-rank-1.json.gz"), |_| {}).unwrap();
    assert_eq!(r.header.base_time_ns, None);
}

/// Every real trace under ../shared/fixtures (gzip or plain JSON), recursively.
fn real_traces(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            real_traces(&p, out);
        } else if p.to_string_lossy().ends_with(".json.gz")
            || p.extension().is_some_and(|x| x == "json")
        {
            out.push(p);
        }
    }
}

/// Each event as (offset, raw text, args) and the report's counts, read one way.
fn read_all(p: &Path, nested: Nested) -> (Vec<(u64, String, Option<String>)>, String) {
    let mut evs = Vec::new();
    let r = read_trace_with(p, nested, |ev| {
        evs.push((ev.offset, ev.raw.to_string(), ev.args.map(str::to_string)))
    })
    .unwrap();
    let counts = format!(
        "{} {} {} {:?}",
        r.events, r.rejected, r.raw_control, r.damage
    );
    (evs, counts)
}

#[test]
fn skimming_nested_values_reads_every_real_trace_as_validating_does() {
    let mut files = Vec::new();
    real_traces(&shared(""), &mut files);
    assert!(files.len() >= 10, "fixtures missing: {files:?}");
    let mut with_args = 0;
    for p in &files {
        let (a, ca) = read_all(p, Nested::Validate);
        let (b, cb) = read_all(p, Nested::Skim);
        assert_eq!(ca, cb, "{}", p.display());
        assert_eq!(a.len(), b.len(), "{}", p.display());
        for (x, y) in a.iter().zip(&b) {
            assert_eq!(x, y, "{}", p.display());
        }
        with_args += a.iter().filter(|e| e.2.is_some()).count();
    }
    assert!(with_args > 10_000, "{with_args} events with args");
}

/// The GEMM ops analyze reads shapes from.
const GEMMS: [&str; 5] = [
    "aten::mm",
    "aten::addmm",
    "aten::linear",
    "aten::matmul",
    "aten::_scaled_mm",
];

/// The test's own reading of analyze's [`Want`] rule for an event: (kept, turned down only
/// because the header lists a device). `ph` among `XM`; a complete event's `cat` (as written)
/// among analyze's eight; a runtime call only if it launches or copies, or is a stream's wait on
/// an event; a CPU op, when devices are listed, only if analyze reads it in a GPU trace (GEMM
/// shapes, fused MoE, comm sizes, profiler steps), and then a GEMM or fused MoE op only if its text holds `"Input Dims"` and
/// `record_param_comms` only if it holds `"In msg nelems"` (what analyze reads them for).
fn kept(ph: u8, cat: &str, name: &str, raw: &str, devices: bool) -> (bool, bool) {
    const CATS: [&str; 9] = [
        "kernel",
        "gpu_memcpy",
        "gpu_memset",
        "cuda_runtime",
        "cuda_driver",
        "cpu_op",
        "user_annotation",
        "gpu_user_annotation",
        "python_function",
    ];
    // Metadata, and instant events (the `[memory]` ones of `profile_memory`).
    if ph == b'M' || ph == b'i' {
        return (true, false);
    }
    if ph != b'X' || !CATS.contains(&cat) {
        return (false, false);
    }
    match cat {
        // Launches and copies for their correlation; a stream's wait on an event for the
        // side-stream rule (whether the trace records what waited for a collective).
        "cuda_runtime" | "cuda_driver" => (
            ["Launch", "Memcpy", "Memset"]
                .iter()
                .any(|w| name.contains(w))
                || name == "cudaStreamWaitEvent"
                || name == "hipStreamWaitEvent",
            false,
        ),
        "cpu_op" => {
            let shapes = GEMMS.contains(&name) || name.contains("fused_moe");
            let read_in_gpu_trace = (shapes && raw.contains("\"Input Dims\""))
                || (name == "record_param_comms" && raw.contains("\"In msg nelems\""))
                || name.starts_with("ProfilerStep#");
            let keep = !devices || read_in_gpu_trace;
            (keep, !keep)
        }
        // Python's `work.wait()`: where a gloo collective's thread waits (CPU-only traces).
        "python_function" => {
            let wait = name.starts_with("<built-in method wait of ");
            (wait && !devices, wait && devices)
        }
        _ => (true, false),
    }
}

#[test]
fn reading_only_wanted_events_hands_over_the_validating_readers_wanted_ones() {
    use rankprof::analyze::collect::names::WANT;
    let mut files = Vec::new();
    real_traces(&shared(""), &mut files);
    assert!(files.len() >= 10, "fixtures missing: {files:?}");
    let (mut all, mut handed) = (0usize, 0usize);
    let (mut narrowed_files, mut narrowed_all) = (0, 0u64);
    let mut textless = 0usize;
    for p in &files {
        let mut expect = Vec::new();
        let mut labeled = false;
        let mut narrowed = 0u64;
        // Whether the header keys before the events list a device.
        let devices = rankprof::trace::read::reader::read_head(p)
            .unwrap()
            .is_some_and(|h| h.lists_devices());
        let ra = read_trace_with(p, Nested::Validate, |ev| {
            // From the first handed-over event with a labeled pid (a merged trace's) on,
            // everything is handed over.
            let (keep, narrow) = kept(ev.ph, ev.cat.raw(), ev.name.raw(), ev.raw, devices);
            if labeled || keep {
                expect.push((ev.offset, ev.raw.to_string()));
                labeled |= matches!(ev.pid, Id::Str(s) if s.raw().starts_with('['));
            } else {
                narrowed += u64::from(narrow);
                let by_text =
                    GEMMS.contains(&ev.name.raw()) || ev.name.raw() == "record_param_comms";
                textless += usize::from(narrow && by_text);
            }
        })
        .unwrap();
        let mut got = Vec::new();
        let rb = read_trace_with(p, Nested::SkimOnly(WANT), |ev| {
            got.push((ev.offset, ev.raw.to_string()))
        })
        .unwrap();
        assert_eq!(got, expect, "{}", p.display());
        assert_eq!(
            (
                ra.events,
                ra.rejected,
                ra.raw_control,
                format!("{:?}", ra.damage)
            ),
            (
                rb.events,
                rb.rejected,
                rb.raw_control,
                format!("{:?}", rb.damage)
            ),
            "{}",
            p.display()
        );
        assert_eq!(
            (rb.devices, rb.narrowed),
            (devices, narrowed),
            "{}",
            p.display()
        );
        narrowed_files += usize::from(narrowed > 0);
        narrowed_all += narrowed;
        all += ra.events as usize;
        handed += got.len();
    }
    // Some GPU traces hold GEMM ops without `Input Dims` (HTA's, 24) and `record_param_comms`
    // without `In msg nelems` (DLRM's, 104): skimmed by their text.
    assert!(textless >= 100, "{textless} CPU ops skimmed by their text");
    // The GPU fixtures list their devices, and their CPU ops are skimmed by name.
    assert!(
        narrowed_files >= 4 && narrowed_all > 10_000,
        "{narrowed_files} files, {narrowed_all} events"
    );
    // The fixtures hold events of both sides (flows, python_function; kernels, cpu_ops).
    assert!(
        handed > 10_000 && all - handed > 20_000,
        "{handed} of {all}"
    );
}
