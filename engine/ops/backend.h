// SPDX-License-Identifier: GPL-3.0-or-later
// The ops every backend implements. Pointers are in the backend's memory (host
// for the CPU backend, device for CUDA). Shapes are written next to every
// argument; all tensors are row-major and contiguous unless a leading
// dimension says otherwise. Gradients of parameters accumulate (+=), so
// gradient accumulation over micro-batches needs no extra copy; gradients of
// activations overwrite unless `accumulate` is set.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

#include "core/dtype.h"
#include "ops/math.h"
#include "ops/ring_attention.h"

namespace shardscope {

enum class Transpose { no, yes };

// How attention masks keys: causal (GPT) or by a per-sequence padding mask (BERT).
struct AttentionMask {
  bool causal = false;
  const std::int32_t* padding = nullptr;  // (B, T): 1 = real token, 0 = padding; may be null
};

// How a backend runs attention, and so what the model keeps for its backward:
//   materialized  S = Q K^T, P = softmax(S) and Y = P V as separate steps.
//                 `probs` keeps P (B, H, T, T) for backward; `scratch` is
//                 (B, H, T, T) of workspace (dP, then dS).
//   fused         one kernel per tile of queries, never writing P (FlashAttention-2,
//                 Dao 2023): `probs` keeps only each query row's log-sum-exp
//                 (B, H, T) and backward recomputes P from it; `scratch` holds
//                 (B, H, T) floats, D = rowsum(dO o O) of FlashAttention-2's backward.
// Memory of the saved tensor: O(T^2) per head materialized, O(T) fused.
enum class AttentionKernel { materialized, fused };

// Floats of `probs` (saved for backward) and of `scratch` (backward workspace).
inline std::int64_t attention_saved_floats(AttentionKernel kernel, std::int64_t B, std::int64_t H, std::int64_t T) {
  return kernel == AttentionKernel::fused ? B * H * T : B * H * T * T;
}
inline std::int64_t attention_scratch_floats(AttentionKernel kernel, std::int64_t B, std::int64_t H, std::int64_t T) {
  return attention_saved_floats(kernel, B, H, T);  // dP/dS beside P, or D beside the rows
}

// When the CUDA backend fuses attention (cuda_flash_attention.cu): with 16-bit
// matmul math (its tensor-core tiles are bf16 or fp16, as torch.autocast runs
// scaled_dot_product_attention) and a head dimension its tiles cover, a
// multiple of 16 up to 128. A pure function, so the memory estimator, which
// has no backend, sizes the same buffers the run will carve.
inline AttentionKernel cuda_attention_kernel(bool sixteen_bit, int head_dim) {
  const bool tiles_cover = head_dim > 0 && head_dim % 16 == 0 && head_dim <= 128;
  return sixteen_bit && tiles_cover ? AttentionKernel::fused : AttentionKernel::materialized;
}

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  // Whether the pointers are host memory (the CPU backend) or a device's.
  virtual bool host_memory() const { return true; }
  // Waits until every op issued so far has finished (a GPU runs them
  // asynchronously); timing around ops needs it. No-op on the CPU.
  virtual void synchronize() {}

  // ---- matmul --------------------------------------------------------------
  // C (M, N) = alpha * op(A) @ op(B) + beta * C, row-major with leading dimensions.
  virtual void gemm(Transpose trans_a, Transpose trans_b, int M, int N, int K, float alpha, const float* A, int lda,
                    const float* B, int ldb, float beta, float* C, int ldc) = 0;
  // `batch` independent gemms, each operand advanced by its stride per batch.
  virtual void gemm_batched_strided(Transpose trans_a, Transpose trans_b, int M, int N, int K, float alpha,
                                    const float* A, int lda, std::int64_t stride_a, const float* B, int ldb,
                                    std::int64_t stride_b, float beta, float* C, int ldc, std::int64_t stride_c,
                                    int batch) = 0;

