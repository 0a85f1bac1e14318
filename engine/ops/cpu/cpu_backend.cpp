// SPDX-License-Identifier: GPL-3.0-or-later
// Element-wise, per-row and reduction ops of the CPU backend. The math itself
// lives in ops/math.h (shared with CUDA); this file only decides how rows and
// elements are spread over the rank's threads.
#include "ops/cpu/cpu_backend.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/half.h"
#include "ops/cpu/cpu_kernels.h"
#include "ops/cpu/cpu_tasks.h"

namespace shardscope {

namespace {
constexpr std::int64_t kElementGrain = 16384;  // elements per thread below which splitting costs more than it saves
}

CpuBackend::CpuBackend(const CpuBackendOptions& options) : pool_(std::max(1, options.threads)) {}

std::string CpuBackend::name() const {
  return std::string("cpu (") + blas_name() + ", " + std::to_string(pool_.threads()) + " threads)";
}

std::unique_ptr<Backend> make_cpu_backend(const CpuBackendOptions& options) {
  return std::make_unique<CpuBackend>(options);
}

// ---- linear -------------------------------------------------------------------

// ---- embedding ----------------------------------------------------------------

void CpuBackend::embedding_forward(float* out, const std::int32_t* ids, const std::int32_t* type_ids,
                                   const float* tokens, const float* positions, const float* types, int B, int T,
                                   int C) {
  pool_.parallel_for(static_cast<std::int64_t>(B) * T, 16, [&](std::int64_t r0, std::int64_t r1) {
    for (std::int64_t r = r0; r < r1; ++r) {
      const float* tok = tokens + static_cast<std::int64_t>(ids[r]) * C;
      const float* pos = positions + (r % T) * C;
      const float* typ = types != nullptr ? types + static_cast<std::int64_t>(type_ids[r]) * C : nullptr;
      float* o = out + r * C;
      for (int c = 0; c < C; ++c) o[c] = tok[c] + pos[c] + (typ != nullptr ? typ[c] : 0.0f);
    }
  });
}

void CpuBackend::embedding_backward(float* d_tokens, float* d_positions, float* d_types, const float* d_out,
                                    const std::int32_t* ids, const std::int32_t* type_ids, int B, int T, int C) {
  // Scatter-add split over channels: each thread owns a channel range of every
  // table row, so no two threads add to the same float and the order is fixed.
  const std::int64_t rows = static_cast<std::int64_t>(B) * T;
  pool_.parallel_for(C, 16, [&](std::int64_t c0, std::int64_t c1) {
    for (std::int64_t r = 0; r < rows; ++r) {
      const float* g = d_out + r * C;
      float* tok = d_tokens + static_cast<std::int64_t>(ids[r]) * C;
      float* pos = d_positions + (r % T) * C;
      for (std::int64_t c = c0; c < c1; ++c) {
        tok[c] += g[c];
        pos[c] += g[c];
      }
      if (d_types != nullptr) {
        float* typ = d_types + static_cast<std::int64_t>(type_ids[r]) * C;
        for (std::int64_t c = c0; c < c1; ++c) typ[c] += g[c];
      }
    }
  });
}

// ---- layernorm ----------------------------------------------------------------

void CpuBackend::layernorm_forward(float* out, float* mean, float* rstd, const float* in, const float* weight,
                                   const float* bias, int rows, int C, float eps) {
  pool_.parallel_for(rows, 8, [&](std::int64_t r0, std::int64_t r1) {
    cpu::layernorm_forward_rows(out + r0 * C, mean + r0, rstd + r0, in + r0 * C, weight, bias, r1 - r0, C, eps);
  });
}

void CpuBackend::layernorm_backward(float* d_in, float* d_weight, float* d_bias, const float* d_out, const float* in,
                                    const float* weight, const float* mean, const float* rstd, int rows, int C,
                                    bool accumulate) {
  // d_in row by row, and d_weight += sum_r d_out * xhat, d_bias += sum_r d_out channel by
  // channel, read the same inputs and not each other's outputs: one job (cpu_tasks.h) of
  // row blocks and channel blocks.
  constexpr int kRowBlock = 128, kChannelBlock = 64;
  const int row_blocks = (rows + kRowBlock - 1) / kRowBlock;
  const int channel_blocks = (C + kChannelBlock - 1) / kChannelBlock;
  run_tasks(pool_, row_blocks + channel_blocks, [&](int task) {
    if (task >= row_blocks) {
      const std::int64_t c0 = static_cast<std::int64_t>(task - row_blocks) * kChannelBlock;
      cpu::layernorm_param_grads(d_weight, d_bias, d_out, in, mean, rstd, rows, C, c0,
                                 std::min<std::int64_t>(C, c0 + kChannelBlock));
      return;
    }
    thread_local std::vector<float> row;  // d_in's row before it is added (accumulate)
    if (accumulate) row.resize(static_cast<std::size_t>(C));
    const std::int64_t r1 = std::min<std::int64_t>(rows, static_cast<std::int64_t>(task + 1) * kRowBlock);
    for (std::int64_t r = static_cast<std::int64_t>(task) * kRowBlock; r < r1; ++r) {
      float* target = accumulate ? row.data() : d_in + r * C;
      math::layernorm_backward_row(d_out + r * C, in + r * C, weight, mean[r], rstd[r], target, C);
      if (accumulate)
        for (int c = 0; c < C; ++c) d_in[r * C + c] += row[static_cast<std::size_t>(c)];
    }
  });
}

// ---- GELU ---------------------------------------------------------------------

void CpuBackend::gelu_forward(float* out, const float* in, std::int64_t n, math::GeluKind kind) {
  pool_.parallel_for(n, kElementGrain, [&](std::int64_t i0, std::int64_t i1) {
    cpu::gelu_forward_range(out + i0, in + i0, i1 - i0, kind);
  });
}

void CpuBackend::gelu_backward(float* d_in, const float* d_out, const float* in, std::int64_t n,
                               math::GeluKind kind) {
  pool_.parallel_for(n, kElementGrain, [&](std::int64_t i0, std::int64_t i1) {
    cpu::gelu_backward_range(d_in + i0, d_out + i0, in + i0, i1 - i0, kind);
  });
}

// ---- cross-entropy ---------------------------------------------------------------

float CpuBackend::cross_entropy_forward(float* losses, const float* logits, const std::int32_t* targets, int rows,
                                        int V) {
  pool_.parallel_for(rows, 4, [&](std::int64_t r0, std::int64_t r1) {
    cpu::cross_entropy_rows(losses + r0, logits + r0 * V, targets + r0, r1 - r0, V);
  });
  double sum = 0.0;
  int counted = 0;
  for (int r = 0; r < rows; ++r) {
    if (targets[r] < 0) continue;
    sum += losses[r];
    ++counted;
  }
  return counted > 0 ? static_cast<float>(sum / counted) : 0.0f;
}

void CpuBackend::cross_entropy_backward(float* d_logits, const float* logits, const std::int32_t* targets, int rows,
                                        int V, float dloss_per_row) {
  pool_.parallel_for(rows, 4, [&](std::int64_t r0, std::int64_t r1) {
    cpu::cross_entropy_backward_rows(d_logits + r0 * V, logits + r0 * V, targets + r0, r1 - r0, V, dloss_per_row);
  });
}

// ---- vocabulary parallelism ----------------------------------------------------------
// Row by row in the order model/tensor_parallel.cpp's host loops ran, so tp losses keep their bits.

void CpuBackend::vocab_embedding_forward(float* out, const std::int32_t* ids, const std::int32_t* type_ids,
                                         const float* tokens, const float* positions, const float* types, int B, int T,
                                         int C, int first, int owned) {
  pool_.parallel_for(static_cast<std::int64_t>(B) * T, 16, [&](std::int64_t r0, std::int64_t r1) {
    for (std::int64_t r = r0; r < r1; ++r) {
      const std::int64_t local = ids[r] - first;
      float* row = out + r * C;
      const bool mine = local >= 0 && local < owned;
      const float* token = tokens + local * C;
      const float* position = positions + (r % T) * C;
      for (int c = 0; c < C; ++c) row[c] = mine ? token[c] + position[c] : 0.0f;
      if (types == nullptr || !mine) continue;
      const float* type = types + static_cast<std::int64_t>(type_ids[r]) * C;
      for (int c = 0; c < C; ++c) row[c] += type[c];
    }
  });
}

void CpuBackend::vocab_embedding_backward(float* d_tokens, float* d_positions, float* d_types, const float* d_out,
                                          const std::int32_t* ids, const std::int32_t* type_ids, int B, int T, int C,
                                          int first, int owned) {
  const std::int64_t rows = static_cast<std::int64_t>(B) * T;
  pool_.parallel_for(C, 16, [&](std::int64_t c0, std::int64_t c1) {  // a channel range each: no shared floats
    for (std::int64_t r = 0; r < rows; ++r) {
      const float* g = d_out + r * C;
      float* position = d_positions + (r % T) * C;
      for (std::int64_t c = c0; c < c1; ++c) position[c] += g[c];
      if (d_types != nullptr) {
        float* type = d_types + static_cast<std::int64_t>(type_ids[r]) * C;
        for (std::int64_t c = c0; c < c1; ++c) type[c] += g[c];
      }
      const std::int64_t local = ids[r] - first;
      if (local < 0 || local >= owned) continue;
      float* token = d_tokens + local * C;
      for (std::int64_t c = c0; c < c1; ++c) token[c] += g[c];
    }
  });
}

void CpuBackend::row_max(float* maxima, const float* logits, int rows, int V) {
  pool_.parallel_for(rows, 4, [&](std::int64_t r0, std::int64_t r1) {
    for (std::int64_t r = r0; r < r1; ++r) {
      float m = -INFINITY;
      for (int j = 0; j < V; ++j) m = math::max_f(m, logits[r * V + j]);
      maxima[r] = m;
    }
  });
}

void CpuBackend::vocab_cross_entropy_sums(float* sums, float* row_max, const float* maxima, int t, const float* logits,
                                          const std::int32_t* targets, int rows, int V, int first) {
  pool_.parallel_for(rows, 4, [&](std::int64_t r0, std::int64_t r1) {
    for (std::int64_t r = r0; r < r1; ++r) {
      float m = -INFINITY, sum = 0.0f;
      for (int k = 0; k < t; ++k) m = math::max_f(m, maxima[k * static_cast<std::int64_t>(rows) + r]);
      for (int j = 0; j < V; ++j) sum += math::exp_approx(logits[r * V + j] - m);
      const std::int64_t target = static_cast<std::int64_t>(targets[r]) - first;
      row_max[r] = m;
      sums[r] = sum;
      sums[rows + r] = targets[r] >= 0 && target >= 0 && target < V ? logits[r * V + target] : 0.0f;
    }
  });
}

float CpuBackend::vocab_cross_entropy_losses(float* losses, float* log_sum_exp, const float* sums, const float* row_max,
                                             const std::int32_t* targets, int rows) {
  double total = 0.0;
  int counted = 0;
  for (int r = 0; r < rows; ++r) {
    log_sum_exp[r] = std::log(sums[r]) + row_max[r];
    losses[r] = targets[r] < 0 ? 0.0f : math::cross_entropy_loss(sums[r], row_max[r], sums[rows + r]);
    if (targets[r] < 0) continue;
    total += losses[r];
    ++counted;
  }
  return counted > 0 ? static_cast<float>(total / counted) : 0.0f;
}

void CpuBackend::vocab_cross_entropy_backward(float* d_logits, const float* logits, const float* log_sum_exp,
                                              const std::int32_t* targets, int rows, int V, int first,
                                              float dloss_per_row) {
  pool_.parallel_for(rows, 4, [&](std::int64_t r0, std::int64_t r1) {
    for (std::int64_t r = r0; r < r1; ++r) {
      float* d = d_logits + r * V;
      const float* z = logits + r * V;
      const bool scored = targets[r] >= 0;
      for (int j = 0; j < V; ++j) d[j] = scored ? math::exp_approx(z[j] - log_sum_exp[r]) * dloss_per_row : 0.0f;
      const std::int64_t target = static_cast<std::int64_t>(targets[r]) - first;
      if (scored && target >= 0 && target < V) d[target] -= dloss_per_row;
    }
  });
}

// ---- element-wise -----------------------------------------------------------------

void CpuBackend::add(float* out, const float* a, const float* b, std::int64_t n) {
  pool_.parallel_for(n, kElementGrain, [&](std::int64_t i0, std::int64_t i1) {
    cpu::add_range(out + i0, a + i0, b + i0, i1 - i0);
  });
}

void CpuBackend::add_bias_rows(float* x, const float* bias, int rows, int C) {
  pool_.parallel_for(rows, std::max<std::int64_t>(1, kElementGrain / std::max(C, 1)),
                     [&](std::int64_t r0, std::int64_t r1) {
                       for (std::int64_t r = r0; r < r1; ++r)
                         for (int c = 0; c < C; ++c) x[r * C + c] += bias[c];
                     });
}

void CpuBackend::scale(float* x, float factor, std::int64_t n) {
  pool_.parallel_for(n, kElementGrain, [&](std::int64_t i0, std::int64_t i1) {
    cpu::scale_range(x + i0, factor, i1 - i0);
  });
}

void CpuBackend::fill(float* x, float value, std::int64_t n) {
  pool_.parallel_for(n, kElementGrain, [&](std::int64_t i0, std::int64_t i1) { std::fill(x + i0, x + i1, value); });
}

void CpuBackend::tanh_forward(float* out, const float* in, std::int64_t n) {
  pool_.parallel_for(n, kElementGrain, [&](std::int64_t i0, std::int64_t i1) {
    for (std::int64_t i = i0; i < i1; ++i) out[i] = std::tanh(in[i]);
  });
}

double CpuBackend::sum_of_squares(const float* x, std::int64_t n) {
  // Fixed-size chunks summed in a fixed order: the same result for any thread count.
  constexpr std::int64_t kChunk = 1 << 16;
  const std::int64_t chunks = (n + kChunk - 1) / kChunk;
  std::vector<double> partial(static_cast<std::size_t>(chunks), 0.0);
  pool_.parallel_for(chunks, 1, [&](std::int64_t k0, std::int64_t k1) {
    for (std::int64_t k = k0; k < k1; ++k)
      partial[static_cast<std::size_t>(k)] = cpu::sum_of_squares_range(x + k * kChunk, std::min(n - k * kChunk, kChunk));
  });
  double total = 0.0;
  for (double s : partial) total += s;
  return total;
}

void CpuBackend::copy(void* dst, const void* src, std::int64_t bytes) {
  if (bytes > 0 && dst != src) std::memcpy(dst, src, static_cast<std::size_t>(bytes));
}

void CpuBackend::zero(void* dst, std::int64_t bytes) {
  if (bytes > 0) std::memset(dst, 0, static_cast<std::size_t>(bytes));
}

// The 16-bit conversions are memory-bound single passes (core/half.cpp); one thread each.
void CpuBackend::widen(DType dtype, const std::uint16_t* in, float* out, std::int64_t n) {
  half::widen(dtype, in, out, n);
}

void CpuBackend::narrow(DType dtype, const float* in, std::uint16_t* out, std::int64_t n) {
  half::narrow(dtype, in, out, n);
}

void CpuBackend::add_16(DType dtype, std::uint16_t* dst, const std::uint16_t* src, std::int64_t n) {
  half::add_into(dtype, dst, src, n);
}

void CpuBackend::accumulate_16(DType dtype, std::uint16_t* dst, const float* src, std::int64_t n) {
  half::accumulate(dtype, dst, src, n);
}

void CpuBackend::divide(DType dtype, void* x, std::int64_t n, float divisor) {
  if (dtype == DType::f32) {
    auto* f = static_cast<float*>(x);
    for (std::int64_t i = 0; i < n; ++i) f[i] /= divisor;
  } else {
    half::divide(dtype, static_cast<std::uint16_t*>(x), n, divisor);
  }
}

std::int64_t CpuBackend::first_non_finite_16(DType dtype, const std::uint16_t* x, std::int64_t n) {
  return half::first_non_finite(dtype, x, n);
}

double CpuBackend::sum_of_squares_16(DType dtype, const std::uint16_t* x, std::int64_t n) {
  return half::sum_of_squares(dtype, x, n);
}

void CpuBackend::adamw(float* params, const float* grads, float* m, float* v, std::int64_t n,
                       const math::AdamWStep& step) {
  pool_.parallel_for(n, kElementGrain, [&](std::int64_t i0, std::int64_t i1) {
    cpu::adamw_range(params + i0, grads + i0, m + i0, v + i0, i1 - i0, step);
  });
}

}  // namespace shardscope
