// SPDX-License-Identifier: GPL-3.0-or-later
#include "ops/op_work.h"

#include <type_traits>

#include "ops/host_pass.h"

namespace shardscope {

namespace {

constexpr double kF = 4.0;  // bytes per fp32 value
double d(std::int64_t v) {
  return static_cast<double>(v);
}
double bytes_of(DType t) {
  return t == DType::f32 ? 4.0 : 2.0;
}

class ObservedBackend final : public Backend {
 public:
  ObservedBackend(std::unique_ptr<Backend> inner, std::unique_ptr<OpObserver> observer)
      : inner_(std::move(inner)), observer_(std::move(observer)) {}

  std::string name() const override { return inner_->name(); }
  bool host_memory() const override { return inner_->host_memory(); }
  void synchronize() override { inner_->synchronize(); }

  void gemm(Transpose ta, Transpose tb, int M, int N, int K, float alpha, const float* A, int lda, const float* B,
            int ldb, float beta, float* C, int ldc) override {
    observed("gemm", 2.0 * M * N * K, kF * (d(M) * K + d(K) * N + d(M) * N * (beta != 0.0f ? 2 : 1)),
             [&] { inner_->gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc); });
  }
  void gemm_batched_strided(Transpose ta, Transpose tb, int M, int N, int K, float alpha, const float* A, int lda,
                            std::int64_t sa, const float* B, int ldb, std::int64_t sb, float beta, float* C, int ldc,
                            std::int64_t sc, int batch) override {
    observed("gemm_batched_strided", 2.0 * M * N * K * batch,
             kF * batch * (d(M) * K + d(K) * N + d(M) * N * (beta != 0.0f ? 2 : 1)), [&] {
               inner_->gemm_batched_strided(ta, tb, M, N, K, alpha, A, lda, sa, B, ldb, sb, beta, C, ldc, sc, batch);
             });
  }
  void linear_forward(float* out, const float* in, const float* weight, const float* bias, int rows, int in_f,
                      int out_f) override {
    observed("linear_forward", 2.0 * rows * in_f * out_f,
             kF * (d(rows) * in_f + d(out_f) * in_f + d(rows) * out_f + (bias != nullptr ? out_f : 0)),
             [&] { inner_->linear_forward(out, in, weight, bias, rows, in_f, out_f); });
  }
  void linear_backward(float* d_in, float* d_weight, float* d_bias, const float* d_out, const float* in,
                       const float* weight, int rows, int in_f, int out_f, bool accumulate) override {
    const double mnk = 2.0 * rows * in_f * out_f;
    double flops = 0, bytes = kF * d(rows) * out_f;  // d_out
    if (d_in != nullptr) {
      flops += mnk;
      bytes += kF * (d(out_f) * in_f + d(rows) * in_f * (accumulate ? 2 : 1));
    }
    if (d_weight != nullptr) {
      flops += mnk;
      bytes += kF * (d(rows) * in_f + 2.0 * out_f * in_f);
    }
    if (d_bias != nullptr) bytes += kF * 2.0 * out_f;
    observed(
        "linear_backward", flops, bytes,
        [&] { inner_->linear_backward(d_in, d_weight, d_bias, d_out, in, weight, rows, in_f, out_f, accumulate); },
        (d_in != nullptr ? 1 : 0) + (d_weight != nullptr ? 1 : 0));
  }
  void embedding_forward(float* out, const std::int32_t* ids, const std::int32_t* type_ids, const float* tokens,
                         const float* positions, const float* types, int B, int T, int C) override {
    const double n = d(B) * T * C;
    observed("embedding_forward", 0, kF * n * (types != nullptr ? 4 : 3),
             [&] { inner_->embedding_forward(out, ids, type_ids, tokens, positions, types, B, T, C); });
  }
  void embedding_backward(float* d_tokens, float* d_positions, float* d_types, const float* d_out,
                          const std::int32_t* ids, const std::int32_t* type_ids, int B, int T, int C) override {
    const double n = d(B) * T * C;
    observed("embedding_backward", 0, kF * n * (d_types != nullptr ? 7 : 5),
             [&] { inner_->embedding_backward(d_tokens, d_positions, d_types, d_out, ids, type_ids, B, T, C); });
  }
  void layernorm_forward(float* out, float* mean, float* rstd, const float* in, const float* weight, const float* bias,
                         int rows, int C, float eps) override {
    observed("layernorm_forward", 0, kF * (2.0 * rows * C + 2.0 * rows),
             [&] { inner_->layernorm_forward(out, mean, rstd, in, weight, bias, rows, C, eps); });
  }
  void layernorm_backward(float* d_in, float* d_weight, float* d_bias, const float* d_out, const float* in,
                          const float* weight, const float* mean, const float* rstd, int rows, int C,
                          bool accumulate) override {
    observed("layernorm_backward", 0, kF * (d(rows) * C * (accumulate ? 4 : 3) + 2.0 * rows), [&] {
      inner_->layernorm_backward(d_in, d_weight, d_bias, d_out, in, weight, mean, rstd, rows, C, accumulate);
    });
  }
  void gelu_forward(float* out, const float* in, std::int64_t n, math::GeluKind kind) override {
    observed("gelu_forward", 0, kF * 2.0 * d(n), [&] { inner_->gelu_forward(out, in, n, kind); });
  }
  void gelu_backward(float* d_in, const float* d_out, const float* in, std::int64_t n, math::GeluKind kind) override {
    observed("gelu_backward", 0, kF * 3.0 * d(n), [&] { inner_->gelu_backward(d_in, d_out, in, n, kind); });
  }
  AttentionKernel attention_kernel(int head_dim) const override { return inner_->attention_kernel(head_dim); }
  void attention_forward(float* out, float* probs, const float* qkv, int B, int T, int C, int H,
                         const AttentionMask& mask) override {
    // Q K^T and P V over the full T x T scores (the fused kernel skips the tiles past a causal
    // diagonal); reads qkv, writes out and P, or fused only each row's log-sum-exp.
    const double saved = d(attention_saved_floats(inner_->attention_kernel(C / H), B, H, T));
    // GEMM kernels: QK^T and PV materialized, one fused kernel.
    observed(
        "attention_forward", 4.0 * B * T * T * C, kF * (4.0 * B * T * C + saved),
        [&] { inner_->attention_forward(out, probs, qkv, B, T, C, H, mask); }, fused(C / H) ? 1 : 2);
  }
  void attention_backward(float* d_qkv, float* scratch, const float* d_out, const float* qkv, const float* out,
                          const float* probs, int B, int T, int C, int H, const AttentionMask& mask) override {
    // Materialized: dP, dV, dQ, dK, four T x T x hd matmuls per head, reading P. Fused: both
    // backward kernels recompute S and dP, so seven, reading out and the rows' log-sum-exp.
    const bool f = fused(C / H);
    const double flops = (f ? 14.0 : 8.0) * B * T * T * C;
    const double bytes = f ? kF * (8.0 * B * T * C + 3.0 * d(B) * H * T) : kF * (7.0 * B * T * C + d(B) * H * T * T);
    observed(
        "attention_backward", flops, bytes,
        [&] { inner_->attention_backward(d_qkv, scratch, d_out, qkv, out, probs, B, T, C, H, mask); }, f ? 2 : 4);
  }
  float cross_entropy_forward(float* losses, const float* logits, const std::int32_t* targets, int rows,
                              int V) override {
    float mean = 0.0f;
    observed("cross_entropy_forward", 0, kF * (d(rows) * V + rows),
             [&] { mean = inner_->cross_entropy_forward(losses, logits, targets, rows, V); });
    return mean;
  }
  void cross_entropy_backward(float* d_logits, const float* logits, const std::int32_t* targets, int rows, int V,
                              float dloss_per_row) override {
    observed("cross_entropy_backward", 0, kF * 2.0 * d(rows) * V,
             [&] { inner_->cross_entropy_backward(d_logits, logits, targets, rows, V, dloss_per_row); });
  }
  // Ring attention's block (context parallelism): Q K^T and P V of T queries against T keys,
  // reading q, the block and the running output, writing the output and each row's log-sum-exp.
  void ring_attention_forward(float* out, float* lse, const float* qkv, const float* kv,
                              const RingAttentionBlock& k) override {
    observed("ring_attention_forward", 4.0 * k.B * k.T * k.T * k.C,
             kF * (5.0 * k.B * k.T * k.C + 2.0 * d(k.B) * k.H * k.T),
             [&] { inner_->ring_attention_forward(out, lse, qkv, kv, k); });
  }
  // Backward recomputes S and dP for dQ and again for dK, dV (as the fused kernels do).
  void ring_attention_backward(float* d_qkv, float* d_kv, const float* d_out, const float* qkv, const float* kv,
                               const float* lse, const float* row_dot, bool first_block,
                               const RingAttentionBlock& k) override {
    observed("ring_attention_backward", 14.0 * k.B * k.T * k.T * k.C,
             kF * (9.0 * k.B * k.T * k.C + 2.0 * d(k.B) * k.H * k.T),
             [&] { inner_->ring_attention_backward(d_qkv, d_kv, d_out, qkv, kv, lse, row_dot, first_block, k); });
  }
  void attention_row_dot(float* row_dot, const float* d_out, const float* out, int B, int T, int C, int H) override {
    observed("attention_row_dot", 0, kF * (2.0 * B * T * C + d(B) * H * T),
             [&] { inner_->attention_row_dot(row_dot, d_out, out, B, T, C, H); });
  }
  void copy_columns(float* dst, int dst_stride, const float* src, int src_stride, std::int64_t rows,
                    int width) override {
    observed("copy_columns", 0, kF * 2.0 * d(rows) * width,
             [&] { inner_->copy_columns(dst, dst_stride, src, src_stride, rows, width); });
  }
  void vocab_embedding_forward(float* out, const std::int32_t* ids, const std::int32_t* type_ids, const float* tokens,
                               const float* positions, const float* types, int B, int T, int C, int first,
                               int owned) override {
    observed("vocab_embedding_forward", 0, kF * d(B) * T * C * (types != nullptr ? 4 : 3), [&] {
      inner_->vocab_embedding_forward(out, ids, type_ids, tokens, positions, types, B, T, C, first, owned);
    });
  }
  void vocab_embedding_backward(float* d_tokens, float* d_positions, float* d_types, const float* d_out,
                                const std::int32_t* ids, const std::int32_t* type_ids, int B, int T, int C, int first,
                                int owned) override {
    observed("vocab_embedding_backward", 0, kF * d(B) * T * C * (d_types != nullptr ? 7 : 5), [&] {
      inner_->vocab_embedding_backward(d_tokens, d_positions, d_types, d_out, ids, type_ids, B, T, C, first, owned);
    });
  }
  void row_max(float* maxima, const float* logits, int rows, int V) override {
    observed("row_max", 0, kF * (d(rows) * V + rows), [&] { inner_->row_max(maxima, logits, rows, V); });
  }
  void vocab_cross_entropy_sums(float* sums, float* row_max, const float* maxima, int t, const float* logits,
                                const std::int32_t* targets, int rows, int V, int first) override {
    observed("vocab_cross_entropy_sums", 0, kF * (d(rows) * V + d(rows) * (t + 3)),
             [&] { inner_->vocab_cross_entropy_sums(sums, row_max, maxima, t, logits, targets, rows, V, first); });
  }
  float vocab_cross_entropy_losses(float* losses, float* log_sum_exp, const float* sums, const float* row_max,
                                   const std::int32_t* targets, int rows) override {
    float mean = 0.0f;
    observed("vocab_cross_entropy_losses", 0, kF * 6.0 * rows,
             [&] { mean = inner_->vocab_cross_entropy_losses(losses, log_sum_exp, sums, row_max, targets, rows); });
    return mean;
  }
  void vocab_cross_entropy_backward(float* d_logits, const float* logits, const float* log_sum_exp,
                                    const std::int32_t* targets, int rows, int V, int first,
                                    float dloss_per_row) override {
    observed("vocab_cross_entropy_backward", 0, kF * 2.0 * d(rows) * V, [&] {
      inner_->vocab_cross_entropy_backward(d_logits, logits, log_sum_exp, targets, rows, V, first, dloss_per_row);
    });
  }
  void add(float* out, const float* a, const float* b, std::int64_t n) override {
    observed("add", 0, kF * 3.0 * d(n), [&] { inner_->add(out, a, b, n); });
  }
  void add_bias_rows(float* x, const float* bias, int rows, int C) override {
    observed("add_bias_rows", 0, kF * 2.0 * rows * C, [&] { inner_->add_bias_rows(x, bias, rows, C); });
  }
  void scale(float* x, float factor, std::int64_t n) override {
    observed("scale", 0, kF * 2.0 * d(n), [&] { inner_->scale(x, factor, n); });
  }
  void fill(float* x, float value, std::int64_t n) override {
    observed("fill", 0, kF * d(n), [&] { inner_->fill(x, value, n); });
  }
  void tanh_forward(float* out, const float* in, std::int64_t n) override {
    observed("tanh_forward", 0, kF * 2.0 * d(n), [&] { inner_->tanh_forward(out, in, n); });
  }
  double sum_of_squares(const float* x, std::int64_t n) override {
    double sum = 0.0;
    observed("sum_of_squares", 0, kF * d(n), [&] { sum = inner_->sum_of_squares(x, n); });
    return sum;
  }
  void copy(void* dst, const void* src, std::int64_t bytes) override {
    observed("copy", 0, 2.0 * d(bytes), [&] { inner_->copy(dst, src, bytes); });
  }
  void upload(void* dst, const void* host_src, std::int64_t bytes) override {
    observed("upload", 0, d(bytes), [&] { inner_->upload(dst, host_src, bytes); });
  }
  void download(void* host_dst, const void* src, std::int64_t bytes) override {
    observed("download", 0, d(bytes), [&] { inner_->download(host_dst, src, bytes); });
  }
  void zero(void* dst, std::int64_t bytes) override {
    observed("zero", 0, d(bytes), [&] { inner_->zero(dst, bytes); });
  }
  void widen(DType dtype, const std::uint16_t* in, float* out, std::int64_t n) override {
    observed("widen", 0, 6.0 * d(n), [&] { inner_->widen(dtype, in, out, n); });
  }
  void narrow(DType dtype, const float* in, std::uint16_t* out, std::int64_t n) override {
    observed("narrow", 0, 6.0 * d(n), [&] { inner_->narrow(dtype, in, out, n); });
  }
  void add_16(DType dtype, std::uint16_t* dst, const std::uint16_t* src, std::int64_t n) override {
    observed("add_16", 0, 6.0 * d(n), [&] { inner_->add_16(dtype, dst, src, n); });
  }
  void accumulate_16(DType dtype, std::uint16_t* dst, const float* src, std::int64_t n) override {
    observed("accumulate_16", 0, 8.0 * d(n), [&] { inner_->accumulate_16(dtype, dst, src, n); });
  }
  std::int64_t first_non_finite_16(DType dtype, const std::uint16_t* x, std::int64_t n) override {
    std::int64_t at = -1;
    observed("first_non_finite_16", 0, 2.0 * d(n), [&] { at = inner_->first_non_finite_16(dtype, x, n); });
    return at;
  }
  double sum_of_squares_16(DType dtype, const std::uint16_t* x, std::int64_t n) override {
    double sum = 0.0;
    observed("sum_of_squares_16", 0, 2.0 * d(n), [&] { sum = inner_->sum_of_squares_16(dtype, x, n); });
    return sum;
  }
  void divide(DType dtype, void* x, std::int64_t n, float divisor) override {
    observed("divide", 0, 2.0 * bytes_of(dtype) * d(n), [&] { inner_->divide(dtype, x, n, divisor); });
  }
  void adamw(float* params, const float* grads, float* m, float* v, std::int64_t n,
             const math::AdamWStep& step) override {
    // Reads parameters, gradients, m, v; writes parameters, m, v.
    observed("adamw", 0, kF * 7.0 * d(n), [&] { inner_->adamw(params, grads, m, v, n, step); });
  }
  // A model's own host loop (ops/host_pass.h): no FLOPs, the bytes its caller counted. Run
  // through the inner backend too: observers stack (--profile-ops around --gpu-profile's clock),
  // and each must see the pass.
  void host_pass(const char* op, double bytes, const std::function<void()>& pass) {
    observed(op, 0, bytes, [&] { shardscope::host_pass(*inner_, op, bytes, pass); });
  }

 private:
  // Whether the inner backend runs attention fused (it keeps rows, not T x T, and recomputes P).
  bool fused(int head_dim) const { return inner_->attention_kernel(head_dim) == AttentionKernel::fused; }
  // `gemms`: the GEMM kernels the op launches; an op with FLOPs launches at least one.
  template <class F>
  void observed(const char* op, double flops, double bytes, F&& run, int gemms = 1) {
    using Run = std::remove_reference_t<F>;
    observer_->observe(
        *inner_, OpCall{op, flops, bytes, [](void* f) { (*static_cast<Run*>(f))(); }, &run, flops > 0 ? gemms : 0});
  }

  std::unique_ptr<Backend> inner_;
  std::unique_ptr<OpObserver> observer_;
};

}  // namespace

void host_pass(Backend& backend, const char* op, double bytes, const std::function<void()>& pass) {
  if (auto* observed = dynamic_cast<ObservedBackend*>(&backend))
    observed->host_pass(op, bytes, pass);
  else
    pass();
}

std::unique_ptr<Backend> make_observed_backend(std::unique_ptr<Backend> inner, std::unique_ptr<OpObserver> observer) {
  return std::make_unique<ObservedBackend>(std::move(inner), std::move(observer));
}

}  // namespace shardscope