  // ---- linear layer (nn.Linear: y = x W^T + b) --------------------------------
  // out (rows, out_f) = in (rows, in_f) @ weight (out_f, in_f)^T + bias (out_f); bias may be null.
  virtual void linear_forward(float* out, const float* in, const float* weight, const float* bias, int rows, int in_f,
                              int out_f) = 0;
  // d_in (rows, in_f) = d_out @ weight  (overwritten, or += when accumulate; skipped if null)
  // d_weight (out_f, in_f) += d_out^T @ in (skipped if null: B of a split backward, model.h);
  // d_bias (out_f) += column sums of d_out (skipped if null)
  virtual void linear_backward(float* d_in, float* d_weight, float* d_bias, const float* d_out, const float* in,
                               const float* weight, int rows, int in_f, int out_f, bool accumulate = false) = 0;

  // ---- embedding ------------------------------------------------------------
  // out (B*T, C) = tokens[ids] + positions[t] (+ types[type_ids] when types is non-null).
  virtual void embedding_forward(float* out, const std::int32_t* ids, const std::int32_t* type_ids,
                                 const float* tokens, const float* positions, const float* types, int B, int T,
                                 int C) = 0;
  // d_tokens (V, C) += scatter of d_out rows by ids; d_positions (T, C) += sum over batch; d_types likewise.
  virtual void embedding_backward(float* d_tokens, float* d_positions, float* d_types, const float* d_out,
                                  const std::int32_t* ids, const std::int32_t* type_ids, int B, int T, int C) = 0;

  // ---- layernorm ------------------------------------------------------------
  // out (rows, C), mean (rows), rstd (rows)
  virtual void layernorm_forward(float* out, float* mean, float* rstd, const float* in, const float* weight,
                                 const float* bias, int rows, int C, float eps) = 0;
  // d_in (rows, C) overwritten (+= when accumulate); d_weight, d_bias (C) +=
  virtual void layernorm_backward(float* d_in, float* d_weight, float* d_bias, const float* d_out, const float* in,
                                  const float* weight, const float* mean, const float* rstd, int rows, int C,
                                  bool accumulate = false) = 0;

  // ---- GELU -----------------------------------------------------------------
  virtual void gelu_forward(float* out, const float* in, std::int64_t n, math::GeluKind kind) = 0;
  // d_in = d_out * gelu'(in); d_in may alias d_out.
  virtual void gelu_backward(float* d_in, const float* d_out, const float* in, std::int64_t n,
                             math::GeluKind kind) = 0;

  // ---- multi-head attention (scaled dot product, Vaswani et al. 2017) ---------
  // qkv (B, T, 3C): q, k, v side by side; head h uses columns h*hd..(h+1)*hd of each.
  // out (B, T, C) heads concatenated. What `probs` keeps for backward and how
  // large `scratch` is depend on attention_kernel(hd) (see AttentionKernel).
  virtual AttentionKernel attention_kernel(int /*head_dim*/) const { return AttentionKernel::materialized; }
  // probs: (B, H, T, T) materialized, (B, H, T) log-sum-exp fused.
  virtual void attention_forward(float* out, float* probs, const float* qkv, int B, int T, int C, int H,
                                 const AttentionMask& mask) = 0;
  // d_qkv (B, T, 3C) overwritten. out (B, T, C) and probs are the forward's,
  // unchanged since, and mask is the forward's (a fused backward recomputes P
  // from them); scratch is workspace, sized by attention_scratch_floats.
  virtual void attention_backward(float* d_qkv, float* scratch, const float* d_out, const float* qkv,
                                  const float* out, const float* probs, int B, int T, int C, int H,
                                  const AttentionMask& mask) = 0;

  // ---- softmax cross-entropy ------------------------------------------------------
  // losses (rows) per row, 0 for ignored targets (< 0). Returns the mean over counted rows.
  virtual float cross_entropy_forward(float* losses, const float* logits, const std::int32_t* targets, int rows,
                                      int V) = 0;
  // d_logits (rows, V) = (softmax - onehot) * dloss_per_row, 0 rows for ignored targets.
  virtual void cross_entropy_backward(float* d_logits, const float* logits, const std::int32_t* targets, int rows,
                                      int V, float dloss_per_row) = 0;

