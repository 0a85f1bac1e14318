// SPDX-License-Identifier: GPL-3.0-or-later
// Stand-in for cuBLAS under the CPU emulation (cuda_emulation.h): the calls
// the CUDA backend makes, as plain column-major loops. Each product sums in
// index order in fp32; beta = 0 never reads C (cuBLAS's rule, and the
// emulated device memory starts as garbage). Compute types round the operands
// as the tensor cores would: FAST_16BF / FAST_16F to bf16 / fp16, TF32 math to
// 10 mantissa bits; 16-bit outputs are rounded to nearest even.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/half.h"
#include "cuda_runtime.h"
#include "data_types.h"

struct cublasContext {
  bool tf32 = false;
  cudaStream_t stream = nullptr;  // the calls run in its order (cuda_runtime.h)
};
using cublasHandle_t = cublasContext*;

enum cublasStatus_t { CUBLAS_STATUS_SUCCESS = 0, CUBLAS_STATUS_INVALID_VALUE = 7, CUBLAS_STATUS_NOT_SUPPORTED = 15 };
enum cublasOperation_t { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1 };
enum cublasMath_t { CUBLAS_DEFAULT_MATH = 0, CUBLAS_TF32_TENSOR_OP_MATH = 3 };
enum cublasComputeType_t {
  CUBLAS_COMPUTE_32F = 68,
  CUBLAS_COMPUTE_32F_FAST_16F = 74,
  CUBLAS_COMPUTE_32F_FAST_16BF = 75,
};
enum cublasGemmAlgo_t { CUBLAS_GEMM_DEFAULT = -1 };

inline const char* cublasGetStatusName(cublasStatus_t s) {
  return s == CUBLAS_STATUS_SUCCESS ? "CUBLAS_STATUS_SUCCESS" : "CUBLAS_STATUS_INVALID_VALUE";
}
inline const char* cublasGetStatusString(cublasStatus_t s) {
  return s == CUBLAS_STATUS_SUCCESS ? "success" : "an invalid numeric parameter was passed";
}

