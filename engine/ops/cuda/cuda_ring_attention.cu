// SPDX-License-Identifier: GPL-3.0-or-later
// The CUDA backend's ring attention ops (ops/backend.h; context parallelism,
// model/context_parallel.cpp): ops/ring_attention.h's rows, a thread per
// query row (the forward's merge, dQ) or per key row (dK, dV), each adding in
// the CPU backend's order. Simple and deterministic, not fast: a tiled,
// shared-memory variant would be measured in bench/gpu first.
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "ops/cuda/cuda_backend.h"
#include "ops/cuda/cuda_common.cuh"
#include "ops/ring_attention.h"

namespace shardscope {

namespace {

using namespace cuda_detail;

constexpr int kMaxHeadDim = 256;  // the forward's per-thread partial output

__global__ void ring_attention_forward_kernel(float* out, float* lse, const float* qkv, const float* kv,
                                              RingAttentionBlock block, long long rows) {
  float partial[kMaxHeadDim];
  SS_GRID_STRIDE(r, rows) {  // r = (b H + h) T + i
    const int i = static_cast<int>(r % block.T), bh = static_cast<int>(r / block.T);
    ring_math::forward_row(block, out, lse, qkv, kv, partial, bh / block.H, bh % block.H, i);
  }
}

__global__ void ring_attention_query_kernel(float* d_qkv, const float* qkv, const float* kv, const float* d_out,
                                            const float* lse, const float* row_dot, bool first_block,
                                            RingAttentionBlock block, long long rows) {
  SS_GRID_STRIDE(r, rows) {
    const int i = static_cast<int>(r % block.T), bh = static_cast<int>(r / block.T);
    ring_math::backward_query_row(block, d_qkv, qkv, kv, d_out, lse, row_dot, first_block, bh / block.H, bh % block.H,
                                  i);
  }
}

__global__ void ring_attention_key_kernel(float* d_kv, const float* qkv, const float* kv, const float* d_out,
                                          const float* lse, const float* row_dot, RingAttentionBlock block,
                                          long long rows) {
  SS_GRID_STRIDE(r, rows) {
    const int j = static_cast<int>(r % block.T), bh = static_cast<int>(r / block.T);
    ring_math::backward_key_row(block, d_kv, qkv, kv, d_out, lse, row_dot, bh / block.H, bh % block.H, j);
  }
}

__global__ void attention_row_dot_kernel(float* row_dot, const float* d_out, const float* out, int T, int C, int H,
                                         long long rows) {
  SS_GRID_STRIDE(r, rows) {  // r = (b H + h) T + i
    const long long i = r % T, bh = r / T, b = bh / H, h = bh % H;
    const int hd = C / H;
    const long long at = (b * T + i) * C + h * hd;
    row_dot[r] = ring_math::dot(d_out + at, out + at, hd);
  }
}

__global__ void copy_columns_kernel(float* dst, int dst_stride, const float* src, int src_stride, int width,
                                    long long n) {
  SS_GRID_STRIDE(e, n) {
    const long long r = e / width, c = e % width;
    dst[r * dst_stride + c] = src[r * src_stride + c];
  }
}

long long query_rows(const RingAttentionBlock& block) {
  return static_cast<long long>(block.B) * block.H * block.T;
}

}  // namespace

void CudaBackend::ring_attention_forward(float* out, float* lse, const float* qkv, const float* kv,
                                         const RingAttentionBlock& block) {
  const long long rows = query_rows(block);
  if (rows <= 0) return;
  if (block.C / block.H > kMaxHeadDim)
    throw std::invalid_argument("CUDA backend: ring_attention_forward supports heads of at most " +
                                std::to_string(kMaxHeadDim) + " channels, not " + std::to_string(block.C / block.H));
  make_current("ring_attention_forward");
  SS_LAUNCH(ring_attention_forward_kernel, blocks_for(rows), kThreads, 0, stream_)(out, lse, qkv, kv, block, rows);
  check_launch("ring_attention_forward_kernel", "ring_attention_forward");
}

void CudaBackend::ring_attention_backward(float* d_qkv, float* d_kv, const float* d_out, const float* qkv,
                                          const float* kv, const float* lse, const float* row_dot, bool first_block,
                                          const RingAttentionBlock& block) {
  const long long rows = query_rows(block);
  if (rows <= 0) return;
  make_current("ring_attention_backward");
  SS_LAUNCH(ring_attention_query_kernel, blocks_for(rows), kThreads, 0, stream_)
  (d_qkv, qkv, kv, d_out, lse, row_dot, first_block, block, rows);
  check_launch("ring_attention_query_kernel", "ring_attention_backward");
  SS_LAUNCH(ring_attention_key_kernel, blocks_for(rows), kThreads, 0, stream_)
  (d_kv, qkv, kv, d_out, lse, row_dot, block, rows);
  check_launch("ring_attention_key_kernel", "ring_attention_backward");
}

void CudaBackend::attention_row_dot(float* row_dot, const float* d_out, const float* out, int B, int T, int C, int H) {
  const long long rows = static_cast<long long>(B) * H * T;
  if (rows <= 0) return;
  make_current("attention_row_dot");
  SS_LAUNCH(attention_row_dot_kernel, blocks_for(rows), kThreads, 0, stream_)(row_dot, d_out, out, T, C, H, rows);
  check_launch("attention_row_dot_kernel", "attention_row_dot");
}

void CudaBackend::copy_columns(float* dst, int dst_stride, const float* src, int src_stride, std::int64_t rows,
                               int width) {
  const long long n = static_cast<long long>(rows) * width;
  if (n <= 0) return;
  make_current("copy_columns");
  SS_LAUNCH(copy_columns_kernel, blocks_for(n), kThreads, 0, stream_)(dst, dst_stride, src, src_stride, width, n);
  check_launch("copy_columns_kernel", "copy_columns");
}

}  // namespace shardscope
