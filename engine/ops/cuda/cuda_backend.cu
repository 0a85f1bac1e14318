// SPDX-License-Identifier: GPL-3.0-or-later
// The CUDA backend (cuda_backend.h). Launch strategy, kept simple and
// deterministic (faster variants belong in bench/gpu, measured first):
//   - element-wise ops: grid-stride loops, one element per thread step;
//   - per-row ops (layernorm, softmax, cross-entropy): a warp or a block per
//     row over the ops/math.h per-element math, row sums in a fixed order
//     (cuda_row_kernels.cu);
//   - sums over rows (bias, layernorm weight and embedding gradients): tiled
//     two-pass column reductions, and a stable sort grouping the embedding
//     rows by id; no float atomics (cuda_column_sums.cu);
//   - sums over everything (loss mean, sum of squares): fixed grid, per-block
//     double partials, one final block: the same result on every run.
// This file is compiled with --fmad=false, so the shared math is rounded as
// on the host (no fused multiply-add contraction).
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "ops/cuda/cuda_backend.h"
#include "ops/cuda/cuda_common.cuh"
#include "ops/cuda/cuda_flash_attention.cuh"
#include "ops/cuda/cuda_row_kernels.cuh"
#include "ops/math.h"

namespace shardscope {

namespace {

using math::AdamWStep;
using math::GeluKind;

using namespace cuda_detail;

// The compute type of a mixed-precision gemm on fp32 storage, or
// CUBLAS_COMPUTE_32F for the plain fp32 paths (full fp32 or TF32 by math mode).
cublasComputeType_t fast_16bit_compute(GemmMath math) {
  if (math == GemmMath::bf16) return CUBLAS_COMPUTE_32F_FAST_16BF;
  if (math == GemmMath::fp16) return CUBLAS_COMPUTE_32F_FAST_16F;
  return CUBLAS_COMPUTE_32F;
}

cublasOperation_t to_cublas(Transpose t) {
  return t == Transpose::yes ? CUBLAS_OP_T : CUBLAS_OP_N;
}

// ---- element-wise kernels ----------------------------------------------------------

__global__ void add_kernel(float* out, const float* a, const float* b, long long n) {
  SS_GRID_STRIDE(i, n) out[i] = a[i] + b[i];
}

__global__ void add_bias_rows_kernel(float* x, const float* bias, long long n, int C) {
  SS_GRID_STRIDE(i, n) x[i] += bias[i % C];
}

__global__ void scale_kernel(float* x, float factor, long long n) {
  SS_GRID_STRIDE(i, n) x[i] *= factor;
}

__global__ void fill_kernel(float* x, float value, long long n) {
  SS_GRID_STRIDE(i, n) x[i] = value;
}

__global__ void tanh_kernel(float* out, const float* in, long long n) {
  SS_GRID_STRIDE(i, n) out[i] = tanhf(in[i]);
}

__global__ void gelu_forward_kernel(float* out, const float* in, long long n, GeluKind kind) {
  SS_GRID_STRIDE(i, n) out[i] = math::gelu(in[i], kind);
}

__global__ void gelu_backward_kernel(float* d_in, const float* d_out, const float* in, long long n, GeluKind kind) {
  SS_GRID_STRIDE(i, n) d_in[i] = d_out[i] * math::gelu_grad(in[i], kind);
}

__global__ void adamw_kernel(float* p, const float* g, float* m, float* v, long long n, AdamWStep step) {
  SS_GRID_STRIDE(i, n) math::adamw_element(p + i, g[i], m + i, v + i, step);
}

// ---- embedding ------------------------------------------------------------------------

__global__ void embedding_forward_kernel(float* out, const int* ids, const int* type_ids, const float* tokens,
                                         const float* positions, const float* types, int T, int C, long long n) {
  SS_GRID_STRIDE(i, n) {
    const long long r = i / C;
    const long long c = i % C;
    const float tok = tokens[static_cast<long long>(ids[r]) * C + c];
    const float pos = positions[(r % T) * C + c];
    out[i] = tok + pos + (types != nullptr ? types[static_cast<long long>(type_ids[r]) * C + c] : 0.0f);
  }
}

// ---- deterministic reductions in double ---------------------------------------------------

__global__ void sum_of_squares_partial_kernel(double* partials, const float* x, long long n) {
  double s = 0.0;
  SS_GRID_STRIDE(i, n) s += static_cast<double>(x[i]) * x[i];
  const double total = block_sum(s);
  if (threadIdx.x == 0) partials[blockIdx.x] = total;
}

// Loss mean over counted rows: partial sums of losses and counts of targets >= 0.
__global__ void loss_partial_kernel(double* partials, const float* losses, const int* targets, long long rows) {
  double s = 0.0;
  double counted = 0.0;
  SS_GRID_STRIDE(r, rows) {
    if (targets[r] < 0) continue;
    s += losses[r];
    counted += 1.0;
  }
  const double total = block_sum(s);
  const double count = block_sum(counted);
  if (threadIdx.x == 0) {
    partials[2 * blockIdx.x] = total;
    partials[2 * blockIdx.x + 1] = count;
  }
}

// Sums `count` groups of `width` doubles (strided by width) into out[0..width).
__global__ void sum_partials_kernel(double* out, const double* partials, int count, int width) {
  for (int w = 0; w < width; ++w) {
    double s = 0.0;
    for (int i = static_cast<int>(threadIdx.x); i < count; i += kThreads) s += partials[i * width + w];
    const double total = block_sum(s);
    if (threadIdx.x == 0) out[w] = total;
  }
}

constexpr std::size_t kResultBytes = 2 * kReduceBlocks * sizeof(double) + 2 * sizeof(double);

}  // namespace

// ---- construction ------------------------------------------------------------------------

CudaBackend::CudaBackend(const CudaBackendOptions& options) : device_(options.device), math_(options.math) {
  const char* op = "CudaBackend()";
  int count = 0;
  check(cudaGetDeviceCount(&count), "cudaGetDeviceCount", op);
  if (device_ < 0 || device_ >= count)
    throw std::runtime_error("CUDA backend: device " + std::to_string(device_) + " does not exist (" +
                             std::to_string(count) + " GPUs found)");
  make_current(op);
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, device_), "cudaGetDeviceProperties", op);
  device_name_ = prop.name;
  cudaStream_t stream = nullptr;
  check(cudaStreamCreate(&stream), "cudaStreamCreate", op);  // blocking: ordered with cudaMemcpy
  stream_ = stream;
  cublasHandle_t handle = nullptr;
  try {
    check(cublasCreate(&handle), "cublasCreate", op);
    cublas_ = handle;
    check(cublasSetStream(handle, stream_), "cublasSetStream", op);
    // CUBLAS_DEFAULT_MATH keeps fp32 gemms in full fp32 (no TF32 tensor cores).
    check(cublasSetMathMode(handle, options.math == GemmMath::tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH),
          "cublasSetMathMode", op);
    check(cudaMalloc(&result_, kResultBytes), "cudaMalloc", op);
  } catch (...) {
    if (cublas_ != nullptr) cublasDestroy(cublas_);
    cudaStreamDestroy(stream_);
    throw;
  }
}

