//! Kernel classes: the one table of name rules that sorts GPU kernels (and CPU ops, in CPU-only
//! traces) into GEMM, attention, communication, MoE, norm/elementwise/activation, memory and
//! other, plus the `--classes rules.toml` override.
//!
//! Rules are case-insensitive regular expressions tried in order; the first match wins, so the
//! specific classes (communication, attention, MoE) come before the broad ones (GEMM, memory,
//! norm). `gpu_memcpy` / `gpu_memset` events are always `memory`, whatever their name.
//!
//! The override file adds rules in front of the built-in table (or replaces it):
//!
//! ```toml
//! # rules.toml: tried before the built-in rules; the first match wins.
//! builtin = true            # false: use only the rules below
//!
//! [[rule]]
//! class = "attention"
//! pattern = "my_fused_attn"
//!
//! [[rule]]
//! class = "sampling"        # a class of your own gets its own column
//! pattern = "top_k_top_p|sampling"
//! ```

use anyhow::{bail, Context, Result};
use regex::Regex;
use serde::Deserialize;

/// Communication: NCCL/RCCL/MSCCL, custom all-reduce (vLLM/SGLang `cross_device_reduce`,
/// TRT-LLM one-/two-shot and Lamport all-reduce), DeepEP dispatch/combine, NVSHMEM; on the CPU
/// side `c10d::*`, `record_param_comms`, `gloo:*`.
pub(crate) const COMM: &str = "comm";
pub(crate) const MEMORY: &str = "memory";
pub(crate) const OTHER: &str = "other";

/// The built-in rules: (class, pattern). Order matters: first match wins. A class may have
/// several rules: the narrow early ones take names that carry a later class's word
/// (`reshape_and_cache_flash_kernel` is a KV-cache write, not attention;
/// `rotary_embedding_kernel` is rotary, not an embedding lookup). Every pattern must also be a
/// valid Python `re` pattern: `tests/check_compare.py` reads this table.
pub(crate) const BUILTIN: &[(&str, &str)] = &[
    // TorchInductor's pointwise / reduction / persistent-reduction kernels are elementwise by
    // construction, whatever ops their names list (`triton_poi_fused_add_all_reduce_0`).
    ("norm", r"^triton_(poi|red|per)_"),
    (
        COMM,
        r"nccl|rccl|msccl|cross_device_reduce|custom_?all_?reduce|all_?reduce|all_?gather|reduce_?scatter|all_?to_?all|deep_?ep|internode|intranode|nvshmem|lamport|sendrecv|c10d::|record_param_comms|gloo",
    ),
    // Vendor GEMM libraries whose kernel names carry tuning codes, not op words: hipBLASLt /
    // Tensile (`Cijk_Alik_Bljk_…`), cuBLAS(Lt) nvJet / xmma / SIMT GEMV, rocBLAS, vLLM's ROCm
    // skinny GEMMs.
    (
        "gemm",
        r"^(custom_)?cijk_|^nvjet_|_xmma_gemm|hipblaslt|rocblas|wvsplitk|gemv2[nt]_kernel|gemvx|^(ampere|volta|turing)_\w*gemm|cutlass_\d+_(tensorop|wmma|simt)",
    ),
    // KV-cache writes and runtime copies whose names carry attention words (flash, mla, paged).
    (
        MEMORY,
        r"reshape_and_cache|concat_and_cache|store_kvcache|append_?paged_?kv_?cache|set_mla_kv_buffer|gather_and_maybe_dequant_cache|__amd_rocclr_",
    ),
    // Rotary position embedding: before attention (FlashInfer's `BatchQKApplyRotary…`) and
    // before memory's `embedding`.
    ("norm", r"rotary|rope_|_rope|::rope|^rope"),
    (
        "attention",
        r"flash_|flash::|flashattn|flashmla|flashinfer::(batch|single|mla|merge|prefill|decode|cascade|page|pod)|fmha|attention|attn|paged|mla|xformers|sdpa|scaled_dot_product|batchprefill|batchdecode|withkvcache|merge_?states?|^_fwd_(grouped_)?kernel(_stage\d|_splitk)?(_asm)?(\.kd)?$|decode_att|aiter(::|\d+)pa_|(^|[^a-z])[gm]qa_",
    ),
    // TRT-LLM's generated batched GEMMs (`bmm_<out>_<in>_<acc>_t<tile>…`, FlashInfer's
    // trtllm-gen MoE: the experts' GEMMs, with swiGlu fused into the first) are the MoE's.
    (
        "moe",
        r"moe|expert|topk_softmax|topk_?softplus|topkgating|grouped_topk|fused_topk|ep_scatter|ep_gather|count_and_sort|m_grouped|grouped_gemm|group_gemm|^bmm_\w*_t\d+x\d+x\d+",
    ),
    (
        "gemm",
        r"^gemm|[^b]gemm|gemv|matmul|cublas|cutlass|wgmma|nvjet|xmma|s16816|s1688|splitk|scaled_mm|_mm_|bmm|marlin|conv([^e]|$)|fft2d_|scudnn|wgrad|dgrad|fprop|^aten::(mm|addmm|linear|bmm|baddbmm|matmul)$",
    ),
    (
        MEMORY,
        r"memcpy|memset|copy|gather|scatter|index|catarray|concat|store_kvcache|kv_?buffer|transpose|permute|contiguous|embedding|nchwtonhwc|nhwctonchw|fillbuffer",
    ),
    (
        "norm",
        r"norm|rms|bn_fw|bn_bw|elementwise|vectorized|unrolled|multi_tensor_apply|silu|gelu|relu|swiglu|act_and_mul|activation|softmax|reduce_kernel|reduction|pool|fill|dropout|quant|sigmoid|tanh|clamp|aten::(add|mul|sub|div)",
    ),
];

