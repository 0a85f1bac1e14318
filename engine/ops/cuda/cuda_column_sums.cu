// SPDX-License-Identifier: GPL-3.0-or-later
// Sums over rows on the GPU, deterministic without float atomics:
//   - bias and layernorm weight gradients: a two-pass tiled column reduction.
//     Pass 1 gives each block a slice of 32 columns and a tile of kTileRows
//     rows; its 8 row lanes sum rows y, y+8, ... in order, then the lanes are
//     added in lane order into partials (tiles, C). Pass 2 adds the tiles in
//     tile order onto the gradient. The tiling depends only on (rows, C), so
//     the sum order is the same on every run and every GPU (not the CPU's
//     row-by-row order: results agree with it to rounding, not bit for bit);
//   - embedding gradients, which stay bit-identical to the CPU backend:
//     d_positions: one thread per (t, c) adds the B rows of position t in batch
//     order; d_tokens (and d_types): a stable radix sort of (id, row) groups
//     each id's rows in ascending row order, and one block per run of equal
//     ids adds its rows in that order, threads over the channels. A stable sort
//     is a unique permutation, so the order is fixed; no two blocks touch the
//     same table row, so no atomics are needed.
#include <cuda_runtime.h>

#include <algorithm>
#include <cub/device/device_radix_sort.cuh>

#include "ops/cuda/cuda_common.cuh"
#include "ops/cuda/cuda_row_kernels.cuh"

