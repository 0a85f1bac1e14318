// SPDX-License-Identifier: GPL-3.0-or-later
// The CPU backend: BLAS for matrix multiplies (each call single-threaded in the
// library), this rank's thread pool for everything else and for splitting
// large matmuls. Reductions are split over output elements, never over the
// summed axis, so results do not depend on the number of threads.
#pragma once

#include "core/thread_pool.h"
#include "ops/backend.h"

namespace shardscope {

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(const CpuBackendOptions& options);
  std::string name() const override;

  void gemm(Transpose trans_a, Transpose trans_b, int M, int N, int K, float alpha, const float* A, int lda,
            const float* B, int ldb, float beta, float* C, int ldc) override;
  void gemm_batched_strided(Transpose trans_a, Transpose trans_b, int M, int N, int K, float alpha, const float* A,
                            int lda, std::int64_t stride_a, const float* B, int ldb, std::int64_t stride_b, float beta,
                            float* C, int ldc, std::int64_t stride_c, int batch) override;
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
  void upload(void* dst, const void* host_src, std::int64_t bytes) override { copy(dst, host_src, bytes); }
  void download(void* host_dst, const void* src, std::int64_t bytes) override { copy(host_dst, src, bytes); }
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

 private:
  ThreadPool pool_;
};

// Single-threaded BLAS sgemm, row-major (cpu_gemm.cpp).
void blas_sgemm(Transpose trans_a, Transpose trans_b, int M, int N, int K, float alpha, const float* A, int lda,
                const float* B, int ldb, float beta, float* C, int ldc);
// The BLAS in use and its kernel ("OpenBLAS SkylakeX"), for logs and benchmarks.
std::string blas_name();

}  // namespace shardscope
