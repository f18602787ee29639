//! The kernels, memory copies and CPU calls the generator draws from: real names as CUDA, cuBLAS,
//! FlashInfer, FlashAttention, Triton and NCCL print them in Kineto traces, with plausible
//! launch shapes (the `args` Kineto writes for a kernel).

/// What a GPU activity is, for the planted slowdown (`--slow-class`) and for the checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Class {
    Gemm,
    Attention,
    Norm,
    Elementwise,
    Moe,
    Comm,
    Memory,
}

impl Class {
    pub const ALL: [Class; 7] = [
        Class::Gemm,
        Class::Attention,
        Class::Norm,
        Class::Elementwise,
        Class::Moe,
        Class::Comm,
        Class::Memory,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Class::Gemm => "gemm",
            Class::Attention => "attention",
            Class::Norm => "norm",
            Class::Elementwise => "elementwise",
            Class::Moe => "moe",
            Class::Comm => "comm",
            Class::Memory => "memory",
        }
    }

    pub fn parse(s: &str) -> Option<Class> {
        Class::ALL
            .into_iter()
            .find(|c| c.name().eq_ignore_ascii_case(s))
    }

    /// Compute kernels: what a slow GPU makes slower when no class is named.
    pub fn is_compute(self) -> bool {
        !matches!(self, Class::Comm | Class::Memory)
    }
}

/// One kernel: its name and the launch figures Kineto copies into `args`.
#[derive(Debug)]
pub(crate) struct KSpec {
    pub(crate) name: &'static str,
    pub(crate) class: Class,
    pub(crate) regs: u32,
    pub(crate) smem: u32,
    pub(crate) grid: [u32; 3],
    pub(crate) block: [u32; 3],
    /// Kineto writes these two with six decimals.
    pub(crate) blocks_per_sm: &'static str,
    pub(crate) warps_per_sm: &'static str,
    pub(crate) occupancy: u32,
}

macro_rules! kspec {
    ($id:ident, $name:expr, $class:ident, $regs:expr, $smem:expr, $grid:expr, $block:expr, $bps:expr, $wps:expr, $occ:expr) => {
        pub(crate) static $id: KSpec = KSpec {
            name: $name,
            class: Class::$class,
            regs: $regs,
            smem: $smem,
            grid: $grid,
            block: $block,
            blocks_per_sm: $bps,
            warps_per_sm: $wps,
            occupancy: $occ,
        };
    };
}

