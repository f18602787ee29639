//! Which events analyze reads, by category and name: the complete-event categories the
//! collector ([`super::collector::Collector::on_event`]) matches on, the reader's filter
//! ([`WANT`]) built from the same constants, and the name tests both call
//! ([`names_read`], [`is_gemm`], [`is_moe`], [`is_launch`]), so what the reader hands over
//! and what the collector reads cannot drift apart. The tests run per event (a CPU op or
//! runtime call's raw name, often hundreds of thousands per rank), so they compare words, not
//! bytes (`trace::read::swar::same_bytes`), and look only where a word can start
//! (`trace::read::swar::any_at_either`); the tests check them against plain byte-window
//! searches.

use crate::trace::read::swar::{any_at_either, same_bytes};
use crate::trace::Want;

// The categories of complete events the collector reads: its `match` and [`WANT`] name the
// same constants, so the reader's filter cannot drift from what is read.
pub(super) const KERNEL: &str = "kernel";
pub(super) const GPU_MEMCPY: &str = "gpu_memcpy";
pub(super) const GPU_MEMSET: &str = "gpu_memset";
pub(super) const CUDA_RUNTIME: &str = "cuda_runtime";
pub(super) const CUDA_DRIVER: &str = "cuda_driver";
pub(super) const CPU_OP: &str = "cpu_op";
pub(super) const USER_ANNOTATION: &str = "user_annotation";
pub(super) const GPU_USER_ANNOTATION: &str = "gpu_user_annotation";
pub(super) const PYTHON_FUNCTION: &str = "python_function";

/// The events analyze reads ([`crate::trace::Nested::SkimOnly`]): complete events of the
/// categories above, and metadata (`ph` `M`), which the collector ignores but which still
/// names the ranks of a merged trace (a rank with no complete event is still listed), and
/// instant events (`ph` `i`), for the `[memory]` / `[OutOfMemory]` ones
/// ([`super::memory`]): a trace recorded without `profile_memory` has two or three, one
/// recorded with it one per allocation and free, each a few fields and a short `args`.
/// Flow and counter events and other categories (`python_function`, `fwdbwd`,
/// `ac2g`) are skimmed, not decoded; so are runtime calls and CPU ops whose name
/// [`names_read`] turns down.
pub const WANT: Want = Want {
    ph: b"XMi",
    complete_cats: &[
        KERNEL,
        GPU_MEMCPY,
        GPU_MEMSET,
        CUDA_RUNTIME,
        CUDA_DRIVER,
        CPU_OP,
        USER_ANNOTATION,
        GPU_USER_ANNOTATION,
        PYTHON_FUNCTION,
    ],
    named_cats: &[CUDA_RUNTIME, CUDA_DRIVER, CPU_OP, PYTHON_FUNCTION],
    every_cat_named: false,
    names: names_read,
    trust_devices: true,
    // The only Python functions read are waits ([`names_read`]): the others are turned down
    // by their name's first bytes, the rest of it skimmed.
    name_prefixes: &[(PYTHON_FUNCTION, WAIT_PREFIX)],
    needs: arg_needed,
};

/// The `args` key a CPU op's GEMM shapes are read from ([`super::work`]).
pub(super) const INPUT_DIMS: &str = "Input Dims";
/// The `args` key `record_param_comms`' size is read from.
pub(super) const IN_NELEMS: &str = "In msg nelems";
/// The `args` key a CPU point-to-point op's peer is read from ([`super::p2p`]).
pub(super) const CONCRETE_INPUTS: &str = "Concrete Inputs";

/// The key (with its quotes) a CPU op that [`names_read`] keeps while the header lists
/// devices must hold in its text to be read ([`crate::trace::Want::needs`]): in a GPU trace
/// the collector reads a GEMM or fused MoE op only for its `Input Dims` and
/// `record_param_comms` only for its `In msg nelems`, each looked up as written, so one
/// without the key changes nothing. A trace taken without `record_shapes` has neither: its
/// GEMM ops are then skimmed, not decoded (−6 % of analyze's CPU time on the bench's
/// synthetic set).
pub fn arg_needed(cat: &[u8], name: &[u8]) -> Option<&'static [u8]> {
    if cat != CPU_OP.as_bytes() {
        None
    } else if is_gemm(name) || is_moe(name) {
        Some(b"\"Input Dims\"")
    } else if same_bytes(name, COMM_SIZE_OP.as_bytes()) {
        Some(b"\"In msg nelems\"")
    } else {
        None
    }
}