CudaBackend::~CudaBackend() {
  // Destructors never throw: errors here (a dead context) are ignored.
  cudaSetDevice(device_);
  cudaStreamSynchronize(stream_);
  cudaFree(workspace_);
  cudaFree(result_);
  cublasDestroy(cublas_);
  cudaStreamDestroy(stream_);
}

std::string CudaBackend::name() const {
  return "cuda:" + std::to_string(device_) + " (" + device_name_ + ")";
}

void CudaBackend::make_current(const char* op) const {
  check(cudaSetDevice(device_), "cudaSetDevice", op);
}

void CudaBackend::synchronize() {
  make_current("synchronize");
  check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize", "synchronize");
}

void* CudaBackend::workspace(std::size_t bytes, const char* op) {
  if (bytes <= workspace_bytes_) return workspace_;
  make_current(op);
  // The old workspace may still be read by queued kernels: free it only after they ran.
  check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize", op);
  check(cudaFree(workspace_), "cudaFree", op);
  workspace_ = nullptr;
  workspace_bytes_ = 0;
  check(cudaMalloc(&workspace_, bytes), "cudaMalloc", op);
  workspace_bytes_ = bytes;
  return workspace_;
}

// ---- matmul (row-major through column-major cuBLAS) ------------------------------------------
// A row-major (M, N) matrix with leading dimension ld is, read column-major, its
// transpose (N, M) with the same ld. So C = op(A) op(B) row-major is
// C^T = op(B)^T op(A)^T column-major: cuBLAS gets B first, then A, with N and M swapped.

