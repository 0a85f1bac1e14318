// SPDX-License-Identifier: GPL-3.0-or-later
// The CUDA backend: the ops of backend.h on DEVICE pointers (every float* and
// int32* argument is device memory of this backend's GPU). Matmuls go to cuBLAS
// (TF32 off unless asked, so fp32 matches the CPU backend tightly); every other
// op is a kernel over the same ops/math.h functions the CPU backend runs. Only
// the launch and reduction strategy are GPU-specific, and every reduction runs
// in a fixed order, so results do not change from run to run.
//
// This header includes no CUDA header (the stream and cuBLAS handle are opaque
// pointers), so plain C++ code can hold a CudaBackend. It is built into the
// plugin libshardscope_cuda.so; the engine reaches it through ops/device.h.
//
// Ordering: all work of one backend runs on its own stream, created blocking,
// so plain cudaMemcpy on the legacy default stream (the plugin's copy helpers)
// waits for it. Ops that return a value to the host (cross_entropy_forward,
// sum_of_squares, first_non_finite) synchronize the stream.
#pragma once

#include <cstdint>
#include <string>

#include "core/dtype.h"
#include "ops/backend.h"

struct CUstream_st;    // cudaStream_t is CUstream_st*
struct cublasContext;  // cublasHandle_t is cublasContext*

namespace shardscope {

// How the fp32 gemms (gemm, gemm_batched_strided, the linear layers and
// attention) multiply: in full fp32, as PyTorch does by default; with TF32
// tensor cores; or with their operands rounded to bf16 / fp16 for the tensor
// cores and fp32 accumulation, which is what torch.autocast does to a matmul
// in a mixed-precision run (cuBLAS's CUBLAS_COMPUTE_32F_FAST_16BF / _16F).
enum class GemmMath { fp32 = 0, tf32 = 1, bf16 = 2, fp16 = 3 };

struct CudaBackendOptions {
  int device = 0;
  GemmMath math = GemmMath::fp32;
};

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(const CudaBackendOptions& options);
  ~CudaBackend() override;
  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;

  std::string name() const override;  // "cuda:0 (NVIDIA H200)"
  int device() const { return device_; }
  CUstream_st* stream() const { return stream_; }
  void synchronize() override;  // waits for every op queued on this backend's stream
  bool host_memory() const override { return false; }

