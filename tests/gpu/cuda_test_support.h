// SPDX-License-Identifier: GPL-3.0-or-later
// Shared by the GPU suites (tests/gpu/test_cuda_*.cpp): tolerances, device
// arrays and comparisons that say where and by how much.
//
// Tolerances of the CUDA ops against the CPU backend (|gpu - cpu| <= atol +
// rtol |cpu|, inputs ~ N(0, 1)):
//   exact         fill, add, scale, bias rows, embedding forward/backward (and
//                 tensor parallelism's vocabulary slice of them): same
//                 operations in the same order, bit-identical (the GPU groups
//                 the embedding rows by id with a stable sort, keeping row order);
//   element-wise  1e-6 + 1e-5 |x|: tanh, AdamW (device erff/expf/tanhf
//                 are within 2 ulp of glibc's; the shared math is compiled
//                 without FMA contraction on the GPU); GELU 5e-6 + 2e-4 |x|
//                 (its derivative chains a dozen operations, which the CPU's
//                 x86-64-v3/v4 loops contract into FMAs: 5e-5 apart);
//   per-row       1e-5 + 1e-5 |x|: layernorm, softmax, cross-entropy (the GPU
//                 sums a row by warp lanes, the CPU vectorizes: other orders);
//   column sums   1e-5 + 1e-5 |x| over one tile of 256 rows, 1e-4 + 1e-5 |x|
//                 over many: the bias and layernorm weight gradients (the GPU
//                 adds tiles of rows, the CPU row after row);
//   matmul        1e-4 + 1e-5 |x| for fp32 gemms (TF32 off; cuBLAS and OpenBLAS
//                 sum K products in different orders);
//   16-bit gemm   f16: 2e-2 + 4e-3 |x|, bf16: 1e-1 + 2e-2 |x| (inputs exactly
//                 representable, fp32 accumulation, one rounding of the output);
//   sum_of_squares relative 1e-10 (both accumulate exact products in double,
//                 in different orders); the mean loss: 1e-6 relative to the mean
//                 of the GPU's own row losses, the per-row tolerance to the CPU's.
#pragma once

#include <cuda_runtime.h>

#include <QString>
#include <QTest>
#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/rng.h"
#include "engine/test_support.h"

namespace shardscope::test {

struct Tolerance {
  double atol, rtol;
};
constexpr Tolerance kElementwise{1e-6, 1e-5};
// GELU's derivative chains a dozen operations; the CPU backend's loops are
// compiled with FMA contraction (x86-64-v3/v4 clones) and the GPU's with
// --fmad=false, so they differ by a few ulps per operation (5e-5 seen under
// the CPU emulation of the kernels, tests/engine/cuda_emulation). Near
// x = -0.75 the derivative is the difference of two terms of about 0.5 that
// nearly cancel: a few ulps of those terms (2e-6 seen) are the absolute part.
constexpr Tolerance kGelu{5e-6, 2e-4};
constexpr Tolerance kRow{1e-5, 1e-5};
constexpr Tolerance kMatmul{1e-4, 1e-5};
constexpr Tolerance kAttention{1e-4, 1e-4};
constexpr Tolerance kColumnSum{1e-4, 1e-5};  // sums over many tiles of rows, in another order than the CPU

void cuda_check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(status));
}

// A device copy of a host vector; read back with host().
template <typename T>
class DeviceArray {
 public:
  explicit DeviceArray(const std::vector<T>& values) : n_(values.size()) {
    cuda_check(cudaMalloc(reinterpret_cast<void**>(&data_), std::max<std::size_t>(n_, 1) * sizeof(T)), "cudaMalloc");
    if (n_ > 0) cuda_check(cudaMemcpy(data_, values.data(), n_ * sizeof(T), cudaMemcpyHostToDevice), "cudaMemcpy");
  }
  ~DeviceArray() { cudaFree(data_); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  T* get() const { return data_; }
  std::vector<T> host() const {
    std::vector<T> values(n_);
    if (n_ > 0) cuda_check(cudaMemcpy(values.data(), data_, n_ * sizeof(T), cudaMemcpyDeviceToHost), "cudaMemcpy");
    return values;
  }

 private:
  T* data_ = nullptr;
  std::size_t n_ = 0;
};

std::vector<float> randoms(std::size_t n, std::uint64_t seed, float scale = 1.0f) {
  return random_vector(n, seed, scale);
}

std::vector<std::int32_t> random_ints(std::size_t n, std::uint64_t seed, int bound) {
  Rng rng(seed);
  std::vector<std::int32_t> v(n);
  for (auto& x : v) x = static_cast<std::int32_t>(rng.next_u64() % static_cast<std::uint64_t>(bound));
  return v;
}

// Fails the current test unless gpu matches cpu within the tolerance; says where and by how much.
#define COMPARE_NEAR(what, gpu, cpu, tol)                                                                    \
  do {                                                                                                       \
    const std::vector<float>& g_ = (gpu);                                                                    \
    const std::vector<float>& c_ = (cpu);                                                                    \
    QCOMPARE(g_.size(), c_.size());                                                                          \
    std::size_t at_ = 0;                                                                                     \
    const double worst_ = worst_mismatch(g_.data(), c_.data(), g_.size(), (tol).atol, (tol).rtol, &at_);     \
    QVERIFY2(worst_ <= 1.0, qPrintable(QString("%1: element %2 gpu %3 cpu %4 (%5x the tolerance)")           \
                                           .arg(what)                                                        \
                                           .arg(at_)                                                         \
                                           .arg(static_cast<double>(g_.empty() ? 0.0f : g_[at_]), 0, 'g', 9) \
                                           .arg(static_cast<double>(c_.empty() ? 0.0f : c_[at_]), 0, 'g', 9) \
                                           .arg(worst_)));                                                   \
  } while (0)

#define COMPARE_EXACT(what, gpu, cpu)                                                 \
  do {                                                                                \
    const std::vector<float>& g_ = (gpu);                                             \
    const std::vector<float>& c_ = (cpu);                                             \
    QCOMPARE(g_.size(), c_.size());                                                   \
    for (std::size_t i_ = 0; i_ < g_.size(); ++i_)                                    \
      if (std::memcmp(&g_[i_], &c_[i_], sizeof(float)) != 0)                          \
        QFAIL(qPrintable(QString("%1: element %2 gpu %3 cpu %4 (bit-exact expected)") \
                             .arg(what)                                               \
                             .arg(i_)                                                 \
                             .arg(static_cast<double>(g_[i_]), 0, 'g', 9)             \
                             .arg(static_cast<double>(c_[i_]), 0, 'g', 9)));          \
  } while (0)

}  // namespace shardscope::test