void CudaBackend::gemm(Transpose trans_a, Transpose trans_b, int M, int N, int K, float alpha, const float* A, int lda,
                       const float* B, int ldb, float beta, float* C, int ldc) {
  if (M <= 0 || N <= 0) return;
  make_current("gemm");
  if (const cublasComputeType_t fast = fast_16bit_compute(math_); fast != CUBLAS_COMPUTE_32F) {
    check(cublasGemmEx(cublas_, to_cublas(trans_b), to_cublas(trans_a), N, M, K, &alpha, B, CUDA_R_32F, ldb, A,
                       CUDA_R_32F, lda, &beta, C, CUDA_R_32F, ldc, fast, CUBLAS_GEMM_DEFAULT),
          "cublasGemmEx", "gemm");
    return;
  }
  check(cublasSgemm(cublas_, to_cublas(trans_b), to_cublas(trans_a), N, M, K, &alpha, B, ldb, A, lda, &beta, C, ldc),
        "cublasSgemm", "gemm");
}

void CudaBackend::gemm_batched_strided(Transpose trans_a, Transpose trans_b, int M, int N, int K, float alpha,
                                       const float* A, int lda, std::int64_t stride_a, const float* B, int ldb,
                                       std::int64_t stride_b, float beta, float* C, int ldc, std::int64_t stride_c,
                                       int batch) {
  if (M <= 0 || N <= 0 || batch <= 0) return;
  make_current("gemm_batched_strided");
  if (const cublasComputeType_t fast = fast_16bit_compute(math_); fast != CUBLAS_COMPUTE_32F) {
    check(cublasGemmStridedBatchedEx(cublas_, to_cublas(trans_b), to_cublas(trans_a), N, M, K, &alpha, B, CUDA_R_32F,
                                     ldb, stride_b, A, CUDA_R_32F, lda, stride_a, &beta, C, CUDA_R_32F, ldc, stride_c,
                                     batch, fast, CUBLAS_GEMM_DEFAULT),
          "cublasGemmStridedBatchedEx", "gemm_batched_strided");
    return;
  }
  check(cublasSgemmStridedBatched(cublas_, to_cublas(trans_b), to_cublas(trans_a), N, M, K, &alpha, B, ldb, stride_b, A,
                                  lda, stride_a, &beta, C, ldc, stride_c, batch),
        "cublasSgemmStridedBatched", "gemm_batched_strided");
}

