//! The reader on real traces: event counts and kernel times must equal the figures that
//! ../shared/fixtures/README.md gives (computed there by an independent Python script).

use std::path::{Path, PathBuf};

use rankprof::trace::{read_trace, Ns};

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
            let d = ev.dur.unwrap_or(Ns::ZERO).0;
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
