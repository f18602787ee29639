//! `--normalize`: kernel names reduced to what stays the same when a library is rebuilt or a
//! tile size is retuned, so the two sides of a comparison match by what the kernel *is*.
//!
//! Three rules, in this order:
//!
//! 1. **Template arguments**: every outermost `<…>` becomes `<…>`
//!    (`flash_fwd_kernel<Flash_fwd_kernel_traits<128, 64, …>>(Flash_fwd_params)` →
//!    `flash_fwd_kernel<…>(Flash_fwd_params)`). `operator<`, `operator<<`, `operator->` and
//!    `->` are not brackets; an unbalanced `<` leaves the rest of the name as it is.
//! 2. **Launch-shape tokens** inside identifiers (split at `_`): `128x256`, `64x4`, `2x1x1`, and
//!    the same after a shape word (`tilesize128x128x64`, `warpgroupsize1x1x1`, `cluster2x1`,
//!    …), and `align8`/`align16` (CUTLASS alignment): dropped with their `_`.
//!    `sm90_xmma_gemm_…_tilesize128x128x64_warpgroupsize1x1x1` → `sm90_xmma_gemm_…`;
//!    `cutlass_80_tensorop_s16816gemm_bf16_128x256_64x4_nn_align8` →
//!    `cutlass_80_tensorop_s16816gemm_bf16_nn`.
//! 3. **Triton's compile counter**: a trailing `_<digits>` on identifiers that start with
//!    `triton_` (`triton_poi_fused_add_0` → `triton_poi_fused_add`).
//!
//! Runs of whitespace become one space. Kernels that normalize to the same name are added up.

/// Words that may precede a shape (`tilesize128x128x64`).
const SHAPE_WORDS: &[&str] = &[
    "",
    "tile",
    "tilesize",
    "warpgroupsize",
    "warpgroup",
    "wg",
    "cluster",
    "clustersize",
    "cta",
    "ctasize",
    "block",
    "blocksize",
    "warps",
    "warp",
    "mma",
    "grid",
    "shape",
    "stages",
];

/// The normalized form of a kernel name.
pub(crate) fn normalize(name: &str) -> String {
    let t = strip_templates(name);
    let t = strip_shapes(&t);
    t.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Rule 1: outermost `<…>` → `<…>`.
fn strip_templates(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == b'<' && !after_operator(s, i) {
            if let Some(end) = closing(b, i) {
                out.push_str("<…>");
                i = end + 1;
                continue;
            }
            // Unbalanced: keep the rest as it is.
            out.push_str(&s[i..]);
            return out;
        }
        // Copy one character (the name may hold UTF-8).
        let len = utf8_len(c);
        out.push_str(&s[i..(i + len).min(s.len())]);
        i += len;
    }
    out
}

fn utf8_len(first: u8) -> usize {
    match first {
        0xF0..=0xFF => 4,
        0xE0..=0xEF => 3,
        0xC0..=0xDF => 2,
        _ => 1,
    }
}

/// `operator<`, `operator<<`, `operator<=`: the `<` at `i` is part of an operator name.
fn after_operator(s: &str, i: usize) -> bool {
    let head = s[..i].trim_end_matches('<').trim_end();
    head.ends_with("operator")
}