void CudaBackend::gemm_16bit(DType dtype, Transpose trans_a, Transpose trans_b, int M, int N, int K, float alpha,
                             const std::uint16_t* A, int lda, const std::uint16_t* B, int ldb, float beta,
                             std::uint16_t* C, int ldc) {
  if (dtype != DType::f16 && dtype != DType::bf16)
    throw std::invalid_argument("CUDA backend: gemm_16bit needs f16 or bf16, got " + std::string(dtype_name(dtype)));
  if (M <= 0 || N <= 0) return;
  make_current("gemm_16bit");
  const cudaDataType_t type = dtype == DType::f16 ? CUDA_R_16F : CUDA_R_16BF;
  check(cublasGemmEx(cublas_, to_cublas(trans_b), to_cublas(trans_a), N, M, K, &alpha, B, type, ldb, A, type, lda,
                     &beta, C, type, ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
        "cublasGemmEx", "gemm_16bit");
}

// ---- linear ------------------------------------------------------------------------------

void CudaBackend::linear_forward(float* out, const float* in, const float* weight, const float* bias, int rows,
                                 int in_f, int out_f) {
  gemm(Transpose::no, Transpose::yes, rows, out_f, in_f, 1.0f, in, in_f, weight, in_f, 0.0f, out, out_f);
  if (bias != nullptr) add_bias_rows(out, bias, rows, out_f);
}

void CudaBackend::linear_backward(float* d_in, float* d_weight, float* d_bias, const float* d_out, const float* in,
                                  const float* weight, int rows, int in_f, int out_f, bool accumulate) {
  if (d_in != nullptr)  // (rows, in_f) = (rows, out_f) @ (out_f, in_f)
    gemm(Transpose::no, Transpose::no, rows, in_f, out_f, 1.0f, d_out, out_f, weight, in_f, accumulate ? 1.0f : 0.0f,
         d_in, in_f);
  // (out_f, in_f) += (rows, out_f)^T @ (rows, in_f)
  if (d_weight != nullptr)
    gemm(Transpose::yes, Transpose::no, out_f, in_f, rows, 1.0f, d_out, out_f, in, in_f, 1.0f, d_weight, in_f);
  if (d_bias != nullptr && out_f > 0 && rows > 0) {
    const char* op = "linear_backward";
    auto* partials = static_cast<float*>(workspace(column_partials_bytes(rows, out_f, 1), op));
    make_current(op);
    column_sums(stream_, d_bias, d_out, rows, out_f, partials, op);
  }
}

// ---- embedding -----------------------------------------------------------------------------

void CudaBackend::embedding_forward(float* out, const std::int32_t* ids, const std::int32_t* type_ids,
                                    const float* tokens, const float* positions, const float* types, int B, int T,
                                    int C) {
  const long long n = static_cast<long long>(B) * T * C;
  if (n <= 0) return;
  make_current("embedding_forward");
  SS_LAUNCH(embedding_forward_kernel, blocks_for(n), kThreads, 0, stream_)
  (out, ids, type_ids, tokens, positions, types, T, C, n);
  check_launch("embedding_forward_kernel", "embedding_forward");
}

void CudaBackend::embedding_backward(float* d_tokens, float* d_positions, float* d_types, const float* d_out,
                                     const std::int32_t* ids, const std::int32_t* type_ids, int B, int T, int C) {
  if (C <= 0 || B <= 0 || T <= 0) return;
  const char* op = "embedding_backward";
  void* scratch = workspace(cuda_detail::embedding_backward_bytes(static_cast<long long>(B) * T), op);
  make_current(op);
  cuda_detail::embedding_backward(stream_, d_tokens, d_positions, d_types, d_out, ids, type_ids, B, T, C, scratch);
}

// ---- layernorm -------------------------------------------------------------------------------

void CudaBackend::layernorm_forward(float* out, float* mean, float* rstd, const float* in, const float* weight,
                                    const float* bias, int rows, int C, float eps) {
  if (rows <= 0) return;
  make_current("layernorm_forward");
  layernorm_forward_rows(stream_, out, mean, rstd, in, weight, bias, rows, C, eps);
}

void CudaBackend::layernorm_backward(float* d_in, float* d_weight, float* d_bias, const float* d_out, const float* in,
                                     const float* weight, const float* mean, const float* rstd, int rows, int C,
                                     bool accumulate) {
  if (rows <= 0 || C <= 0) return;
  const char* op = "layernorm_backward";
  auto* partials = static_cast<float*>(workspace(column_partials_bytes(rows, C, 2), op));
  make_current(op);
  layernorm_backward_rows(stream_, d_in, d_out, in, weight, mean, rstd, rows, C, accumulate);
  layernorm_param_grads(stream_, d_weight, d_bias, d_out, in, mean, rstd, rows, C, partials);
}

// ---- GELU ------------------------------------------------------------------------------------

void CudaBackend::gelu_forward(float* out, const float* in, std::int64_t n, GeluKind kind) {
  if (n <= 0) return;
  make_current("gelu_forward");
  SS_LAUNCH(gelu_forward_kernel, blocks_for(n), kThreads, 0, stream_)(out, in, n, kind);
  check_launch("gelu_forward_kernel", "gelu_forward");
}

void CudaBackend::gelu_backward(float* d_in, const float* d_out, const float* in, std::int64_t n, GeluKind kind) {
  if (n <= 0) return;
  make_current("gelu_backward");
  SS_LAUNCH(gelu_backward_kernel, blocks_for(n), kThreads, 0, stream_)(d_in, d_out, in, n, kind);
  check_launch("gelu_backward_kernel", "gelu_backward");
}

// ---- attention ---------------------------------------------------------------------------------
// In bf16/fp16 math, fused (cuda_flash_attention.cu): probs keeps the rows'
// log-sum-exp (B, H, T). Otherwise materialized, with the layout of
// cpu_attention.cpp: Q, K, V read in place from qkv (B, T, 3C) with leading
// dimension 3C. One strided-batched gemm per sequence covers its H heads (head
// h starts h*hd columns further: stride hd); P is (B, H, T, T).

namespace {
Flash16 flash_type(GemmMath math) { return math == GemmMath::bf16 ? Flash16::bf16 : Flash16::fp16; }
}  // namespace

AttentionKernel CudaBackend::attention_kernel(int head_dim) const {
  return cuda_attention_kernel(math_ == GemmMath::bf16 || math_ == GemmMath::fp16, head_dim);
}

void CudaBackend::attention_forward(float* out, float* probs, const float* qkv, int B, int T, int C, int H,
                                    const AttentionMask& mask) {
  if (B <= 0 || T <= 0 || H <= 0) return;
  const int hd = C / H;
  if (attention_kernel(hd) == AttentionKernel::fused) {
    make_current("attention_forward");
    flash_attention_forward(stream_, flash_type(math_), out, probs, qkv, B, T, C, H, mask.causal, mask.padding);
    return;
  }
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  const std::int64_t TT = static_cast<std::int64_t>(T) * T;
  for (int b = 0; b < B; ++b) {
    const float* q = qkv + static_cast<std::int64_t>(b) * T * 3 * C;  // (T, hd) per head, ld 3C
    const float* k = q + C;
    float* p = probs + static_cast<std::int64_t>(b) * H * TT;
    gemm_batched_strided(Transpose::no, Transpose::yes, T, T, hd, 1.0f, q, 3 * C, hd, k, 3 * C, hd, 0.0f, p, T, TT,
                         H);  // S = Q K^T
  }
  make_current("attention_forward");
  attention_softmax_rows(stream_, probs, B, H, T, mask.causal, mask.padding, scale);
  for (int b = 0; b < B; ++b) {
    const float* v = qkv + static_cast<std::int64_t>(b) * T * 3 * C + 2 * C;
    const float* p = probs + static_cast<std::int64_t>(b) * H * TT;
    gemm_batched_strided(Transpose::no, Transpose::no, T, hd, T, 1.0f, p, T, TT, v, 3 * C, hd, 0.0f,
                         out + static_cast<std::int64_t>(b) * T * C, C, hd, H);  // Y = P V
  }
}

void CudaBackend::attention_backward(float* d_qkv, float* scratch, const float* d_out, const float* qkv,
                                     const float* out, const float* probs, int B, int T, int C, int H,
                                     const AttentionMask& mask) {
  if (B <= 0 || T <= 0 || H <= 0) return;
  const int hd = C / H;
  if (attention_kernel(hd) == AttentionKernel::fused) {
    make_current("attention_backward");
    flash_attention_backward(stream_, flash_type(math_), d_qkv, scratch, d_out, qkv, out, probs, B, T, C, H,
                             mask.causal, mask.padding);
    return;
  }
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  const std::int64_t TT = static_cast<std::int64_t>(T) * T;
  for (int b = 0; b < B; ++b) {
    const std::int64_t seq = static_cast<std::int64_t>(b) * T * 3 * C;
    const float* v = qkv + seq + 2 * C;
    float* dv = d_qkv + seq + 2 * C;
    const float* dy = d_out + static_cast<std::int64_t>(b) * T * C;  // (T, hd) per head, ld C
    const float* p = probs + static_cast<std::int64_t>(b) * H * TT;
    float* dp = scratch + static_cast<std::int64_t>(b) * H * TT;
    gemm_batched_strided(Transpose::no, Transpose::yes, T, T, hd, 1.0f, dy, C, hd, v, 3 * C, hd, 0.0f, dp, T, TT,
                         H);  // dP = dY V^T
    gemm_batched_strided(Transpose::yes, Transpose::no, T, hd, T, 1.0f, p, T, TT, dy, C, hd, 0.0f, dv, 3 * C, hd,
                         H);  // dV = P^T dY
  }
  const long long rows = static_cast<long long>(B) * H * T;
  make_current("attention_backward");
  // dS = scale P o (dP - rowsum(P o dP)), in place in scratch
  attention_softmax_backward_rows(stream_, probs, scratch, rows, T, scale);
  for (int b = 0; b < B; ++b) {
    const std::int64_t seq = static_cast<std::int64_t>(b) * T * 3 * C;
    const float* q = qkv + seq;
    const float* k = q + C;
    float* dq = d_qkv + seq;
    float* dk = dq + C;
    const float* ds = scratch + static_cast<std::int64_t>(b) * H * TT;
    gemm_batched_strided(Transpose::no, Transpose::no, T, hd, T, 1.0f, ds, T, TT, k, 3 * C, hd, 0.0f, dq, 3 * C, hd,
                         H);  // dQ = dS K
    gemm_batched_strided(Transpose::yes, Transpose::no, T, hd, T, 1.0f, ds, T, TT, q, 3 * C, hd, 0.0f, dk, 3 * C, hd,
                         H);  // dK = dS^T Q
  }
}

// ---- cross-entropy -------------------------------------------------------------------------------

float CudaBackend::cross_entropy_forward(float* losses, const float* logits, const std::int32_t* targets, int rows,
                                         int V) {
  if (rows <= 0) return 0.0f;
  const char* op = "cross_entropy_forward";
  make_current(op);
  cross_entropy_rows(stream_, losses, logits, targets, rows, V);
  auto* partials = static_cast<double*>(result_);
  double* total = partials + 2 * kReduceBlocks;  // [sum, count]
  SS_LAUNCH(loss_partial_kernel, kReduceBlocks, kThreads, 0, stream_)(partials, losses, targets, rows);
  check_launch("loss_partial_kernel", op);
  SS_LAUNCH(sum_partials_kernel, 1, kThreads, 0, stream_)(total, partials, kReduceBlocks, 2);
  check_launch("sum_partials_kernel", op);
  double host[2] = {0.0, 0.0};
  check(cudaMemcpyAsync(host, total, sizeof host, cudaMemcpyDeviceToHost, stream_), "cudaMemcpyAsync", op);
  check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize", op);
  return host[1] > 0.0 ? static_cast<float>(host[0] / host[1]) : 0.0f;
}

void CudaBackend::cross_entropy_backward(float* d_logits, const float* logits, const std::int32_t* targets, int rows,
                                         int V, float dloss_per_row) {
  if (rows <= 0) return;
  make_current("cross_entropy_backward");
  cross_entropy_backward_rows(stream_, d_logits, logits, targets, rows, V, dloss_per_row);
}

// ---- element-wise ------------------------------------------------------------------------------------

void CudaBackend::add(float* out, const float* a, const float* b, std::int64_t n) {
  if (n <= 0) return;
  make_current("add");
  SS_LAUNCH(add_kernel, blocks_for(n), kThreads, 0, stream_)(out, a, b, n);
  check_launch("add_kernel", "add");
}

void CudaBackend::add_bias_rows(float* x, const float* bias, int rows, int C) {
  const long long n = static_cast<long long>(rows) * C;
  if (n <= 0) return;
  make_current("add_bias_rows");
  SS_LAUNCH(add_bias_rows_kernel, blocks_for(n), kThreads, 0, stream_)(x, bias, n, C);
  check_launch("add_bias_rows_kernel", "add_bias_rows");
}

void CudaBackend::scale(float* x, float factor, std::int64_t n) {
  if (n <= 0) return;
  make_current("scale");
  SS_LAUNCH(scale_kernel, blocks_for(n), kThreads, 0, stream_)(x, factor, n);
  check_launch("scale_kernel", "scale");
}

void CudaBackend::fill(float* x, float value, std::int64_t n) {
  if (n <= 0) return;
  make_current("fill");
  SS_LAUNCH(fill_kernel, blocks_for(n), kThreads, 0, stream_)(x, value, n);
  check_launch("fill_kernel", "fill");
}

void CudaBackend::tanh_forward(float* out, const float* in, std::int64_t n) {
  if (n <= 0) return;
  make_current("tanh_forward");
  SS_LAUNCH(tanh_kernel, blocks_for(n), kThreads, 0, stream_)(out, in, n);
  check_launch("tanh_kernel", "tanh_forward");
}

double CudaBackend::sum_of_squares(const float* x, std::int64_t n) {
  if (n <= 0) return 0.0;
  const char* op = "sum_of_squares";
  make_current(op);
  auto* partials = static_cast<double*>(result_);
  double* total = partials + 2 * kReduceBlocks;
  SS_LAUNCH(sum_of_squares_partial_kernel, kReduceBlocks, kThreads, 0, stream_)(partials, x, n);
  check_launch("sum_of_squares_partial_kernel", op);
  return sum_partials_to_host(partials, total, op);
}

double CudaBackend::sum_partials_to_host(const double* partials, double* total, const char* op) {
  SS_LAUNCH(sum_partials_kernel, 1, kThreads, 0, stream_)(total, partials, kReduceBlocks, 1);
  check_launch("sum_partials_kernel", op);
  double host = 0.0;
  check(cudaMemcpyAsync(&host, total, sizeof host, cudaMemcpyDeviceToHost, stream_), "cudaMemcpyAsync", op);
  check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize", op);
  return host;
}

void CudaBackend::adamw(float* params, const float* grads, float* m, float* v, std::int64_t n, const AdamWStep& step) {
  if (n <= 0) return;
  make_current("adamw");
  SS_LAUNCH(adamw_kernel, blocks_for(n), kThreads, 0, stream_)(params, grads, m, v, n, step);
  check_launch("adamw_kernel", "adamw");
}

}  // namespace shardscope
