//! The kernel-class table test: real kernel names from NVIDIA and AMD traces (the fixtures in
//! ../shared/fixtures/hta and public profiles, each group says where it came from) and the
//! class each must get from the built-in rules of [`super::BUILTIN`].
//!
//! Some names from profile tables are cut where the table cut them; the classes are decided by
//! the start of a name, so a cut name classifies as the whole one does. The `find_string` ids
//! are those of the public GitHub files the names were copied from.

use super::Classifier;

/// (kernel name, class)
const CASES: &[(&str, &str)] = &[
    // ../shared/fixtures/hta/rocm-mi250.json.gz: a real PyTorch trace from an AMD MI250 (ROCm), HTA test data
    ("Cijk_Alik_Bljk_SB_Bias_AS_SAV_UserArgs_MT64x16x32_MI16x16x1_SN_LDSB0_AFC1_AFEM1_AFEM1_ASEM1_CLR1_CADS0_EPS0_GRVWA2_GRVWB2_GSUAMB_ISA90a_IU1_K1_LBSPPA128_LBSPPB128_LBSPPM0_LPA8_LPB8_LPM0_LRVW4_LWPMn1_M", "gemm"),
    ("Cijk_Ailk_Bjlk_SB_Bias_AS_SAV_UserArgs_MT64x16x16_MI16x16x1_SN_LDSB0_AFC1_AFEM1_AFEM1_ASEM1_CLR1_CADS0_EPS0_GRVWA1_GRVWB1_GSUAMB_ISA90a_IU1_K1_LBSPPA0_LBSPPB0_LBSPPM0_LPA0_LPB0_LPM0_LRVW1_LWPMn1_MIAV0", "gemm"),
    ("void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl_nocast<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::operator()(", "memory"),
    ("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps<float, float, float, float>, unsigned int, float, 4> >(at::native::ReduceOp<float, at::native::MeanOps<float, float, float, float>, unsigned int, float, 4>)", "norm"),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, at::detail::Array<char*, 1> >(int, at::native::FillFunctor<float>, at::detail::Array<char*, 1>)", "norm"),
    // ../shared/fixtures/hta/triton-example.json.gz (HTA test data)
    ("triton_poi_fused_add_cos_sin_0", "norm"),
    // ../shared/fixtures/hta/nccl-a100-rank-0.json.gz: NVIDIA A100 training trace (HTA test data)
    ("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)", "comm"),
    ("void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_256x64_16x4_nn_align4>(cutlass_80_tensorop_s1688gemm_256x64_16x4_nn_align4::Params)", "gemm"),
    ("_ZN19cutlass_cudnn_train6KernelINS_4conv6kernel23ImplicitGemmConvolutionINS1_11threadblock22ImplicitGemmMultistageINS_4gemm9GemmShapeILi128ELi128ELi32EEENS4_52C", "gemm"),
    ("sm80_xmma_fprop_implicit_gemm_indexed_tf32f32_tf32f32_f32_nhwckrsc_nchw_tilesize128x128x16_stage4_warpsize2x2x1_g1_tensor16x8x8_execute_kernel_cudnn_infer", "gemm"),
    ("void cudnn::bn_fw_tr_1C11_kernel_NCHW<float, float, int, 128, true, 1, true>(cudnnTensorStruct, float const*, cudnnTensorStruct, float*, float const*, float con", "norm"),
    // ../shared/fixtures/hta/sampled-rank-0.json.gz (HTA test data, A100 recommender training)
    ("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)", "comm"),
    ("void permute_pooled_embs_kernel<float>(float const*, long const*, long const*, long const*, float*, long, long, long)", "memory"),
    ("ampere_sgemm_128x64_nn", "gemm"),
    // ../shared/fixtures/hta/alexnet-single-gpu.json.gz (HTA test data)
    ("void fft2d_r2c_32x32<float, false, 5u, true>(float2*, float const*, int, int, int, int, int, int, int, int, int, cudnn::reduced_divisor, bool, int2, int, int)", "gemm"),
    // SGLang
    ("ampere_gcgemm_64x64_nt", "gemm"),
    // SGLang DeepSeek-V3 H800 prefill/decode kernel lists of a public trace-analysis script (GitHub code, find_string "deep_ep::internode::", id 41157624835)
    ("void deep_ep::internode::notify_dispatch<false, 4>(int const*, int*, int, int const*, int*, int const*, int*, int, bool const*, int, int, int, int, int, int, int, int*, int*, int*, int*, void*, void**, int**, int, int, int)", "comm"),
    ("void deep_ep::internode::dispatch<false, 4, false, 7, 4>(int4*, float*, long*, float*, deep_ep::internode::SourceMeta*, int4 const*, float const*, long const*, float const*, int*, int*, int*, int*, int const*)", "comm"),
    ("void deep_ep::internode::combine<false, 4, __nv_bfloat16, 16, 4, 4, 16, 24>(int4*, float*, bool const*, int4 const*, float const*, int const*, int const*, deep_ep::internode::SourceMeta const*)", "comm"),
    ("void deep_ep::internode_ll::dispatch<true, 3, 10, 7168>(void*, float*, int*, long*, int*, void*, int*, void*, void const*, long const*, int*, int*, int*, int, int, int, int, int, int, int, int)", "comm"),
    ("void deep_ep::internode_ll::combine<3, 10, 7168, 9>(void*, void*, int*, void*, void const*, long const*, float const*, int const*, long const*, int*, int, int*, int, int, int, int, int, int, int, int, bool)", "comm"),
    ("void dpsk::ep::internode::dispatch_ll<true, 3, 10, 7168>(void*, float*, int*, long*, int*, int*, void*, int*, void*, void const*, long const*, int*, int*, int*, int, int)", "comm"),
    ("void deep_gemm::fp8_gemm_kernel<7168u, 16384u, 256u, 128u, 128u, 0u, 128u, 1u, 3u, 128u, 128u, 2u, true, (deep_gemm::GemmType)0>(__nv_bfloat16*, float*, int*, unsigned int, CUtensorMap_st, CUtensorMap_st, CUtensorMap_st, CUtensorMap_st)", "gemm"),
    ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas", "gemm"),
    ("void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_128x64_64x3_tn_align8>(cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_128x64_64x3_tn_align8::Params)", "gemm"),
    ("void flash::flash_fwd_splitkv_mla_kernel<Flash_fwd_kernel_traits_mla<576, 64, 64, 8, cutlass::bfloat16_t, 512, true, 0, cutlass::bfloat16_t, cutlass::bfloat16_t>, true, flash::SharedStorageMLA<Flash_fwd_kernel_traits_mla<576, 64, 64, 8, cutlass::bfloat16_t, 512> > >(Flash_fwd_mla_params)", "attention"),
    ("void flash::flash_fwd_splitkv_mla_combine_kernel<cutlass::bfloat16_t, float, long, 512, 64>(Flash_fwd_mla_params)", "attention"),
    ("flash::prepare_varlen_num_blocks_kernel(int, int, int, int const*, int const*, int const*, int const*, int const*, int const*, int, int, int, int, int, cutlass::FastDivmod, cutlass::FastDivmod, int*, int*, bool)", "attention"),
    ("void cutlass::device_kernel<flash::enable_sm90_or_later<flash::FlashAttnFwdSm90<flash::CollectiveMainloopFwdSm90<2, cute::tuple<cute::C<1>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<128>, cute::C<128>, cute::C<192> >, 128, cutlass::bfloat16_t, float, cutlass::arch::Sm90> > > >(...)", "attention"),
    ("_fwd_kernel_ep_scatter_2", "moe"),
    ("void flashinfer::activation::act_and_mul_kernel<__nv_bfloat16, &(silu(float const&))>(__nv_bfloat16*, __nv_bfloat16 const*, int)", "norm"),
    ("void per_token_group_quant_8bit_kernel<__nv_bfloat16, c10::Float8_e4m3fn, false>(__nv_bfloat16 const*, void*, float*, int, int, int, float, float, float, int, int)", "norm"),
    ("_silu_and_mul_post_quant_kernel", "norm"),
    ("void at::native::index_elementwise_kernel<128, 4, at::native::gpu_index_kernel<at::native::index_put_kernel_impl<at::native::OpaqueType<2> >(at::TensorIterator&, c10::ArrayRef<long>, c10::ArrayRef<long>)::{lambda(char*, char const*, long)#1}>(...)", "memory"),
    // vLLM
    ("void at::native::(anonymous namespace)::CatArrayBatchedCopy<at::native::(anonymous namespace)::OpaqueType<2u>, unsigned int, 3, 64, 64>(at::native::(anonymous namespace)::OpaqueType<2u>*, at::native::(anonymous namespace)::CatArrInputTensorMetadata<at::native::(anonymous namespace)::OpaqueType<2u>, unsigned int, 64, 64>, at::native::(anonymous namespace)::TensorSizeStride<unsigned int, 4u>, int, unsigned int)", "memory"),
    // vLLM 0.28 on A100/H100: a public benchmark's kernel-bucket self-test (GitHub code, find_string "vllm::topk_softmax", id 60323729625)
    ("void flash::flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::bfloat16_t>, false, true, false, false, true, false>(flash::Flash_fwd_params)", "attention"),
    ("void flash::flash_fwd_splitkv_combine_kernel<Flash_fwd_kernel_traits<128, 64, 128, 8>, 4, false>(flash::Flash_fwd_params)", "attention"),
    ("void flash::flash_fwd_kernel<Flash_fwd_kernel_traits<192, 128, 64, 8, false, false, cutlass::bfloat16_t>, true, false>(flash::Flash_fwd_params)", "attention"),
    ("void cutlass::device_kernel<flash::FlashAttnFwdCombine<...>>(...)", "attention"),
    ("void pytorch_flash::flash_fwd_kernel<...>(...)", "attention"),
    ("void vllm::merge_attn_states_kernel<c10::BFloat16, 128>(...)", "attention"),
    ("_fwd_grouped_kernel_stage1", "attention"),
    ("_fwd_kernel_stage2", "attention"),
    ("void vllm::reshape_and_cache_flash_kernel<__nv_bfloat16, __nv_bfloat16, (vllm::Fp8KVCacheDataType)0>(...)", "memory"),
    ("void vllm::concat_and_cache_mla_kernel<__nv_bfloat16, __nv_bfloat16, (vllm::Fp8KVCacheDataType)0>(...)", "memory"),
    ("void vllm::gather_and_maybe_dequant_cache_page<__nv_bfloat16, __nv_bfloat16, 0>(...)", "memory"),
    ("fused_moe_kernel", "moe"),
    ("void vllm::moe_align_block_size_kernel<int>(...)", "moe"),
    ("void vllm::count_and_sort_expert_tokens_kernel<int>(...)", "moe"),
    ("void vllm::moe_align_block_size_small_batch_expert_kernel<int>(...)", "moe"),
    ("void vllm::moe_sum_kernel<c10::BFloat16, 4>(...)", "moe"),
    ("void vllm::topk_softmax_kernel<...>(...)", "moe"),
    ("void tensorrt_llm::kernels::topkGatingSoftmax<...>(...)", "moe"),
    ("ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_32x5_tn", "gemm"),
    ("sm80_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x32_stage3_warpsize2x2x1", "gemm"),
    ("nvjet_tst_192x192_64x4_2x1_v_bz_coopB_TNN", "gemm"),
    ("void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_bf16_128x128_32x5_tn_align8>(...)", "gemm"),
    ("void splitKreduce_kernel<...>(...)", "gemm"),
    ("void vllm::rms_norm_kernel<c10::BFloat16>(...)", "norm"),
    ("void vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>(...)", "norm"),
    ("void vllm::rotary_embedding_kernel<c10::BFloat16, true>(...)", "norm"),
    ("void vllm::act_and_mul_kernel<c10::BFloat16, &vllm::silu_kernel<c10::BFloat16>, (bool)1>(...)", "norm"),
    // cuBLAS
    ("triton_poi_fused_mul_sum_0", "norm"),
    // cuBLAS(Lt) names in public profiling notes (GitHub, find_string "nvjet_tst" / "sm90_xmma_gemm" / "gemv2T_kernel")
    // id 55657563492
    ("nvjet_tst_128x8_64x12_2x1_v_bz_splitK_TNT", "gemm"),
    // id 66216232677
    ("nvjet_tst_128x256_64x6_2x1_2cta_v_bz_TNT", "gemm"),
    // id 55695990959
    ("nvjet_sm90_hss_320x128_64x3_1x2_h_bz_coopB_NNT", "gemm"),
    // id 36822472071
    ("nvjet_hsh_96x128_64x7_2x1_v_bz_TNN", "gemm"),
    // id 63290699186
    ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_nn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas", "gemm"),
    // id 55484779958
    ("void gemv2T_kernel_val<int, int, __nv_bfloat16, __nv_bfloat16, __nv_bfloat16, __nv_bfloat16, 128, 16, 4, 4, false, false, cublasGemvParamsEx<int, cublasGemvTensorStridedBatched<__nv_bfloat16 const>, cublasGemvTensorStridedBatched<__nv_bfloat16 const>, cublasGemvTensorStridedBatched<__nv_bfloat16>, float> >", "gemm"),
    // id 56127520495
    ("gemvx::kernel", "gemm"),
    // id 69133397895
    ("cutlass_80_tensorop_i16832gemm_s8_128x64_128x3_tn_align16", "gemm"),
    // FlashInfer kernels in public SGLang profiles (GitHub, find_string "BatchDecodeWithPagedKVCacheKernel", "BatchQKApplyRotaryPosIdsCosSinCache", "PersistentVariableLengthMergeStatesKernel")
    ("flashinfer::BatchPrefillWithPagedKVCacheKernel", "attention"),
    ("BatchDecodeWithPagedKVCacheKernel", "attention"),
    ("PersistentVariableLengthMergeStatesKernel", "attention"),
    ("fmhaSm100fKernel_QkvE4m3OBfloat16H128PagedKvCausalP32VarSeqQ8Kv128PersistentSwapsAbForGen", "attention"),
    ("flashinfer::AppendPagedKVCacheKernel", "memory"),
    ("set_mla_kv_buffer_kernel", "memory"),
    ("void flashinfer::norm::RMSNormKernel<8u, __nv_bfloat", "norm"),
    // NCCL
    ("void flashinfer::BatchQKApplyRotaryPosIdsCosSinCacheHeadParallelismKernel<(bool)0, (unsigned int)128, (unsigned int)8, (unsigned int)16, __half, long>(T5 *, T5 *, T5 *, T5 *, float *, T6 *, unsigned int", "norm"),
    // NCCL / RCCL / MSCCL and custom all-reduce in public NVIDIA and AMD profiles (GitHub, find_string "ncclDevKernel_AllReduce", "ncclDevKernel_Generic", "mscclKernel_")
    // id 54687917967
    ("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "comm"),
    // id 52247334237
    ("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)", "comm"),
    // id 69358466290
    ("ncclDevKernel_Generic_1(ncclDevKernelArgsStorage<4096ul>)", "comm"),
    // id 35012735797
    ("ncclDevKernel_Generic(ncclDevComm*, channelMasks, ncclWork*)", "comm"),
    // id 35012735797
    ("mscclKernel_Sum_half_Simple_false(ncclDevComm*, mscclAlgo*, mscclWork*)", "comm"),
    // id 69003061782
    ("mscclKernel_Sum_hip_bfloat16_Simple_false", "comm"),
    // id 62455808136
    ("aiter::cross_device_reduce_2stage<bf16,8,false>", "comm"),
    // AMD
    ("void vllm::cross_device_reduce_1stage<__nv_bfloat16, 8>(RankData*, RankSignals, Signal*, __nv_bfloat16*, int, int)", "comm"),
    // SGLang DeepSeek-V4 decode on AMD MI355X: a public per-kernel cost table (GitHub markdown, find_string "ncclDevKernel_Generic", id 69358466290); names as printed there (some cut)
    ("aiter::fp8gemm_bf16_blockscale_BpreShuffle_32x128", "gemm"),
    ("Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT256x16x128_MI16x1", "gemm"),
    ("void ck::kernel_gemm_xdl_cshuffle_v3_multi_d_blockscale_b_preshu", "gemm"),
    ("hgemm_bf16_16x64x128x5_SPK8_W1x2x1_BLDS1_TN_AS1_0", "gemm"),
    ("_paged_decode_split_kernel", "attention"),
    ("_paged_decode_reduce_kernel", "attention"),
    ("mfma_moe1_silu_mul_afp8_wfp4_fp8_t32x128x256_pm1_fp8q_sort_async", "moe"),
    ("mfma_moe2_afp8_wfp4_bf16_cshuffle_t32x256x256_vscale_fix3_fp4opt", "moe"),
    ("moe_reduction_kernel_plain_bf16_topk6_md7168", "moe"),
    ("void aiter::opus_moe_sorting_entry<aiter::MoeSortingKernel<aiter", "moe"),
    ("_ZN5aiter30fused_mx_quant_moe_sort_kernelIDF16bDB8_Li256ELi32EEE", "moe"),
    ("void aiter::topk_softplus_kernel_opt<hip_bfloat16, hip_bfloat16,", "moe"),
    ("_ZN5aiter37dynamic_per_group_scaled_quant_kernelIDF16bDB8_Li32EL", "norm"),
    ("_fused_rms_fp8_group_quant_kernel", "norm"),
    ("_ZN5aiter24add_rmsnorm_quant_kernelIDF16bDF16bLi256ELi32ELb0ELb0", "norm"),
    // AMD
    ("void at::native::vectorized_elementwise_kernel<8, at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3> >", "norm"),
    // vLLM TP4 on AMD MI355X: a public kernel breakdown (GitHub markdown, find_string "Cijk_Alik_Bljk", id 51844397960); names as printed there (cut at 120 characters)
    ("void wvSplitK_hf_sml_<__hip_bfloat16, 64, 2, 16, 8, 2, 4>(int, int, int, int, int, int, __hip_bfloat16 const*, __hip_bfl", "gemm"),
    ("Custom_Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_NTD_SK3_UserArgs_MT256x256x64_MI16x16x1_shortname0_gfx950", "gemm"),
    ("_batched_gemm_a16wfp4_kernel_BLOCK_SIZE_M_4_BLOCK_SIZE_N_32_BLOCK_SIZE_K_128_GROUP_SIZE_M_1_NUM_KSPLIT_1_SPLITK_BLOCK_SI", "gemm"),
    ("aiter::mla_dec_stage1_bf16_a16w16_subQ16_mqa16", "attention"),
    ("_fwd_kernel_stage2_asm", "attention"),
    ("aiter::fmha_fwd_hd192_hd128_bf16_causal_group", "attention"),
    ("void ck::kernel_moe_mxgemm_2lds<ck::GridwiseMoeGemmMX_BPreshuffle<ck::tensor_layout::gemm::RowMajor, ck::tensor_layout::", "moe"),
    ("_moe_mxfp4_sort_kernel", "moe"),
    // TRT-LLM generated batched GEMMs of FlashInfer's trtllm-gen MoE, as public SGLang/vLLM B200
    // profiles print them (find_string "bmm_E4m3_E4m3"): the experts' GEMMs.
    ("bmm_E4m3_E4m3E4m3_Fp32_t128x16x128u2_s6_et64x16_m64x16x32_c1x1x1_rM_TN_transOut_noShfl_dsFp8_schPd4x2x2x3_bN_tma_tmaSf_rgTma_clmp_lbW2_dynB_sm100f", "moe"),
    ("bmm_Bfloat16_E4m3E4m3_Fp32_t128x64x128_s8_et128x64_m256x64x32_c2x1x1_rM_TN_transOut_schPd2", "moe"),
    ("void ck_tile::kentry<2, ck_tile::MoeSortingMultiPhaseKernel_P23<ck_tile::MoeSortingProblemMp<int, float, unsigned char,", "moe"),
    ("void ck_tile::kentry<1, ck_tile::Rmsnorm2dFwd<ck_tile::Rmsnorm2dFwdPipelineOnePass<ck_tile::Rmsnorm2dFwdPipelineProblem<", "norm"),
    ("triton_poi_fused_add_all_reduce_0", "norm"),
    ("triton_poi_fused_mul_silu_slice_0", "norm"),
    ("void aiter::dynamic_per_group_scaled_quant_kernel<std::bfloat16_t, ck_tile::fp4x2_t, 32>(ck_tile::fp4x2_t*, float*, std:", "norm"),
    ("void at::native::(anonymous namespace)::cunn_SoftMaxForwardGmem<4, float, float, float, at::native::(anonymous namespace", "norm"),
    ("void vllm::concat_and_cache_mla_kernel<__hip_bfloat16, __hip_bfloat16, (vllm::Fp8KVCacheDataType)0>(__hip_bfloat16 const", "memory"),
    // AMD
    ("void at::native::elementwise_kernel_manual_unroll<128, 8, at::native::gpu_kernel_impl_nocast<at::native::direct_copy_ker", "memory"),
    // vLLM TP8 on AMD MI355X (ROCm 7.2): a public per-rank trace comparison (GitHub markdown, find_string "mscclKernel_", id 69003061782)
    ("_ZN5aiter45mla_a8w8_qh32_qseqlen4_gqaratio32_lse_cprr_psE.kd", "attention"),
    ("void kn_mla_reduce_v1<MlaReduceKernelV1Traits<512, 128, 1>, float, std::bfloa", "attention"),
    ("void gqa_d192_v128_kernel<opus_gqa_d192_traits<32, 64, 8, true, true> >", "attention"),
    ("_ZN5aiter24bf16gemm_bf16_tn_256x256E.kd", "gemm"),
    ("void gemm_a16w16_persistent_4g_safe_kernel<opus_gemm_a16w16_persistent_traits", "gemm"),
    ("void splitk_reduce_kernel<16, 64, std::bfloat16_t, false, std::bfloat16_t, true>", "gemm"),
    ("void opus_moe::stage1_a8w4::pipeline_group_split::opus_moe_stage1_a8w4_kernel", "moe"),
    ("void opus_moe_stage2_a8w4_decode_kernel_gfx950<OpusMoeStage2A8W4DecodeShape<o", "moe"),
    ("__amd_rocclr_copyBuffer.kd", "memory"),
    ("__amd_rocclr_fillBufferAligned.kd", "memory"),
    ("void at::native::_scatter_gather_elementwise_kernel<256, 4, at::native::_cuda", "memory"),
    ("void vllm::rms_norm_kernel<c10::BFloat16, 8, 3, true>", "norm"),
    ("void vllm::rotary_embedding_kernel<c10::BFloat16, float, false>", "norm"),
    ("void at::native::vectorized_elementwise_kernel<8, at::native::sigmoid_kernel_", "norm"),
    // aiter
    ("mscclKernel_Sum_hip_bfloat16_LL_false", "comm"),
    // AITER asm / CK kernels named in public code and notes (GitHub, find_string "_ZN5aiter", "aiter::fmoe", "paged_attention_ll4mi", "ck_tile::FmhaFwdKernel")
    // id 16214195485
    ("_ZN5aiter42pa_bf16_pertokenFp8_gqa10_1tg_4w_mtp3_msk1E", "attention"),
    // id 52504557040
    ("_ZN5aiter32fmha_fwd_hd192_hd128_bf16_causalE", "attention"),
    // id 61518805811
    ("void paged_attention_ll4mi_QKV_mfma16_kernel", "attention"),
    // id 57310798219
    ("ck_tile::kentry<ck_tile::gfx950_t, 2, ck_tile::FmhaFwdKernel<ck_tile::BlockFmhaPipelineQRKSVSSageAttn<ck_tile::BlockFmhaPipelineProblem<", "attention"),
    // id 55041235975
    ("_ZN5aiter59fmoe_stage1_bf16_pertokenFp8_blockscale_g1u1_32x128_3tg_pf3E", "moe"),
    // id 68850990778
    ("aiter::fmoe_bf16_blockscaleFp8_g1u1_vs_silu_1tg_ps_32x256", "moe"),
    // id 65726833555
    ("_ZN5aiter50fmoe_bf16_pertokenMXfp4_g1u1_flat_novs_silu_16x128E", "moe"),
    // id 70132820185
    ("_ZN5aiter42fp8gemm_bf16_blockscale_BpreShuffle_32x128E", "gemm"),
    // id 1318791476
    ("_ZN5aiter33f4gemm_bf16_per1x32Fp4_tn_256x256E", "gemm"),
    // AMD MoRI / Primus-Turbo expert-parallel dispatch/combine (GitHub test, find_string "deep_ep::internode::", id 58159892382)
    // id 58159892382
    ("EpDispatchInterNodeV1Kernel_fp8_fnuz", "comm"),
    ("EpCombineIntraNodeKernel_bf16_nop2p", "comm"),
    ("void primus_turbo::deep_ep::intranode::notify_dispatch<8>(int const*)", "comm"),
    // vLLM on ROCm, a public profile table (GitHub, find_string "dynamic_per_token_scaled_fp8_quant_kernel", id 69407299769)
    // id 69407299769
    ("void vllm::dynamic_per_token_scaled_fp8_quant_kernel_strided<c10::BFloat16, c10::Float8_e4m3fn>(c10::Float8_e4m3fn*, float*, c10::BFloat16 const*, float const*, int, long, long) [clone .kd]", "norm"),
];

#[test]
fn real_kernel_names_from_every_vendor_get_their_class() {
    let c = Classifier::default();
    let wrong: Vec<String> = CASES
        .iter()
        .filter(|(name, want)| c.name(c.classify(name)) != *want)
        .map(|(name, want)| format!("{want} <- {}: {name}", c.name(c.classify(name))))
        .collect();
    assert!(
        wrong.is_empty(),
        "{} of {} wrong:\n{}",
        wrong.len(),
        CASES.len(),
        wrong.join("\n")
    );
    assert!(CASES.len() >= 80);
    // Every built-in class but `other` is exercised, on both vendors' names.
    for class in ["comm", "attention", "moe", "gemm", "memory", "norm"] {
        assert!(
            CASES.iter().filter(|(_, w)| *w == class).count() >= 8,
            "{class}"
        );
    }
}