  // ---- vocabulary parallelism (tensor parallelism's embedding and head) ----------------
  // This rank holds rows [first, first + owned) of the token table and the
  // same columns of every row's logits (model/tensor_parallel.cpp). The
  // defaults throw: a backend that trains tensor parallelism overrides them.
  // out (B*T, C) = tokens[id - first] + positions[t] (+ types[type_ids]) where
  // this rank owns the id, 0 where it does not.
  virtual void vocab_embedding_forward(float* /*out*/, const std::int32_t* /*ids*/, const std::int32_t* /*type_ids*/,
                                       const float* /*tokens*/, const float* /*positions*/, const float* /*types*/,
                                       int /*B*/, int /*T*/, int /*C*/, int /*first*/, int /*owned*/) {
    unsupported("vocab_embedding_forward");
  }
  // d_positions (T, C) and d_types += every row of d_out (B*T, C); d_tokens
  // (owned, C) += the rows whose id this rank owns; rows added in order.
  virtual void vocab_embedding_backward(float* /*d_tokens*/, float* /*d_positions*/, float* /*d_types*/,
                                        const float* /*d_out*/, const std::int32_t* /*ids*/,
                                        const std::int32_t* /*type_ids*/, int /*B*/, int /*T*/, int /*C*/,
                                        int /*first*/, int /*owned*/) {
    unsupported("vocab_embedding_backward");
  }
  // maxima (rows) = each row's largest of logits (rows, V).
  virtual void row_max(float* /*maxima*/, const float* /*logits*/, int /*rows*/, int /*V*/) { unsupported("row_max"); }
  // From the t ranks' maxima (t, rows): row_max (rows) = their largest; sums
  // (2, rows) = [sum_j e^(z_j - row_max) | the target's logit where this rank
  // owns it, else 0], for this rank's logits (rows, V).
  virtual void vocab_cross_entropy_sums(float* /*sums*/, float* /*row_max*/, const float* /*maxima*/, int /*t*/,
                                        const float* /*logits*/, const std::int32_t* /*targets*/, int /*rows*/,
                                        int /*V*/, int /*first*/) {
    unsupported("vocab_cross_entropy_sums");
  }
  // From the group's sums (2, rows) and row_max: log_sum_exp (rows) and losses
  // (rows, 0 for ignored targets < 0). Returns the mean over counted rows.
  virtual float vocab_cross_entropy_losses(float* /*losses*/, float* /*log_sum_exp*/, const float* /*sums*/,
                                           const float* /*row_max*/, const std::int32_t* /*targets*/, int /*rows*/) {
    unsupported("vocab_cross_entropy_losses");
    return 0.0f;
  }
  // d_logits (rows, V) = (e^(z - log_sum_exp) - [j + first == target]) * dloss_per_row, 0 rows for ignored targets.
  virtual void vocab_cross_entropy_backward(float* /*d_logits*/, const float* /*logits*/, const float* /*log_sum_exp*/,
                                            const std::int32_t* /*targets*/, int /*rows*/, int /*V*/, int /*first*/,
                                            float /*dloss_per_row*/) {
    unsupported("vocab_cross_entropy_backward");
  }