/// Index of the `>` closing the `<` at `open`, or `None` when it is never closed.
fn closing(b: &[u8], open: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut i = open;
    while i < b.len() {
        match b[i] {
            b'<' => depth += 1,
            b'>' if i > 0 && b[i - 1] == b'-' => {}
            b'>' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// Rules 2 and 3, applied to every identifier (maximal run of `[A-Za-z0-9_]`).
fn strip_shapes(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut word = String::new();
    for c in s.chars() {
        if c.is_ascii_alphanumeric() || c == '_' {
            word.push(c);
        } else {
            if !word.is_empty() {
                out.push_str(&identifier(&word));
                word.clear();
            }
            out.push(c);
        }
    }
    if !word.is_empty() {
        out.push_str(&identifier(&word));
    }
    out
}

fn identifier(word: &str) -> String {
    let mut parts: Vec<&str> = word.split('_').collect();
    let first = parts.first().copied().unwrap_or("");
    // Keep the identifier's first token even if it looks like a shape (`2x_kernel` is a name).
    let mut kept: Vec<&str> = vec![first];
    kept.extend(parts.drain(1..).filter(|t| !is_shape(t)));
    if word.starts_with("triton_") && kept.len() > 2 {
        if let Some(last) = kept.last() {
            if !last.is_empty() && last.bytes().all(|b| b.is_ascii_digit()) {
                kept.pop();
            }
        }
    }
    kept.join("_")
}

/// `128x256`, `tilesize128x128x64`, `align8`.
fn is_shape(token: &str) -> bool {
    let lower = token.to_ascii_lowercase();
    if let Some(n) = lower.strip_prefix("align") {
        return !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit());
    }
    let digits_at = lower
        .find(|c: char| c.is_ascii_digit())
        .unwrap_or(lower.len());
    let (word, dims) = lower.split_at(digits_at);
    if !SHAPE_WORDS.contains(&word) {
        return false;
    }
    let parts: Vec<&str> = dims.split('x').collect();
    parts.len() >= 2
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    use super::normalize;

    #[test]
    fn templates_become_one_marker() {
        assert_eq!(
            normalize("void flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 64, 64, 4, false, false, cutlass::bfloat16_t> >(Flash_fwd_params)"),
            "void flash::flash_fwd_kernel<…>(Flash_fwd_params)"
        );
        assert_eq!(
            normalize("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)"),
            "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<…>)"
        );
        // Two spellings of one kernel meet.
        assert_eq!(
            normalize("void vllm::rms_norm_kernel<c10::BFloat16, 8>(c10::BFloat16*, float)"),
            normalize("void vllm::rms_norm_kernel<c10::Half, 16>(c10::BFloat16*, float)")
        );
    }

    #[test]
    fn operators_and_unbalanced_brackets_are_left_alone() {
        assert_eq!(normalize("foo::operator<<(int)"), "foo::operator<<(int)");
        assert_eq!(normalize("a<b->c>d"), "a<…>d");
        assert_eq!(normalize("broken<never closed"), "broken<never closed");
    }

    #[test]
    fn launch_shapes_are_dropped() {
        assert_eq!(
            normalize("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas"),
            "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_execute_segment_k_off_kernel__5x_cublas"
        );
        assert_eq!(
            normalize("cutlass_80_tensorop_s16816gemm_bf16_128x256_64x4_nn_align8"),
            "cutlass_80_tensorop_s16816gemm_bf16_nn"
        );
        assert_eq!(
            normalize("ampere_bf16_s16816gemm_bf16_128x64_ldg8_f2f_stages_64x3_tn"),
            "ampere_bf16_s16816gemm_bf16_ldg8_f2f_stages_tn"
        );
        assert_eq!(
            normalize("nvjet_tst_128x64_64x8_2x1_v_bz_coopA_TNT"),
            "nvjet_tst_v_bz_coopA_TNT"
        );
        // Retuned tiles meet.
        assert_eq!(
            normalize("cutlass_80_tensorop_s16816gemm_bf16_256x128_32x3_nn_align16"),
            normalize("cutlass_80_tensorop_s16816gemm_bf16_128x256_64x4_nn_align8")
        );
        // dtypes and plain numbers are not shapes.
        assert_eq!(normalize("bf16x2_kernel_sm90_3"), "bf16x2_kernel_sm90_3");
        assert_eq!(normalize("kernel_align_a"), "kernel_align_a");
    }

    #[test]
    fn triton_counters_and_spaces() {
        assert_eq!(normalize("triton_poi_fused_add_0"), "triton_poi_fused_add");
        assert_eq!(
            normalize("triton_red_fused__to_copy_add_mean_mul_pow_rsqrt_12"),
            "triton_red_fused__to_copy_add_mean_mul_pow_rsqrt"
        );
        assert_eq!(normalize("other_kernel_0"), "other_kernel_0");
        assert_eq!(normalize("  a   b\tc "), "a b c");
    }
}