namespace shardscope::cuda_detail {

namespace {

constexpr int kTileRows = 256;                      // rows per tile: fixed, so the sum order never depends on the GPU
constexpr int kTileColumns = 32;                    // one warp wide: each row of a slice is one 128-byte line
constexpr int kRowLanes = kThreads / kTileColumns;  // 8 rows read at once per block

long long tiles_for(int rows) {
  return (static_cast<long long>(rows) + kTileRows - 1) / kTileRows;
}

// x (rows, C) -> partial (tiles, C), and for layernorm also sum dy * xhat -> partial_xhat:
// grid (tiles, column slices), block 32 columns x 8 row lanes.
template <bool kLayernorm>
__global__ void column_partials_kernel(float* partial, float* partial_xhat, const float* x, const float* in,
                                       const float* mean, const float* rstd, int rows, int C) {
  const int column = static_cast<int>(threadIdx.x % kTileColumns);
  const int lane = static_cast<int>(threadIdx.x / kTileColumns);
  const long long tile = blockIdx.x;
  const int c = static_cast<int>(blockIdx.y) * kTileColumns + column;
  const long long r0 = tile * kTileRows;
  const long long r1 = r0 + kTileRows < rows ? r0 + kTileRows : rows;
  float sum = 0.0f, sum_xhat = 0.0f;
  if (c < C) {
    for (long long r = r0 + lane; r < r1; r += kRowLanes) {
      const long long i = r * C + c;
      sum += x[i];
      if constexpr (kLayernorm) sum_xhat += x[i] * (in[i] - mean[r]) * rstd[r];  // dy * xhat, as the CPU
    }
  }
  __shared__ float lanes[kRowLanes][kTileColumns];
  __shared__ float lanes_xhat[kRowLanes][kTileColumns];
  lanes[lane][column] = sum;
  if constexpr (kLayernorm) lanes_xhat[lane][column] = sum_xhat;
  __syncthreads();
  if (lane != 0 || c >= C) return;
  float total = 0.0f, total_xhat = 0.0f;
  for (int l = 0; l < kRowLanes; ++l) {
    total += lanes[l][column];
    if constexpr (kLayernorm) total_xhat += lanes_xhat[l][column];
  }
  partial[tile * C + c] = total;
  if constexpr (kLayernorm) partial_xhat[tile * C + c] = total_xhat;
}

// out (C) += sum of partial (tiles, C) over tiles in tile order: one thread per column.
__global__ void add_column_partials_kernel(float* out, const float* partial, long long tiles, int C) {
  SS_GRID_STRIDE(c, C) {
    float sum = 0.0f;
    for (long long t = 0; t < tiles; ++t) sum += partial[t * C + c];
    out[c] += sum;
  }
}

dim3 column_grid(int rows, int C) {
  return dim3(static_cast<unsigned>(tiles_for(rows)), static_cast<unsigned>((C + kTileColumns - 1) / kTileColumns));
}

// ---- embedding ------------------------------------------------------------------------------------

// d_positions (T, C) += d_out (B, T, C) summed over b in batch order: one thread per (t, c).
__global__ void position_grads_kernel(float* d_positions, const float* d_out, int B, long long TC) {
  SS_GRID_STRIDE(i, TC) {
    float acc = d_positions[i];
    for (int b = 0; b < B; ++b) acc += d_out[b * TC + i];
    d_positions[i] = acc;
  }
}

__global__ void iota_kernel(int* values, long long n) {
  SS_GRID_STRIDE(i, n) values[i] = static_cast<int>(i);
}

// table (V, C) += d_out rows grouped by id: sorted_ids, sorted_rows (n) from a
// stable sort. One block per sorted position; the block at the start of a run
// of equal ids owns that table row and adds the run's d_out rows in order
// (ascending row, the CPU's order), threads over C. Other blocks leave at once.
__global__ void table_grads_kernel(float* table, const float* d_out, const int* sorted_ids, const int* sorted_rows,
                                   long long n, int C) {
  const long long start = blockIdx.x;
  const int id = sorted_ids[start];
  if (start > 0 && sorted_ids[start - 1] == id) return;
  float* row = table + static_cast<long long>(id) * C;
  for (int c = static_cast<int>(threadIdx.x); c < C; c += kThreads) {
    float acc = row[c];
    for (long long k = start; k < n && sorted_ids[k] == id; ++k)
      acc += d_out[static_cast<long long>(sorted_rows[k]) * C + c];
    row[c] = acc;
  }
}

// The workspace of embedding_backward: rows, sorted ids and sorted rows (n ints each), then CUB's scratch.
struct EmbeddingScratch {
  int* rows;
  int* sorted_ids;
  int* sorted_rows;
  void* sort_scratch;
  std::size_t sort_bytes;
};

std::size_t align_up(std::size_t bytes) {
  return (bytes + 255) / 256 * 256;
}

std::size_t radix_sort_bytes(long long n) {
  std::size_t bytes = 0;
  check(cub::DeviceRadixSort::SortPairs(nullptr, bytes, static_cast<const int*>(nullptr), static_cast<int*>(nullptr),
                                        static_cast<const int*>(nullptr), static_cast<int*>(nullptr),
                                        static_cast<int>(n)),
        "cub::DeviceRadixSort::SortPairs", "embedding_backward");
  return bytes;
}

EmbeddingScratch carve(void* workspace, long long n) {
  auto* base = static_cast<char*>(workspace);
  const std::size_t ints = align_up(static_cast<std::size_t>(n) * sizeof(int));
  return {reinterpret_cast<int*>(base), reinterpret_cast<int*>(base + ints), reinterpret_cast<int*>(base + 2 * ints),
          base + 3 * ints, radix_sort_bytes(n)};
}

// table (V, C) += d_out rows by ids (n): sort, then one block per run.
void table_grads(cudaStream_t stream, float* table, const float* d_out, const int* ids, long long n, int C,
                 const EmbeddingScratch& s) {
  std::size_t bytes = s.sort_bytes;
  check(cub::DeviceRadixSort::SortPairs(s.sort_scratch, bytes, ids, s.sorted_ids, s.rows, s.sorted_rows,
                                        static_cast<int>(n), 0, static_cast<int>(sizeof(int) * 8), stream),
        "cub::DeviceRadixSort::SortPairs", "embedding_backward");
  SS_LAUNCH(table_grads_kernel, static_cast<unsigned>(n), kThreads, 0, stream)
  (table, d_out, s.sorted_ids, s.sorted_rows, n, C);
  check_launch("table_grads_kernel", "embedding_backward");
}

}  // namespace

std::size_t column_partials_bytes(int rows, int C, int outputs) {
  return static_cast<std::size_t>(std::max<long long>(1, tiles_for(rows))) * static_cast<std::size_t>(C) *
         static_cast<std::size_t>(outputs) * sizeof(float);
}

void column_sums(cudaStream_t stream, float* out, const float* x, int rows, int C, float* partials, const char* op) {
  if (rows <= 0 || C <= 0) return;
  SS_LAUNCH(column_partials_kernel<false>, column_grid(rows, C), kThreads, 0, stream)
  (partials, nullptr, x, nullptr, nullptr, nullptr, rows, C);
  check_launch("column_partials_kernel", op);
  SS_LAUNCH(add_column_partials_kernel, blocks_for(C), kThreads, 0, stream)(out, partials, tiles_for(rows), C);
  check_launch("add_column_partials_kernel", op);
}

void layernorm_param_grads(cudaStream_t stream, float* d_weight, float* d_bias, const float* d_out, const float* in,
                           const float* mean, const float* rstd, int rows, int C, float* partials) {
  if (rows <= 0 || C <= 0) return;
  const char* op = "layernorm_backward";
  float* partial_bias = partials;
  float* partial_weight = partials + tiles_for(rows) * C;
  SS_LAUNCH(column_partials_kernel<true>, column_grid(rows, C), kThreads, 0, stream)
  (partial_bias, partial_weight, d_out, in, mean, rstd, rows, C);
  check_launch("column_partials_kernel", op);
  SS_LAUNCH(add_column_partials_kernel, blocks_for(C), kThreads, 0, stream)(d_bias, partial_bias, tiles_for(rows), C);
  check_launch("add_column_partials_kernel", op);
  SS_LAUNCH(add_column_partials_kernel, blocks_for(C), kThreads, 0, stream)
  (d_weight, partial_weight, tiles_for(rows), C);
  check_launch("add_column_partials_kernel", op);
}

std::size_t embedding_backward_bytes(long long rows) {
  return 3 * align_up(static_cast<std::size_t>(rows) * sizeof(int)) + radix_sort_bytes(rows);
}

void embedding_backward(cudaStream_t stream, float* d_tokens, float* d_positions, float* d_types, const float* d_out,
                        const std::int32_t* ids, const std::int32_t* type_ids, int B, int T, int C, void* workspace) {
  const long long n = static_cast<long long>(B) * T;
  if (n <= 0 || C <= 0) return;
  const long long TC = static_cast<long long>(T) * C;
  SS_LAUNCH(position_grads_kernel, blocks_for(TC), kThreads, 0, stream)(d_positions, d_out, B, TC);
  check_launch("position_grads_kernel", "embedding_backward");
  const EmbeddingScratch scratch = carve(workspace, n);
  SS_LAUNCH(iota_kernel, blocks_for(n), kThreads, 0, stream)(scratch.rows, n);
  check_launch("iota_kernel", "embedding_backward");
  table_grads(stream, d_tokens, d_out, ids, n, C, scratch);
  if (d_types != nullptr) table_grads(stream, d_types, d_out, type_ids, n, C, scratch);  // same stream: in order
}

}  // namespace shardscope::cuda_detail