  void gemm(Transpose trans_a, Transpose trans_b, int M, int N, int K, float alpha, const float* A, int lda,
            const float* B, int ldb, float beta, float* C, int ldc) override;
  void gemm_batched_strided(Transpose trans_a, Transpose trans_b, int M, int N, int K, float alpha, const float* A,
                            int lda, std::int64_t stride_a, const float* B, int ldb, std::int64_t stride_b, float beta,
                            float* C, int ldc, std::int64_t stride_c, int batch) override;
  // The mixed-precision matmul: A, B and C stored in `dtype` (f16 or bf16, raw
  // 16-bit patterns), products summed in fp32 (cublasGemmEx, CUBLAS_COMPUTE_32F).
  // Same row-major semantics as gemm.
  void gemm_16bit(DType dtype, Transpose trans_a, Transpose trans_b, int M, int N, int K, float alpha,
                  const std::uint16_t* A, int lda, const std::uint16_t* B, int ldb, float beta, std::uint16_t* C,
                  int ldc);
  void linear_forward(float* out, const float* in, const float* weight, const float* bias, int rows, int in_f,
                      int out_f) override;
  void linear_backward(float* d_in, float* d_weight, float* d_bias, const float* d_out, const float* in,
                       const float* weight, int rows, int in_f, int out_f, bool accumulate) override;
  void embedding_forward(float* out, const std::int32_t* ids, const std::int32_t* type_ids, const float* tokens,
                         const float* positions, const float* types, int B, int T, int C) override;
  void embedding_backward(float* d_tokens, float* d_positions, float* d_types, const float* d_out,
                          const std::int32_t* ids, const std::int32_t* type_ids, int B, int T, int C) override;
  void layernorm_forward(float* out, float* mean, float* rstd, const float* in, const float* weight, const float* bias,
                         int rows, int C, float eps) override;
  void layernorm_backward(float* d_in, float* d_weight, float* d_bias, const float* d_out, const float* in,
                          const float* weight, const float* mean, const float* rstd, int rows, int C,
                          bool accumulate) override;
  void gelu_forward(float* out, const float* in, std::int64_t n, math::GeluKind kind) override;
  void gelu_backward(float* d_in, const float* d_out, const float* in, std::int64_t n, math::GeluKind kind) override;
  void attention_forward(float* out, float* probs, const float* qkv, int B, int T, int C, int H,
                         const AttentionMask& mask) override;
  // Fused (cuda_flash_attention.cu) in bf16/fp16 math when the head dimension
  // allows (cuda_attention_kernel); materialized otherwise.
  AttentionKernel attention_kernel(int head_dim) const override;
  void attention_backward(float* d_qkv, float* scratch, const float* d_out, const float* qkv, const float* out,
                          const float* probs, int B, int T, int C, int H, const AttentionMask& mask) override;
  float cross_entropy_forward(float* losses, const float* logits, const std::int32_t* targets, int rows,
                              int V) override;
  void cross_entropy_backward(float* d_logits, const float* logits, const std::int32_t* targets, int rows, int V,
                              float dloss_per_row) override;
  void vocab_embedding_forward(float* out, const std::int32_t* ids, const std::int32_t* type_ids, const float* tokens,
                               const float* positions, const float* types, int B, int T, int C, int first,
                               int owned) override;
  void vocab_embedding_backward(float* d_tokens, float* d_positions, float* d_types, const float* d_out,
                                const std::int32_t* ids, const std::int32_t* type_ids, int B, int T, int C, int first,
                                int owned) override;
  void row_max(float* maxima, const float* logits, int rows, int V) override;
  void vocab_cross_entropy_sums(float* sums, float* row_max, const float* maxima, int t, const float* logits,
                                const std::int32_t* targets, int rows, int V, int first) override;
  float vocab_cross_entropy_losses(float* losses, float* log_sum_exp, const float* sums, const float* row_max,
                                   const std::int32_t* targets, int rows) override;
  void vocab_cross_entropy_backward(float* d_logits, const float* logits, const float* log_sum_exp,
                                    const std::int32_t* targets, int rows, int V, int first,
                                    float dloss_per_row) override;
  void ring_attention_forward(float* out, float* lse, const float* qkv, const float* kv,
                              const RingAttentionBlock& block) override;
  void ring_attention_backward(float* d_qkv, float* d_kv, const float* d_out, const float* qkv, const float* kv,
                               const float* lse, const float* row_dot, bool first_block,
                               const RingAttentionBlock& block) override;
  void attention_row_dot(float* row_dot, const float* d_out, const float* out, int B, int T, int C, int H) override;
  void copy_columns(float* dst, int dst_stride, const float* src, int src_stride, std::int64_t rows,
                    int width) override;
  void add(float* out, const float* a, const float* b, std::int64_t n) override;
  void add_bias_rows(float* x, const float* bias, int rows, int C) override;
  void scale(float* x, float factor, std::int64_t n) override;
  void fill(float* x, float value, std::int64_t n) override;
  void tanh_forward(float* out, const float* in, std::int64_t n) override;
  double sum_of_squares(const float* x, std::int64_t n) override;
  void copy(void* dst, const void* src, std::int64_t bytes) override;
  void upload(void* dst, const void* host_src, std::int64_t bytes) override;
  void download(void* host_dst, const void* src, std::int64_t bytes) override;
  void zero(void* dst, std::int64_t bytes) override;
  void widen(DType dtype, const std::uint16_t* in, float* out, std::int64_t n) override;
  void narrow(DType dtype, const float* in, std::uint16_t* out, std::int64_t n) override;
  void add_16(DType dtype, std::uint16_t* dst, const std::uint16_t* src, std::int64_t n) override;
  void accumulate_16(DType dtype, std::uint16_t* dst, const float* src, std::int64_t n) override;
  std::int64_t first_non_finite_16(DType dtype, const std::uint16_t* x, std::int64_t n) override;
  double sum_of_squares_16(DType dtype, const std::uint16_t* x, std::int64_t n) override;
  void divide(DType dtype, void* x, std::int64_t n, float divisor) override;
  void adamw(float* params, const float* grads, float* m, float* v, std::int64_t n,
             const math::AdamWStep& step) override;

  // Device scratch of at least `bytes`, owned by the backend, valid until the
  // next call that asks for more (grown, never shrunk). Not in the memory ledger.
  void* workspace(std::size_t bytes, const char* op);

 private:
  void make_current(const char* op) const;  // cudaSetDevice(device_) for the calling thread
  // Adds the kReduceBlocks double partials into *total and returns it (synchronizes).
  double sum_partials_to_host(const double* partials, double* total, const char* op);

  int device_ = 0;
  GemmMath math_ = GemmMath::fp32;
  std::string device_name_;
  CUstream_st* stream_ = nullptr;
  cublasContext* cublas_ = nullptr;
  void* workspace_ = nullptr;
  std::size_t workspace_bytes_ = 0;
  void* result_ = nullptr;  // small device buffer for reductions returned to the host
};

// ---- mixed-precision helpers on device memory, on the backend's stream ---------------
// Same conversions as core/half.h (round to nearest even, NaN kept quiet), bit
// for bit: the kernels call the same functions. n <= 0 does nothing.
void cuda_f32_to_f16(CudaBackend& backend, const float* in, std::uint16_t* out, std::int64_t n);
void cuda_f16_to_f32(CudaBackend& backend, const std::uint16_t* in, float* out, std::int64_t n);
void cuda_f32_to_bf16(CudaBackend& backend, const float* in, std::uint16_t* out, std::int64_t n);
void cuda_bf16_to_f32(CudaBackend& backend, const std::uint16_t* in, float* out, std::int64_t n);
// The index of the first inf or NaN, or -1 when all n are finite (synchronizes).
std::int64_t cuda_first_non_finite(CudaBackend& backend, const float* values, std::int64_t n);
std::int64_t cuda_first_non_finite_f16(CudaBackend& backend, const std::uint16_t* values, std::int64_t n);
std::int64_t cuda_first_non_finite_bf16(CudaBackend& backend, const std::uint16_t* values, std::int64_t n);

}  // namespace shardscope