/// Whether the collector reads a runtime call or CPU op of this raw name.
///
/// - A runtime or driver call: only launches and copies (`is_launch`), for their
///   correlation.
/// - A CPU op, when the header lists no device: every one (a CPU-only trace's op totals and
///   intervals are made of them).
/// - A CPU op, when it lists devices: a trace with a GPU op keeps no CPU op totals or
///   intervals (they are dropped at the first GPU op and not collected after, wherever the
///   CPU ops stand), so only the ones read for something else: GEMMs' shapes
///   ([`super::work::GEMM_OPS`]), fused MoE rows, `record_param_comms`' sizes and
///   `ProfilerStep#` marks. A trace that lists devices but holds no GPU op is read again with
///   every CPU op ([`crate::trace::ReadReport::narrowed`]).
pub fn names_read(cat: &[u8], name: &[u8], devices: bool) -> bool {
    if cat == PYTHON_FUNCTION.as_bytes() {
        return !devices && is_wait(name);
    }
    if cat != CPU_OP.as_bytes() {
        return is_launch(name) || is_stream_wait(name);
    }
    // The cheap tests first: most names fail them all.
    !devices
        || is_gemm(name)
        || same_bytes(name, COMM_SIZE_OP.as_bytes())
        || crate::trace::read::steps::is_profiler_step(name)
        || is_moe(name)
}

/// The CPU ops the collector reads beyond a CPU-only trace's totals; [`names_read`] keeps
/// exactly these when the header lists devices, so the two cannot drift.
///
/// A GEMM whose `Input Dims` give a step's tokens ([`super::work::GEMM_OPS`]).
pub(super) fn is_gemm(name: &[u8]) -> bool {
    name.starts_with(b"aten::")
        && super::work::GEMM_OPS
            .iter()
            .any(|g| same_bytes(g.as_bytes(), name))
}

/// A fused MoE op, whose `Input Dims` give the tokens routed to the experts.
pub(super) fn is_moe(name: &[u8]) -> bool {
    contains(name, b"fused_moe")
}

/// Python's `work.wait()` on a c10d work object (a `python_function` of a trace recorded with
/// stacks): in a CPU-only (gloo) trace the `c10d::` op returns once the collective is queued,
/// and the thread waits here until every member has arrived.
pub(super) fn is_wait(name: &[u8]) -> bool {
    name.starts_with(WAIT_PREFIX.as_bytes())
}

/// How [`is_wait`]'s names start.
const WAIT_PREFIX: &str = "<built-in method wait of ";

/// gloo's own range around a collective's transfer (`gloo:all_reduce`, `gloo:send`, …, a
/// `user_annotation`): on a gloo worker thread for collectives, on the calling thread for
/// send/recv. It lasts until the members have exchanged their data, so the time the calling
/// thread spends after the `c10d::` op returned — in `work.wait()`, recorded only with stacks
/// — is inside it: the trace's own record of gloo's waiting, whatever torch or pybind11 call
/// the wait itself.
pub(super) fn is_gloo_range(name: &[u8]) -> bool {
    name.starts_with(b"gloo:")
}

/// A CUDA (or HIP) graph launch (`cudaGraphLaunch`, `cuGraphLaunch`, `hipGraphLaunch`, with
/// or without a version suffix): a forward step replayed as one graph, where a trace has no
/// step markers ([`super::steps::choose`]).
pub(super) fn is_graph_launch(name: &[u8]) -> bool {
    name.windows(11).any(|w| w == b"GraphLaunch")
}

/// The op whose `In msg nelems` gives a collective's size.
pub(super) const COMM_SIZE_OP: &str = "record_param_comms";

/// `cudaStreamWaitEvent` (`hipStreamWaitEvent`): a stream waits for an event recorded on
/// another, which tells that the trace records what waited for a side-stream collective
/// ([`super::overlap`]).
pub(super) fn is_stream_wait(name: &[u8]) -> bool {
    same_bytes(name, b"cudaStreamWaitEvent") || same_bytes(name, b"hipStreamWaitEvent")
}

/// A runtime or driver call whose correlation analyze reads: a kernel launch, a copy or a set
/// (`cudaLaunchKernel`, `hipExtModuleLaunchKernel`, `cudaMemcpyAsync`, …).
pub(super) fn is_launch(name: &[u8]) -> bool {
    // The three words are 6 bytes long and start with `L` or `M`: only the windows there.
    any_at_either(name, b'L', b'M', |k| {
        matches!(name.get(k..k + 6), Some(b"Launch" | b"Memcpy" | b"Memset"))
    })
}