  // ---- ring attention (context parallelism, model/context_parallel.cpp; ops/ring_attention.h) ----
  // The defaults throw: a backend that trains context parallelism overrides them.
  // One ring step forward: every query row of qkv (B, T, 3C) against the key/value
  // block kv (B, T, 2C), merged into out (B, T, C) and lse (B, H, T) by log-sum-exp.
  virtual void ring_attention_forward(float* /*out*/, float* /*lse*/, const float* /*qkv*/, const float* /*kv*/,
                                      const RingAttentionBlock& /*block*/) {
    unsupported("ring_attention_forward");
  }
  // One ring step backward: dQ into d_qkv's Q columns (set on the first block,
  // else added) and the block's dK, dV added into d_kv (B, T, 2C); lse and
  // row_dot (B, H, T) are the forward's log-sum-exp and D = rowsum(dY o Y).
  virtual void ring_attention_backward(float* /*d_qkv*/, float* /*d_kv*/, const float* /*d_out*/, const float* /*qkv*/,
                                       const float* /*kv*/, const float* /*lse*/, const float* /*row_dot*/,
                                       bool /*first_block*/, const RingAttentionBlock& /*block*/) {
    unsupported("ring_attention_backward");
  }
  // row_dot (B, H, T) = each head's dY . Y, for d_out and out (B, T, C).
  virtual void attention_row_dot(float* /*row_dot*/, const float* /*d_out*/, const float* /*out*/, int /*B*/, int /*T*/,
                                 int /*C*/, int /*H*/) {
    unsupported("attention_row_dot");
  }
  // dst[r, 0..width) = src[r, 0..width) for rows rows, each with its own row
  // stride (floats): the key/value columns out of qkv and the gradients back.
  virtual void copy_columns(float* /*dst*/, int /*dst_stride*/, const float* /*src*/, int /*src_stride*/,
                            std::int64_t /*rows*/, int /*width*/) {
    unsupported("copy_columns");
  }

  // ---- element-wise ---------------------------------------------------------
  virtual void add(float* out, const float* a, const float* b, std::int64_t n) = 0;  // out = a + b
  virtual void add_bias_rows(float* x, const float* bias, int rows, int C) = 0;        // x[r, :] += bias
  virtual void scale(float* x, float factor, std::int64_t n) = 0;                       // x *= factor
  virtual void fill(float* x, float value, std::int64_t n) = 0;
  virtual void tanh_forward(float* out, const float* in, std::int64_t n) = 0;
  virtual double sum_of_squares(const float* x, std::int64_t n) = 0;  // accumulated in double

  // ---- memory and 16-bit storage ------------------------------------------------
  // Copies within this backend's memory, and between it and the host (all
  // three are memcpy for the CPU backend). Byte counts.
  virtual void copy(void* dst, const void* src, std::int64_t bytes) = 0;
  virtual void upload(void* dst, const void* host_src, std::int64_t bytes) = 0;
  virtual void download(void* host_dst, const void* src, std::int64_t bytes) = 0;
  virtual void zero(void* dst, std::int64_t bytes) = 0;
  // Mixed precision: f32 <-> f16/bf16 (dtype) with core/half.h's rounding, and
  // the reductions the trainer runs on 16-bit gradients.
  virtual void widen(DType dtype, const std::uint16_t* in, float* out, std::int64_t n) = 0;
  virtual void narrow(DType dtype, const float* in, std::uint16_t* out, std::int64_t n) = 0;
  virtual void add_16(DType dtype, std::uint16_t* dst, const std::uint16_t* src, std::int64_t n) = 0;  // dst += src
  // dst += src rounded to 16 bits (half::accumulate): a unit's fp32 gradient into its 16-bit store.
  virtual void accumulate_16(DType dtype, std::uint16_t* dst, const float* src, std::int64_t n) = 0;
  virtual std::int64_t first_non_finite_16(DType dtype, const std::uint16_t* x, std::int64_t n) = 0;  // -1: none
  virtual double sum_of_squares_16(DType dtype, const std::uint16_t* x, std::int64_t n) = 0;
  // x[i] /= divisor in dtype's storage (f32, or f16/bf16 widened, divided and
  // rounded back): a collective's average, exactly as the host communicator divides.
  virtual void divide(DType dtype, void* x, std::int64_t n, float divisor) = 0;

  // ---- optimizer ------------------------------------------------------------
  // One AdamW step over n elements (see math::adamw_element).
  virtual void adamw(float* params, const float* grads, float* m, float* v, std::int64_t n,
                     const math::AdamWStep& step) = 0;

 protected:
  [[noreturn]] void unsupported(const char* op) const {
    throw std::logic_error(name() + " has no " + op + " (tensor or context parallelism does not train on it)");
  }
};

struct CpuBackendOptions {
  int threads = 1;  // threads of this backend's pool, the caller included
};

std::unique_ptr<Backend> make_cpu_backend(const CpuBackendOptions& options);

}  // namespace shardscope
