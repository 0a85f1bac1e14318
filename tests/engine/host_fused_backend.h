// SPDX-License-Identifier: GPL-3.0-or-later
// The CPU backend with fused attention: every op is the CPU backend's, except
// that attention runs the host twin of the CUDA backend's fused kernels
// (flash_reference.h, rounding off) and says so through attention_kernel. A
// model on it keeps (B, H, T) log-sum-exp rows instead of (B, H, T, T)
// probabilities and gives attention backward the forward's output and mask,
// as on a bf16/fp16 GPU: the CPU tests check that wiring without a GPU.
#pragma once

#include <memory>
#include <string>

#include "engine/flash_reference.h"
#include "ops/backend.h"

namespace shardscope::testing {

class HostFusedAttentionBackend final : public Backend {
 public:
  HostFusedAttentionBackend() : inner_(make_cpu_backend({2})) {}

  std::string name() const override { return "fused-attention " + inner_->name(); }
  AttentionKernel attention_kernel(int /*head_dim*/) const override { return AttentionKernel::fused; }
  // probs: (B, H, T) log-sum-exp
  void attention_forward(float* out, float* probs, const float* qkv, int B, int T, int C, int H,
                         const AttentionMask& mask) override {
    test::flash_forward_reference(test::FlashRounding::none, out, probs, qkv, B, T, C, H, mask);
  }
  // scratch is unused: the twin keeps D = rowsum(dO o O) in its own vector.
  void attention_backward(float* d_qkv, float* /*scratch*/, const float* d_out, const float* qkv, const float* out,
                          const float* probs, int B, int T, int C, int H, const AttentionMask& mask) override {
    test::flash_backward_reference(test::FlashRounding::none, d_qkv, d_out, qkv, out, probs, B, T, C, H, mask);
  }

  void gemm(Transpose ta, Transpose tb, int M, int N, int K, float alpha, const float* A, int lda, const float* B,
            int ldb, float beta, float* C, int ldc) override {
    inner_->gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  }
  void gemm_batched_strided(Transpose ta, Transpose tb, int M, int N, int K, float alpha, const float* A, int lda,
                            std::int64_t sa, const float* B, int ldb, std::int64_t sb, float beta, float* C, int ldc,
                            std::int64_t sc, int batch) override {
    inner_->gemm_batched_strided(ta, tb, M, N, K, alpha, A, lda, sa, B, ldb, sb, beta, C, ldc, sc, batch);
  }
  void linear_forward(float* out, const float* in, const float* weight, const float* bias, int rows, int in_f,
                      int out_f) override {
    inner_->linear_forward(out, in, weight, bias, rows, in_f, out_f);
  }
  void linear_backward(float* d_in, float* d_weight, float* d_bias, const float* d_out, const float* in,
                       const float* weight, int rows, int in_f, int out_f, bool accumulate) override {
    inner_->linear_backward(d_in, d_weight, d_bias, d_out, in, weight, rows, in_f, out_f, accumulate);
  }
  void embedding_forward(float* out, const std::int32_t* ids, const std::int32_t* type_ids, const float* tokens,
                         const float* positions, const float* types, int B, int T, int C) override {
    inner_->embedding_forward(out, ids, type_ids, tokens, positions, types, B, T, C);
  }
  void embedding_backward(float* d_tokens, float* d_positions, float* d_types, const float* d_out,
                          const std::int32_t* ids, const std::int32_t* type_ids, int B, int T, int C) override {
    inner_->embedding_backward(d_tokens, d_positions, d_types, d_out, ids, type_ids, B, T, C);
  }
  void layernorm_forward(float* out, float* mean, float* rstd, const float* in, const float* weight, const float* bias,
                         int rows, int C, float eps) override {
    inner_->layernorm_forward(out, mean, rstd, in, weight, bias, rows, C, eps);
  }
  void layernorm_backward(float* d_in, float* d_weight, float* d_bias, const float* d_out, const float* in,
                          const float* weight, const float* mean, const float* rstd, int rows, int C,
                          bool accumulate) override {
    inner_->layernorm_backward(d_in, d_weight, d_bias, d_out, in, weight, mean, rstd, rows, C, accumulate);
  }
  void gelu_forward(float* out, const float* in, std::int64_t n, math::GeluKind kind) override {
    inner_->gelu_forward(out, in, n, kind);
  }
  void gelu_backward(float* d_in, const float* d_out, const float* in, std::int64_t n, math::GeluKind kind) override {
    inner_->gelu_backward(d_in, d_out, in, n, kind);
  }
  float cross_entropy_forward(float* losses, const float* logits, const std::int32_t* targets, int rows,
                              int V) override {
    return inner_->cross_entropy_forward(losses, logits, targets, rows, V);
  }
  void cross_entropy_backward(float* d_logits, const float* logits, const std::int32_t* targets, int rows, int V,
                              float dloss_per_row) override {
    inner_->cross_entropy_backward(d_logits, logits, targets, rows, V, dloss_per_row);
  }
  void add(float* out, const float* a, const float* b, std::int64_t n) override { inner_->add(out, a, b, n); }
  void add_bias_rows(float* x, const float* bias, int rows, int C) override { inner_->add_bias_rows(x, bias, rows, C); }
  void scale(float* x, float factor, std::int64_t n) override { inner_->scale(x, factor, n); }
  void fill(float* x, float value, std::int64_t n) override { inner_->fill(x, value, n); }
  void tanh_forward(float* out, const float* in, std::int64_t n) override { inner_->tanh_forward(out, in, n); }
  double sum_of_squares(const float* x, std::int64_t n) override { return inner_->sum_of_squares(x, n); }
  void copy(void* dst, const void* src, std::int64_t bytes) override { inner_->copy(dst, src, bytes); }
  void upload(void* dst, const void* host_src, std::int64_t bytes) override { inner_->upload(dst, host_src, bytes); }
  void download(void* host_dst, const void* src, std::int64_t bytes) override {
    inner_->download(host_dst, src, bytes);
  }
  void zero(void* dst, std::int64_t bytes) override { inner_->zero(dst, bytes); }
  void widen(DType dtype, const std::uint16_t* in, float* out, std::int64_t n) override {
    inner_->widen(dtype, in, out, n);
  }
  void narrow(DType dtype, const float* in, std::uint16_t* out, std::int64_t n) override {
    inner_->narrow(dtype, in, out, n);
  }
  void add_16(DType dtype, std::uint16_t* dst, const std::uint16_t* src, std::int64_t n) override {
    inner_->add_16(dtype, dst, src, n);
  }
  void accumulate_16(DType dtype, std::uint16_t* dst, const float* src, std::int64_t n) override {
    inner_->accumulate_16(dtype, dst, src, n);
  }
  std::int64_t first_non_finite_16(DType dtype, const std::uint16_t* x, std::int64_t n) override {
    return inner_->first_non_finite_16(dtype, x, n);
  }
  double sum_of_squares_16(DType dtype, const std::uint16_t* x, std::int64_t n) override {
    return inner_->sum_of_squares_16(dtype, x, n);
  }
  void divide(DType dtype, void* x, std::int64_t n, float divisor) override { inner_->divide(dtype, x, n, divisor); }
  void adamw(float* params, const float* grads, float* m, float* v, std::int64_t n,
             const math::AdamWStep& step) override {
    inner_->adamw(params, grads, m, v, n, step);
  }

 private:
  std::unique_ptr<Backend> inner_;
};

}  // namespace shardscope::testing