/// Whether `needle` (its first byte not 0) occurs in `hay`: for the short names of CPU ops,
/// where building a `memchr::memmem` searcher costs more than the search; only the windows
/// that start with the needle's first byte are compared.
fn contains(hay: &[u8], needle: &[u8]) -> bool {
    let Some(&first) = needle.first() else {
        return true;
    };
    any_at_either(hay, first, first, |k| {
        hay.get(k..k + needle.len())
            .is_some_and(|w| same_bytes(w, needle))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_keys_a_cpu_op_needs_are_the_ones_the_collector_reads() {
        let quoted = |k: &str| format!("\"{k}\"").into_bytes();
        let needs = |name: &str| arg_needed(CPU_OP.as_bytes(), name.as_bytes());
        for g in super::super::work::GEMM_OPS {
            assert_eq!(needs(g), Some(&quoted(INPUT_DIMS)[..]), "{g}");
        }
        assert_eq!(
            needs("moe::fused_moe_kernel"),
            Some(&quoted(INPUT_DIMS)[..])
        );
        assert_eq!(needs(COMM_SIZE_OP), Some(&quoted(IN_NELEMS)[..]));
        assert_eq!(needs("ProfilerStep#3"), None);
        assert_eq!(arg_needed(b"kernel", b"aten::mm"), None);
        // Only while the header lists devices: a CPU-only trace's ops are all read.
        let w = WANT;
        assert_eq!(
            w.pick(b'X', b"cpu_op", b"aten::mm", false),
            crate::trace::read::want::Pick::Keep
        );
        assert!(matches!(
            w.pick(b'X', b"cpu_op", b"aten::mm", true),
            crate::trace::read::want::Pick::Needs(_)
        ));
    }

    /// The tests as they were written before the word-at-a-time versions: every byte window.
    fn launch_by_windows(name: &[u8]) -> bool {
        name.windows(6)
            .any(|w| matches!(w, b"Launch" | b"Memcpy" | b"Memset"))
    }

    fn contains_by_windows(hay: &[u8], needle: &[u8]) -> bool {
        needle.is_empty() || hay.windows(needle.len()).any(|w| w == needle)
    }

    fn read_by_windows(cat: &[u8], name: &[u8], devices: bool) -> bool {
        if cat != CPU_OP.as_bytes() {
            return launch_by_windows(name);
        }
        !devices
            || (name.starts_with(b"aten::")
                && super::super::work::GEMM_OPS
                    .iter()
                    .any(|g| g.as_bytes() == name))
            || name == COMM_SIZE_OP.as_bytes()
            || name.starts_with(b"ProfilerStep#")
            || contains_by_windows(name, b"fused_moe")
    }

    /// Names made of pieces of the words the tests look for, cut and joined at random, so
    /// that near misses (`Launc`, `fused_mo`, `aten::m`) stand at every offset.
    fn names(n: usize) -> Vec<Vec<u8>> {
        const PIECES: [&[u8]; 16] = [
            b"cuda",
            b"hip",
            b"Launch",
            b"Kernel",
            b"Memcpy",
            b"Memset",
            b"Async",
            b"aten::",
            b"mm",
            b"fused_moe",
            b"record_param_comms",
            b"ProfilerStep#",
            b"L",
            b"M",
            b"_",
            b"x",
        ];
        let mut s = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move || crate::testrng::xorshift(&mut s);
        let mut out = vec![Vec::new()];
        out.extend(
            super::super::work::GEMM_OPS
                .iter()
                .map(|g| g.as_bytes().to_vec()),
        );
        while out.len() < n {
            let mut name = Vec::new();
            for _ in 0..next() % 5 {
                let p = PIECES[(next() % 16) as usize];
                let cut = (next() as usize) % (p.len() + 1);
                if next() % 3 == 0 {
                    name.extend_from_slice(&p[..cut]);
                } else {
                    name.extend_from_slice(p);
                }
            }
            out.push(name);
        }
        out
    }

    #[test]
    fn name_tests_equal_the_byte_window_searches() {
        let names = names(20_000);
        let (mut launches, mut read) = (0, 0);
        for name in &names {
            assert_eq!(is_launch(name), launch_by_windows(name), "{name:?}");
            assert_eq!(
                is_moe(name),
                contains_by_windows(name, b"fused_moe"),
                "{name:?}"
            );
            for cat in [CPU_OP, CUDA_RUNTIME, CUDA_DRIVER] {
                for devices in [false, true] {
                    let want = read_by_windows(cat.as_bytes(), name, devices);
                    assert_eq!(names_read(cat.as_bytes(), name, devices), want, "{name:?}");
                    read += usize::from(want && devices && cat == CPU_OP);
                }
            }
            launches += usize::from(launch_by_windows(name));
        }
        // Both answers are common, so a test that always said one thing would fail.
        assert!(launches > 2_000 && launches < 18_000, "{launches}");
        assert!(read > 2_000 && read < 18_000, "{read}");
    }
}