/// What each built-in class holds (for help texts and reports).
pub(crate) const DESCRIPTIONS: &[(&str, &str)] = &[
    (
        COMM,
        "NCCL/RCCL, custom all-reduce, DeepEP dispatch/combine",
    ),
    ("attention", "flash/paged/MLA/FlashInfer attention"),
    ("moe", "MoE routing, grouped GEMM, expert kernels"),
    (
        "gemm",
        "dense GEMM/GEMV (cuBLAS(Lt), CUTLASS, hipBLASLt/Tensile, rocBLAS, CK, DeepGEMM)",
    ),
    (MEMORY, "memcpy/memset, copies, gathers, KV-cache stores"),
    (
        "norm",
        "norm, elementwise, activation, rotary, quantization, Triton Inductor fusions",
    ),
    (
        OTHER,
        "everything else: unclassified (sorts, sampling, custom kernels)",
    ),
];

/// At most this many names are remembered by [`Classifier::classify`].
const SEEN_MAX: usize = 1 << 14;

struct Rule {
    class: u8,
    re: Regex,
}

/// Sorts names into classes. Class ids index [`Classifier::names`].
pub struct Classifier {
    names: Vec<String>,
    rules: Vec<Rule>,
    comm: u8,
    memory: u8,
    other: u8,
    /// Names already classified: every rank meets the same few hundred kernel names, and the
    /// rules are tried one regex after another (at 1,024 ranks that was ~2 % of analyze).
    seen: std::sync::RwLock<rustc_hash::FxHashMap<Box<str>, u8>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RulesFile {
    #[serde(default = "yes")]
    builtin: bool,
    #[serde(default)]
    rule: Vec<RuleEntry>,
}

fn yes() -> bool {
    true
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleEntry {
    class: String,
    pattern: String,
}

impl Default for Classifier {
    fn default() -> Self {
        Classifier::new(&[], true).expect("the built-in rules compile")
    }
}

impl Classifier {
    /// `extra` rules (class, pattern) are tried first; `builtin` keeps the built-in table after
    /// them. Classes keep the built-in order, new classes follow, `other` is always last.
    pub(crate) fn new(extra: &[(String, String)], builtin: bool) -> Result<Self> {
        let mut names: Vec<String> = Vec::new();
        let mut add = |c: &str| {
            if c != OTHER && !names.iter().any(|n| n == c) {
                names.push(c.to_string());
            }
        };
        // Column order: the built-in classes as DESCRIPTIONS lists them (not rule order).
        for (c, _) in DESCRIPTIONS {
            add(c);
        }
        for (c, _) in extra {
            if c.trim().is_empty() {
                bail!("a rule has an empty class name");
            }
            add(c.trim());
        }
        names.push(OTHER.to_string());
        if names.len() > 250 {
            bail!("too many kernel classes ({}; at most 250)", names.len());
        }
        let id = |c: &str| names.iter().position(|n| n == c).unwrap_or(0) as u8;
        let mut rules = Vec::new();
        for (class, pat) in extra {
            let class = class.trim();
            let re = Regex::new(&format!("(?i){pat}"))
                .with_context(|| format!("rule for class {class:?}: bad pattern {pat:?}"))?;
            rules.push(Rule {
                class: id(class),
                re,
            });
        }
        if builtin {
            for (c, pat) in BUILTIN {
                rules.push(Rule {
                    class: id(c),
                    re: Regex::new(&format!("(?i){pat}")).context("built-in rule")?,
                });
            }
        }
        Ok(Classifier {
            comm: id(COMM),
            memory: id(MEMORY),
            other: id(OTHER),
            names,
            rules,
            seen: Default::default(),
        })
    }

    pub(crate) fn from_toml(text: &str) -> Result<Self> {
        let f: RulesFile = toml::from_str(text)?;
        let extra: Vec<(String, String)> =
            f.rule.into_iter().map(|r| (r.class, r.pattern)).collect();
        if !f.builtin && extra.is_empty() {
            bail!("builtin = false and no [[rule]]: every kernel would be \"other\"");
        }
        Self::new(&extra, f.builtin)
    }

    /// Class names, in column order (`other` last).
    pub(crate) fn names(&self) -> &[String] {
        &self.names
    }

    #[cfg(test)]
    pub(crate) fn name(&self, id: u8) -> &str {
        self.names.get(id as usize).map_or(OTHER, String::as_str)
    }

    pub(crate) fn comm(&self) -> u8 {
        self.comm
    }

    pub(crate) fn memory(&self) -> u8 {
        self.memory
    }

    pub(crate) fn other(&self) -> u8 {
        self.other
    }

    /// The class of a (decoded) kernel or op name.
    pub(crate) fn classify(&self, name: &str) -> u8 {
        if let Some(&c) = self
            .seen
            .read()
            .ok()
            .and_then(|m| m.get(name).copied())
            .as_ref()
        {
            return c;
        }
        let c = self
            .rules
            .iter()
            .find(|r| r.re.is_match(name))
            .map_or(self.other, |r| r.class);
        if let Ok(mut m) = self.seen.write() {
            // Bounded: names made unique per step (`ProfilerStep#N`) must not grow it.
            if m.len() < SEEN_MAX {
                m.insert(name.into(), c);
            }
        }
        c
    }
}

/// The share of time in class `other` (index `other` of each row of `ns[rank][class]`),
/// percent: over all ranks together, and per rank. Zero where a rank has no time at all.
pub(crate) fn other_share(ns: &[Vec<i64>], other: usize) -> (f64, Vec<f64>) {
    let pct = |o: i64, t: i64| {
        if t > 0 {
            100.0 * o as f64 / t as f64
        } else {
            0.0
        }
    };
    let row = |v: &Vec<i64>| (v.get(other).copied().unwrap_or(0), v.iter().sum::<i64>());
    let per: Vec<f64> = ns.iter().map(row).map(|(o, t)| pct(o, t)).collect();
    let (o, t) = ns
        .iter()
        .map(row)
        .fold((0i64, 0i64), |a, b| (a.0 + b.0, a.1 + b.1));
    (pct(o, t), per)
}

#[cfg(test)]
mod table;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_rules_sort_real_kernel_names() {
        let c = Classifier::default();
        let class = |n: &str| c.name(c.classify(n)).to_string();
        let cases = [
            ("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)", "comm"),
            ("ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "comm"),
            ("void vllm::cross_device_reduce_1stage<__nv_bfloat16, 8>(RankData*, RankSignals, Signal*, __nv_bfloat16*, int, int)", "comm"),
            ("void deep_ep::intranode::dispatch<8, 768, 8192>(int4*, float*, int*)", "comm"),
            ("c10d::allreduce_", "comm"),
            ("void flash::flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4>>(Flash_fwd_params)", "attention"),
            ("void flashinfer::BatchPrefillWithPagedKVCacheKernel<...>", "attention"),
            ("FlashAttnFwdSm90<cutlass::bfloat16_t>", "attention"),
            ("void flashinfer::mla::BatchMLAPagedAttentionKernel<...>", "attention"),
            // FlashInfer's norm and activation kernels are not attention.
            ("void flashinfer::norm::FusedAddRMSNormKernel<8u, __nv_bfloat16>(...)", "norm"),
            ("void flashinfer::activation::act_and_mul_kernel<__nv_bfloat16, silu>(...)", "norm"),
            ("_fwd_kernel_stage1", "attention"),
            ("void fused_moe_kernel(...)", "moe"),
            ("void moe_align_block_size_kernel<int>(int*, int*)", "moe"),
            ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1", "gemm"),
            ("nvjet_tst_128x256_64x4_2x1_v_bz_coopB_TNT", "gemm"),
            ("ampere_sgemm_128x64_nn", "gemm"),
            ("aten::mm", "gemm"),
            ("void fbgemm_gpu::split_embedding_codegen_forward_unweighted_kernel<float>()", "memory"),
            ("Memcpy DtoH (Device -> Pageable)", "memory"),
            ("void at::native::(anonymous namespace)::CatArrayBatchedCopy<float, unsigned int, 4, 64, 64>()", "memory"),
            ("void store_kvcache_kernel<bf16>()", "memory"),
            ("void vllm::rms_norm_kernel<c10::BFloat16, 8>()", "norm"),
            ("void at::native::vectorized_elementwise_kernel<4, at::native::AUnaryFunctor<float> >()", "norm"),
            ("void silu_and_mul_kernel<bf16>()", "norm"),
            ("triton_poi_fused_add_0", "norm"),
            ("void cudnn::bn_bw_1C11_kernel_new<float, float, float2, 128, true, 1>(float)", "norm"),
            ("void cudnn::ops::nchwToNhwcKernel<float, float, float, false, true>()", "memory"),
            ("sm80_xmma_wgrad_implicit_gemm_indexed_tf32f32_tf32f32_f32_nhwckrsc_nhwc", "gemm"),
            ("cudnn_infer_ampere_scudnn_128x64_relu_xregs_large_nn_v1", "gemm"),
            ("void at::native::max_pool_backward_nchw<float, float>()", "norm"),
            ("void cub::DeviceRadixSortOnesweepKernel<int>()", "other"),
        ];
        for (name, want) in cases {
            assert_eq!(class(name), want, "{name}");
        }
        assert_eq!(c.names().last().map(String::as_str), Some("other"));
        assert_eq!(c.name(c.comm()), "comm");
    }

    #[test]
    fn other_share_by_hand() {
        // Ranks: 30 of 40 ns other; nothing at all; 10 of 20.
        let ns = vec![vec![10, 0, 30], vec![0, 0, 0], vec![5, 5, 10]];
        let (all, per) = other_share(&ns, 2);
        assert!((all - 100.0 * 40.0 / 60.0).abs() < 1e-9, "{all}");
        assert_eq!(per, vec![75.0, 0.0, 50.0]);
        assert_eq!(other_share(&[], 2), (0.0, vec![]));
    }

    #[test]
    fn rule_order_puts_names_with_other_classes_words_right() {
        let c = Classifier::default();
        let class = |n: &str| c.name(c.classify(n)).to_string();
        // Column order stays the documented one, whatever the rule order.
        let names: Vec<&str> = c.names().iter().map(String::as_str).collect();
        assert_eq!(
            names,
            [
                "comm",
                "attention",
                "moe",
                "gemm",
                "memory",
                "norm",
                "other"
            ]
        );
        for (name, want) in [
            // rotary before memory's "embedding" and FlashInfer's attention prefix
            (
                "void vllm::rotary_embedding_kernel<c10::BFloat16, true>()",
                "norm",
            ),
            ("batched_rotary_embedding", "norm"),
            // KV-cache writes carry "flash" / "mla" / "paged"
            ("reshape_and_cache_flash_kernel", "memory"),
            ("store_kvcache", "memory"),
            // quantization is not a GEMM; scaled_mm GEMMs are
            ("void scaled_fp8_quant_kernel<c10::BFloat16>()", "norm"),
            ("dynamic_per_token_scaled_fp8_quant", "norm"),
            (
                "void cutlass_scaled_mm_sm90<cutlass::float_e4m3_t>()",
                "gemm",
            ),
            ("fp8_blockwise_scaled_mm", "gemm"),
            ("fused_moe_kernel", "moe"),
            ("Cijk_Alik_Bljk_HHS_BH_UserArgs_MT128x128x64", "gemm"),
            // Inductor fusions are elementwise whatever ops they name
            ("triton_poi_fused_add_all_reduce_0", "norm"),
            ("triton_red_fused__to_copy_mean_pow_0", "norm"),
            // "convert" is not a convolution; fbgemm is not a GEMM
            ("void convert_fp8_kernel<float>()", "other"),
            ("_fwd_kernel_ep_scatter_2", "moe"),
            ("_fwd_kernel", "attention"),
        ] {
            assert_eq!(class(name), want, "{name}");
        }
    }

    #[test]
    fn toml_rules_come_first_and_may_add_classes() {
        let c = Classifier::from_toml(
            r#"
            [[rule]]
            class = "sampling"
            pattern = "top_k_top_p"
            [[rule]]
            class = "attention"
            pattern = "^my_kernel$"
            "#,
        )
        .unwrap();
        assert_eq!(
            c.name(c.classify("top_k_top_p_sampling_from_probs")),
            "sampling"
        );
        assert_eq!(c.name(c.classify("MY_KERNEL")), "attention");
        assert_eq!(c.name(c.classify("ncclKernel_AllGather")), "comm");
        let names: Vec<&str> = c.names().iter().map(String::as_str).collect();
        assert_eq!(
            names,
            [
                "comm",
                "attention",
                "moe",
                "gemm",
                "memory",
                "norm",
                "sampling",
                "other"
            ]
        );

        let only =
            Classifier::from_toml("builtin = false\n[[rule]]\nclass = \"x\"\npattern = \"a\"\n")
                .unwrap();
        assert_eq!(only.name(only.classify("ncclKernel")), "other");
        assert_eq!(only.name(only.classify("abc")), "x");

        let bad = Classifier::from_toml("[[rule]]\nclass = \"x\"\npattern = \"(\"\n")
            .err()
            .unwrap();
        assert!(format!("{bad:#}").contains("bad pattern"), "{bad:#}");
        assert!(Classifier::from_toml("[[rule]]\nclas = \"x\"\npattern = \"a\"\n").is_err());
        assert!(Classifier::from_toml("builtin = false\n").is_err());
    }
}