inline cublasStatus_t cublasCreate(cublasHandle_t* handle) {
  *handle = new cublasContext;
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasDestroy(cublasHandle_t handle) {
  delete handle;
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasSetStream(cublasHandle_t handle, cudaStream_t stream) {
  handle->stream = stream;
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode) {
  handle->tf32 = mode == CUBLAS_TF32_TENSOR_OP_MATH;
  return CUBLAS_STATUS_SUCCESS;
}

namespace cuda_emulation::blas {

inline float round_tf32(float x) {  // 10 mantissa bits, nearest even
  std::uint32_t b;
  std::memcpy(&b, &x, sizeof b);
  if ((b & 0x7F800000u) != 0x7F800000u) b = (b + 0xFFFu + ((b >> 13) & 1u)) & ~0x1FFFu;
  std::memcpy(&x, &b, sizeof x);
  return x;
}

enum class Round { none, bf16, fp16, tf32 };

inline float round_operand(float x, Round r) {
  namespace h = shardscope::half;
  switch (r) {
    case Round::bf16:
      return h::bf16_bits_to_float(h::float_to_bf16_bits(x));
    case Round::fp16:
      return h::f16_bits_to_float(h::float_to_f16_bits(x));
    case Round::tf32:
      return round_tf32(x);
    default:
      return x;
  }
}

// cuBLAS's argument checks: sizes not negative, leading dimensions at least
// the stored rows (column-major: op N stores A as m x k, op T as k x m).
inline bool valid(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, int lda, int ldb, int ldc) {
  if (m < 0 || n < 0 || k < 0) return false;
  const int a_rows = ta == CUBLAS_OP_N ? m : k, b_rows = tb == CUBLAS_OP_N ? k : n;
  return lda >= (a_rows > 1 ? a_rows : 1) && ldb >= (b_rows > 1 ? b_rows : 1) && ldc >= (m > 1 ? m : 1);
}

// C (m, n) = alpha op(A) op(B) + beta C, column-major, run on the calling
// thread (the cuBLAS calls below queue it on the handle's stream). The operands are first
// unpacked (and rounded): op(A) as k columns of m contiguous floats, op(B) as
// n columns of k. Each column of C then sums over p in index order, all m of
// its sums at once (a loop the compiler vectorizes; each sum is still the
// same sequence of fp32 adds).
inline void gemm(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, float alpha, const void* A,
                 cudaDataType_t at, int lda, const void* B, cudaDataType_t bt, int ldb, float beta, void* C,
                 cudaDataType_t ct, int ldc, Round round) {
  const std::size_t M = static_cast<std::size_t>(m), K = static_cast<std::size_t>(k);
  std::vector<float> a_columns(M * K), b_columns(static_cast<std::size_t>(n) * K), sums(M);
  for (int p = 0; p < k; ++p)
    for (int i = 0; i < m; ++i) {
      const std::int64_t a =
          ta == CUBLAS_OP_N ? i + static_cast<std::int64_t>(p) * lda : p + static_cast<std::int64_t>(i) * lda;
      a_columns[p * M + i] = round_operand(load(A, a, at), round);
    }
  for (int j = 0; j < n; ++j)
    for (int p = 0; p < k; ++p) {
      const std::int64_t b =
          tb == CUBLAS_OP_N ? p + static_cast<std::int64_t>(j) * ldb : j + static_cast<std::int64_t>(p) * ldb;
      b_columns[j * K + p] = round_operand(load(B, b, bt), round);
    }
  for (int j = 0; j < n; ++j) {
    std::fill(sums.begin(), sums.end(), 0.0f);
    float* const sum = sums.data();
    for (std::size_t p = 0; p < K; ++p) {
      const float b = b_columns[j * K + p];
      const float* const a = a_columns.data() + p * M;
      for (std::size_t i = 0; i < M; ++i) sum[i] += a[i] * b;
    }
    for (int i = 0; i < m; ++i) {
      const std::int64_t c = i + static_cast<std::int64_t>(j) * ldc;
      store(C, c, ct, beta == 0.0f ? alpha * sum[i] : alpha * sum[i] + beta * load(C, c, ct));
    }
  }
}

inline Round rounding(cublasHandle_t handle, cublasComputeType_t compute) {
  if (compute == CUBLAS_COMPUTE_32F_FAST_16BF) return Round::bf16;
  if (compute == CUBLAS_COMPUTE_32F_FAST_16F) return Round::fp16;
  return handle->tf32 ? Round::tf32 : Round::none;
}

}  // namespace cuda_emulation::blas

inline cublasStatus_t cublasSgemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                                  const float* alpha, const float* A, int lda, const float* B, int ldb,
                                  const float* beta, float* C, int ldc) {
  if (!cuda_emulation::blas::valid(ta, tb, m, n, k, lda, ldb, ldc)) return CUBLAS_STATUS_INVALID_VALUE;
  cuda_emulation::check_device_work(h->stream, {A, B, C}, "cublasSgemm");
  const auto round = h->tf32 ? cuda_emulation::blas::Round::tf32 : cuda_emulation::blas::Round::none;
  cuda_emulation::enqueue(h->stream, [=, a = *alpha, b = *beta] {  // scalars read now (host pointer mode)
    cuda_emulation::blas::gemm(ta, tb, m, n, k, a, A, CUDA_R_32F, lda, B, CUDA_R_32F, ldb, b, C, CUDA_R_32F, ldc,
                               round);
  });
  return CUBLAS_STATUS_SUCCESS;
}

inline cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                                                int n, int k, const float* alpha, const float* A, int lda, long long sa,
                                                const float* B, int ldb, long long sb, const float* beta, float* C,
                                                int ldc, long long sc, int batch) {
  for (int i = 0; i < batch; ++i)
    if (const cublasStatus_t s =
            cublasSgemm(h, ta, tb, m, n, k, alpha, A + i * sa, lda, B + i * sb, ldb, beta, C + i * sc, ldc);
        s != CUBLAS_STATUS_SUCCESS)
      return s;
  return CUBLAS_STATUS_SUCCESS;
}

inline cublasStatus_t cublasGemmEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                                   const void* alpha, const void* A, cudaDataType_t at, int lda, const void* B,
                                   cudaDataType_t bt, int ldb, const void* beta, void* C, cudaDataType_t ct, int ldc,
                                   cublasComputeType_t compute, cublasGemmAlgo_t) {
  if (!cuda_emulation::blas::valid(ta, tb, m, n, k, lda, ldb, ldc)) return CUBLAS_STATUS_INVALID_VALUE;
  cuda_emulation::check_device_work(h->stream, {A, B, C}, "cublasGemmEx");
  const auto round = cuda_emulation::blas::rounding(h, compute);
  cuda_emulation::enqueue(h->stream, [=, a = *static_cast<const float*>(alpha), b = *static_cast<const float*>(beta)] {
    cuda_emulation::blas::gemm(ta, tb, m, n, k, a, A, at, lda, B, bt, ldb, b, C, ct, ldc, round);
  });
  return CUBLAS_STATUS_SUCCESS;
}

inline cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                                                 int n, int k, const void* alpha, const void* A, cudaDataType_t at,
                                                 int lda, long long sa, const void* B, cudaDataType_t bt, int ldb,
                                                 long long sb, const void* beta, void* C, cudaDataType_t ct, int ldc,
                                                 long long sc, int batch, cublasComputeType_t compute,
                                                 cublasGemmAlgo_t algo) {
  using cuda_emulation::element_bytes;
  for (int i = 0; i < batch; ++i)
    if (const cublasStatus_t s =
            cublasGemmEx(h, ta, tb, m, n, k, alpha, static_cast<const char*>(A) + i * sa * element_bytes(at), at, lda,
                         static_cast<const char*>(B) + i * sb * element_bytes(bt), bt, ldb, beta,
                         static_cast<char*>(C) + i * sc * element_bytes(ct), ct, ldc, compute, algo);
        s != CUBLAS_STATUS_SUCCESS)
      return s;
  return CUBLAS_STATUS_SUCCESS;
}