kspec!(
    GEMM_QKV,
    "nvjet_tst_128x256_64x4_1x2_h_bz_coopB_TNT",
    Gemm,
    168,
    213120,
    [132, 1, 1],
    [384, 1, 1],
    "1.000000",
    "12.000000",
    18
);
kspec!(GEMM_OPROJ, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas", Gemm, 168, 197632, [64, 2, 1], [384, 1, 1], "0.969697", "11.636364", 18);
kspec!(GEMM_UP, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize2x1x1_execute_segment_k_off_kernel__5x_cublas", Gemm, 168, 221184, [112, 1, 1], [384, 1, 1], "0.848485", "10.181818", 18);
kspec!(
    GEMM_DOWN,
    "nvjet_tst_128x256_64x4_1x2_h_bz_coopB_TNT",
    Gemm,
    168,
    213120,
    [128, 1, 1],
    [384, 1, 1],
    "0.969697",
    "11.636364",
    18
);
kspec!(
    GEMM_LM_HEAD,
    "nvjet_tst_192x192_64x4_2x1_v_bz_coopA_TNN",
    Gemm,
    168,
    226304,
    [132, 1, 1],
    [384, 1, 1],
    "1.000000",
    "12.000000",
    18
);
kspec!(GEMM_ROUTER, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize64x64x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas", Gemm, 90, 82944, [16, 1, 1], [128, 1, 1], "0.121212", "0.484848", 3);

kspec!(ATTN_DECODE_FI, "void flashinfer::BatchDecodeWithPagedKVCacheKernel<(flashinfer::PosEncodingMode)0, 2u, 4u, 8u, 16u, 1u, 8u, flashinfer::DefaultAttention<false, false, false, false>, flashinfer::BatchDecodeParams<__nv_bfloat16, __nv_bfloat16, __nv_bfloat16, int> >(flashinfer::BatchDecodeParams<__nv_bfloat16, __nv_bfloat16, __nv_bfloat16, int>)", Attention, 64, 16384, [64, 8, 1], [16, 8, 1], "3.878788", "15.515152", 24);
kspec!(ATTN_PREFILL_FI, "void flashinfer::BatchPrefillWithPagedKVCacheKernel<flashinfer::KernelTraits<(flashinfer::MaskMode)1, 128u, 1u, 4u, 8u, 8u, 1u, 4u, (flashinfer::PosEncodingMode)0, __nv_bfloat16, __nv_bfloat16, __nv_bfloat16, float, int, flashinfer::DefaultAttention<false, false, false, false> >, flashinfer::PagedParams<__nv_bfloat16, __nv_bfloat16, __nv_bfloat16, int> >(flashinfer::PagedParams<__nv_bfloat16, __nv_bfloat16, __nv_bfloat16, int>)", Attention, 128, 98304, [96, 1, 8], [32, 1, 4], "5.818182", "23.272727", 36);
kspec!(ATTN_DECODE_FA, "void flash::flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, false, false, cutlass::bfloat16_t, Flash_kernel_traits<128, 64, 128, 4, cutlass::bfloat16_t> >, true, false, false, false, true, true, false, false>(flash::Flash_fwd_params)", Attention, 255, 49152, [1, 16, 32], [128, 1, 1], "3.878788", "15.515152", 24);
kspec!(ATTN_PREFILL_FA, "void flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::bfloat16_t, Flash_kernel_traits<128, 128, 64, 4, cutlass::bfloat16_t> >, false, true, false, false, true, true, false, false>(flash::Flash_fwd_params)", Attention, 255, 49152, [8, 4, 32], [128, 1, 1], "7.757576", "31.030303", 25);

kspec!(NORM_RMS, "void flashinfer::norm::RMSNormKernel<8u, __nv_bfloat16>(__nv_bfloat16*, __nv_bfloat16*, __nv_bfloat16*, unsigned int, unsigned int, unsigned int, float, float)", Norm, 32, 32, [8, 1, 1], [32, 16, 1], "0.060606", "0.969697", 2);
kspec!(NORM_ADD_RMS, "void flashinfer::norm::FusedAddRMSNormKernel<8u, __nv_bfloat16>(__nv_bfloat16*, __nv_bfloat16*, __nv_bfloat16*, unsigned int, unsigned int, unsigned int, float, float)", Norm, 40, 16416, [8, 1, 1], [32, 16, 1], "0.060606", "0.969697", 2);
kspec!(NORM_VLLM, "void vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>(c10::BFloat16*, c10::BFloat16*, c10::BFloat16 const*, float, int, int)", Norm, 28, 32, [8, 1, 1], [1024, 1, 1], "0.060606", "1.939394", 3);

kspec!(ELEM_ROTARY, "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3ul>)", Elementwise, 20, 0, [256, 1, 1], [128, 1, 1], "1.939394", "7.757576", 12);
kspec!(ELEM_ACT_FI, "void flashinfer::activation::act_and_mul_kernel<__nv_bfloat16, &silu<float> >(__nv_bfloat16*, __nv_bfloat16 const*, int)", Elementwise, 26, 0, [8, 1, 1], [1024, 1, 1], "0.060606", "1.939394", 3);
kspec!(ELEM_ACT_VLLM, "void vllm::act_and_mul_kernel<c10::BFloat16, &(c10::BFloat16 vllm::silu_kernel<c10::BFloat16>(c10::BFloat16 const&)), true>(c10::BFloat16*, c10::BFloat16 const*, int)", Elementwise, 24, 0, [8, 1, 1], [1024, 1, 1], "0.060606", "1.939394", 3);
kspec!(ELEM_EMBED, "void at::native::(anonymous namespace)::indexSelectLargeIndex<c10::BFloat16, long, unsigned int, 2, 2, -2, true>(at::cuda::detail::TensorInfo<c10::BFloat16, unsigned int>, at::cuda::detail::TensorInfo<c10::BFloat16, unsigned int>, at::cuda::detail::TensorInfo<long, unsigned int>, int, int, unsigned int, unsigned int, long)", Elementwise, 30, 0, [264, 1, 1], [128, 1, 1], "2.000000", "8.000000", 12);
kspec!(ELEM_ARGMAX, "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::ArgMaxOps<float>, unsigned int, long, 4> >(at::native::ReduceOp<float, at::native::ArgMaxOps<float>, unsigned int, long, 4>)", Elementwise, 32, 16, [8, 1, 1], [32, 16, 1], "0.060606", "0.969697", 2);

kspec!(MOE_TOPK, "void vllm::moe::topkGatingSoftmax<8, 64, 4, 16, int>(float const*, bool const*, float*, int, int*, int*, int, int, int)", Moe, 40, 0, [1, 1, 1], [32, 4, 1], "0.007576", "0.030303", 0);
kspec!(MOE_ALIGN, "void moe_align_block_size_kernel<int>(int const*, int*, int*, int*, int, int, int, unsigned long, int*)", Moe, 32, 1056, [1, 1, 1], [1024, 1, 1], "0.007576", "0.242424", 1);
kspec!(
    MOE_FUSED,
    "fused_moe_kernel",
    Moe,
    128,
    98304,
    [264, 1, 1],
    [256, 1, 1],
    "2.000000",
    "16.000000",
    25
);

kspec!(EP_DISPATCH, "void deep_ep::intranode::dispatch<8, 768, 8192>(int4*, float*, int*, long*, float*, int*, int*, int4 const*, float const*, long const*, float const*, bool const*, int const*, int, int, int, int, int, int, int, int, void**, int, int, int)", Comm, 128, 0, [24, 1, 1], [768, 1, 1], "1.000000", "24.000000", 18);
kspec!(EP_COMBINE, "void deep_ep::intranode::combine<__nv_bfloat16, 8, 768, 4096>(__nv_bfloat16*, float*, __nv_bfloat16 const*, float const*, int const*, int const*, int const*, int const*, int, int, int, int, void**, int, int, int)", Comm, 128, 0, [24, 1, 1], [768, 1, 1], "1.000000", "24.000000", 18);

kspec!(
    NCCL_AR_LL,
    "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevComm*, unsigned long, ncclWork*)",
    Comm,
    96,
    70768,
    [2, 1, 1],
    [512, 1, 1],
    "0.015152",
    "0.242424",
    0
);
kspec!(
    NCCL_AR_LL128,
    "ncclDevKernel_AllReduce_Sum_bf16_RING_LL128(ncclDevComm*, unsigned long, ncclWork*)",
    Comm,
    96,
    70768,
    [8, 1, 1],
    [640, 1, 1],
    "0.060606",
    "1.212121",
    1
);
kspec!(
    NCCL_AG,
    "ncclDevKernel_AllGather_RING_LL(ncclDevComm*, unsigned long, ncclWork*)",
    Comm,
    96,
    70768,
    [2, 1, 1],
    [512, 1, 1],
    "0.015152",
    "0.242424",
    0
);
kspec!(
    NCCL_SENDRECV,
    "ncclDevKernel_SendRecv(ncclDevComm*, unsigned long, ncclWork*)",
    Comm,
    96,
    70768,
    [1, 1, 1],
    [640, 1, 1],
    "0.007576",
    "0.151515",
    0
);

/// A CUDA call on the CPU thread: name, Kineto category and callback id.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Call {
    pub(crate) name: &'static str,
    pub(crate) cat: &'static str,
    pub(crate) cbid: u32,
}

pub(crate) const LAUNCH: Call = Call {
    name: "cudaLaunchKernel",
    cat: "cuda_runtime",
    cbid: 211,
};
pub(crate) const LAUNCH_EXC: Call = Call {
    name: "cudaLaunchKernelExC",
    cat: "cuda_runtime",
    cbid: 430,
};
/// Triton kernels are launched through the driver API.
pub(crate) const LAUNCH_DRIVER: Call = Call {
    name: "cuLaunchKernelEx",
    cat: "cuda_driver",
    cbid: 652,
};
pub(crate) const MEMCPY: Call = Call {
    name: "cudaMemcpyAsync",
    cat: "cuda_runtime",
    cbid: 41,
};
pub(crate) const MEMSET: Call = Call {
    name: "cudaMemsetAsync",
    cat: "cuda_runtime",
    cbid: 51,
};
pub(crate) const SYNC: Call = Call {
    name: "cudaStreamSynchronize",
    cat: "cuda_runtime",
    cbid: 131,
};

/// The side stream's collective done: recorded after its launch (`--overlap-comm`).
pub(crate) const EVENT_RECORD: Call = Call {
    name: "cudaEventRecord",
    cat: "cuda_runtime",
    cbid: 135,
};
/// The compute stream waits for a recorded event.
pub(crate) const STREAM_WAIT_EVENT: Call = Call {
    name: "cudaStreamWaitEvent",
    cat: "cuda_runtime",
    cbid: 147,
};
pub(crate) const MEMCPY_DTOD: &str = "Memcpy DtoD (Device -> Device)";

pub(crate) const MEMCPY_HTOD: &str = "Memcpy HtoD (Pageable -> Device)";
pub(crate) const MEMCPY_DTOH: &str = "Memcpy DtoH (Device -> Pageable)";
pub(crate) const MEMSET_DEVICE: &str = "Memset (Device)";

/// The H100 entry of `deviceProperties`, in Kineto's layout; `{id}` is replaced.
pub(crate) const DEVICE_PROPERTIES: &str = r#"    {
      "id": {id}, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 84929347584,
      "computeMajor": 9, "computeMinor": 0,
      "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048,
      "regsPerBlock": 65536, "warpSize": 32,
      "sharedMemPerBlock": 49152, "numSms": 132
    , "regsPerMultiprocessor": 65536, "sharedMemPerBlockOptin": 232448, "sharedMemPerMultiprocessor": 233472
    }"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn class_names_parse_back() {
        for c in Class::ALL {
            assert_eq!(Class::parse(c.name()), Some(c));
        }
        assert_eq!(Class::parse("GEMM"), Some(Class::Gemm));
        assert_eq!(Class::parse("tensor"), None);
        assert!(Class::Gemm.is_compute() && !Class::Comm.is_compute());
    }
}
