// SPDX-License-Identifier: GPL-3.0-or-later
// The CUDA backend's memory ops and 16-bit storage (cuda_backend.h): copies and
// fills on the backend's stream, the f32 <-> f16/bf16 casts and the overflow
// scan (core/half.h on the device, bit for bit the host's), 16-bit
// accumulation and the sum of squares of 16-bit gradients. Compiled with
// --fmad=false like cuda_backend.cu.
#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "core/half.h"
#include "ops/cuda/cuda_backend.h"
#include "ops/cuda/cuda_common.cuh"

namespace shardscope {

namespace {

using namespace cuda_detail;

// ---- casts and the overflow check (core/half.h on the device) --------------------------------

__global__ void f32_to_f16_kernel(const float* in, unsigned short* out, long long n) {
  SS_GRID_STRIDE(i, n) out[i] = half::float_to_f16_bits(in[i]);
}
__global__ void f16_to_f32_kernel(const unsigned short* in, float* out, long long n) {
  SS_GRID_STRIDE(i, n) out[i] = half::f16_bits_to_float(in[i]);
}
__global__ void f32_to_bf16_kernel(const float* in, unsigned short* out, long long n) {
  SS_GRID_STRIDE(i, n) out[i] = half::float_to_bf16_bits(in[i]);
}
__global__ void bf16_to_f32_kernel(const unsigned short* in, float* out, long long n) {
  SS_GRID_STRIDE(i, n) out[i] = half::bf16_bits_to_float(in[i]);
}

// first holds the smallest index seen so far (starts at ULLONG_MAX).
template <typename T, typename IsFinite>
__device__ void first_non_finite_impl(unsigned long long* first, const T* values, long long n, IsFinite is_finite) {
  SS_GRID_STRIDE(i, n) {
    if (!is_finite(values[i])) {
      atomicMin(first, static_cast<unsigned long long>(i));
      return;  // later i of this thread are larger
    }
  }
}

__global__ void first_non_finite_f32_kernel(unsigned long long* first, const float* values, long long n) {
  first_non_finite_impl(first, values, n, [](float v) { return half::float_is_finite(v); });
}
__global__ void first_non_finite_f16_kernel(unsigned long long* first, const unsigned short* values, long long n) {
  first_non_finite_impl(first, values, n, [](unsigned short v) { return half::f16_bits_is_finite(v); });
}
__global__ void first_non_finite_bf16_kernel(unsigned long long* first, const unsigned short* values, long long n) {
  first_non_finite_impl(first, values, n, [](unsigned short v) { return half::bf16_bits_is_finite(v); });
}

__global__ void add_f16_kernel(unsigned short* dst, const unsigned short* src, long long n) {
  SS_GRID_STRIDE(i, n)
  dst[i] = half::float_to_f16_bits(half::f16_bits_to_float(dst[i]) + half::f16_bits_to_float(src[i]));
}
__global__ void add_bf16_kernel(unsigned short* dst, const unsigned short* src, long long n) {
  SS_GRID_STRIDE(i, n)
  dst[i] = half::float_to_bf16_bits(half::bf16_bits_to_float(dst[i]) + half::bf16_bits_to_float(src[i]));
}
__global__ void accumulate_f16_kernel(unsigned short* dst, const float* src, long long n) {
  SS_GRID_STRIDE(i, n)
  dst[i] = half::float_to_f16_bits(half::f16_bits_to_float(dst[i]) +
                                   half::f16_bits_to_float(half::float_to_f16_bits(src[i])));
}
__global__ void accumulate_bf16_kernel(unsigned short* dst, const float* src, long long n) {
  SS_GRID_STRIDE(i, n)
  dst[i] = half::float_to_bf16_bits(half::bf16_bits_to_float(dst[i]) +
                                    half::bf16_bits_to_float(half::float_to_bf16_bits(src[i])));
}
__global__ void divide_f32_kernel(float* x, long long n, float divisor) {
  SS_GRID_STRIDE(i, n) x[i] = x[i] / divisor;  // IEEE division (nvcc's default -prec-div=true), as the host
}
__global__ void divide_f16_kernel(unsigned short* x, long long n, float divisor) {
  SS_GRID_STRIDE(i, n) x[i] = half::float_to_f16_bits(half::f16_bits_to_float(x[i]) / divisor);
}
__global__ void divide_bf16_kernel(unsigned short* x, long long n, float divisor) {
  SS_GRID_STRIDE(i, n) x[i] = half::float_to_bf16_bits(half::bf16_bits_to_float(x[i]) / divisor);
}
__global__ void sum_of_squares_16_partial_kernel(double* partials, const unsigned short* x, long long n, bool bf16) {
  double s = 0.0;
  SS_GRID_STRIDE(i, n) {
    const double v = bf16 ? half::bf16_bits_to_float(x[i]) : half::f16_bits_to_float(x[i]);
    s += v * v;
  }
  const double total = block_sum(s);
  if (threadIdx.x == 0) partials[blockIdx.x] = total;
}

}  // namespace

void CudaBackend::copy(void* dst, const void* src, std::int64_t bytes) {
  if (bytes <= 0 || dst == src) return;
  make_current("copy");
  check(cudaMemcpyAsync(dst, src, static_cast<std::size_t>(bytes), cudaMemcpyDeviceToDevice, stream_),
        "cudaMemcpyAsync", "copy");
}

void CudaBackend::upload(void* dst, const void* host_src, std::int64_t bytes) {
  if (bytes <= 0) return;
  make_current("upload");
  // Synchronous for pageable host memory: the caller may reuse host_src at once.
  check(cudaMemcpyAsync(dst, host_src, static_cast<std::size_t>(bytes), cudaMemcpyHostToDevice, stream_),
        "cudaMemcpyAsync", "upload");
  check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize", "upload");
}

void CudaBackend::download(void* host_dst, const void* src, std::int64_t bytes) {
  if (bytes <= 0) return;
  make_current("download");
  check(cudaMemcpyAsync(host_dst, src, static_cast<std::size_t>(bytes), cudaMemcpyDeviceToHost, stream_),
        "cudaMemcpyAsync", "download");
  check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize", "download");
}

void CudaBackend::zero(void* dst, std::int64_t bytes) {
  if (bytes <= 0) return;
  make_current("zero");
  check(cudaMemsetAsync(dst, 0, static_cast<std::size_t>(bytes), stream_), "cudaMemsetAsync", "zero");
}

namespace {
void require_16_bit(DType dtype, const char* op) {
  if (dtype != DType::f16 && dtype != DType::bf16)
    throw std::invalid_argument(std::string(op) + ": 16-bit storage must be f16 or bf16");
}
}  // namespace

void CudaBackend::widen(DType dtype, const std::uint16_t* in, float* out, std::int64_t n) {
  require_16_bit(dtype, "widen");
  if (dtype == DType::f16)
    cuda_f16_to_f32(*this, in, out, n);
  else
    cuda_bf16_to_f32(*this, in, out, n);
}

void CudaBackend::narrow(DType dtype, const float* in, std::uint16_t* out, std::int64_t n) {
  require_16_bit(dtype, "narrow");
  if (dtype == DType::f16)
    cuda_f32_to_f16(*this, in, out, n);
  else
    cuda_f32_to_bf16(*this, in, out, n);
}

void CudaBackend::add_16(DType dtype, std::uint16_t* dst, const std::uint16_t* src, std::int64_t n) {
  require_16_bit(dtype, "add_16");
  if (n <= 0) return;
  make_current("add_16");
  auto* d = reinterpret_cast<unsigned short*>(dst);
  const auto* a = reinterpret_cast<const unsigned short*>(src);
  if (dtype == DType::f16)
    SS_LAUNCH(add_f16_kernel, blocks_for(n), kThreads, 0, stream_)(d, a, n);
  else
    SS_LAUNCH(add_bf16_kernel, blocks_for(n), kThreads, 0, stream_)(d, a, n);
  check_launch("add_16 kernel", "add_16");
}

void CudaBackend::accumulate_16(DType dtype, std::uint16_t* dst, const float* src, std::int64_t n) {
  require_16_bit(dtype, "accumulate_16");
  if (n <= 0) return;
  make_current("accumulate_16");
  auto* d = reinterpret_cast<unsigned short*>(dst);
  if (dtype == DType::f16)
    SS_LAUNCH(accumulate_f16_kernel, blocks_for(n), kThreads, 0, stream_)(d, src, n);
  else
    SS_LAUNCH(accumulate_bf16_kernel, blocks_for(n), kThreads, 0, stream_)(d, src, n);
  check_launch("accumulate_16 kernel", "accumulate_16");
}

void CudaBackend::divide(DType dtype, void* x, std::int64_t n, float divisor) {
  if (n <= 0) return;
  make_current("divide");
  if (dtype == DType::f32) {
    SS_LAUNCH(divide_f32_kernel, blocks_for(n), kThreads, 0, stream_)(static_cast<float*>(x), n, divisor);
  } else {
    require_16_bit(dtype, "divide");
    auto* h = static_cast<unsigned short*>(x);
    if (dtype == DType::f16)
      SS_LAUNCH(divide_f16_kernel, blocks_for(n), kThreads, 0, stream_)(h, n, divisor);
    else
      SS_LAUNCH(divide_bf16_kernel, blocks_for(n), kThreads, 0, stream_)(h, n, divisor);
  }
  check_launch("divide kernel", "divide");
}

std::int64_t CudaBackend::first_non_finite_16(DType dtype, const std::uint16_t* x, std::int64_t n) {
  require_16_bit(dtype, "first_non_finite_16");
  return dtype == DType::f16 ? cuda_first_non_finite_f16(*this, x, n) : cuda_first_non_finite_bf16(*this, x, n);
}

double CudaBackend::sum_of_squares_16(DType dtype, const std::uint16_t* x, std::int64_t n) {
  require_16_bit(dtype, "sum_of_squares_16");
  if (n <= 0) return 0.0;
  const char* op = "sum_of_squares_16";
  make_current(op);
  auto* partials = static_cast<double*>(result_);
  double* total = partials + 2 * kReduceBlocks;
  SS_LAUNCH(sum_of_squares_16_partial_kernel, kReduceBlocks, kThreads, 0, stream_)
  (partials, reinterpret_cast<const unsigned short*>(x), n, dtype == DType::bf16);
  check_launch("sum_of_squares_16_partial_kernel", op);
  return sum_partials_to_host(partials, total, op);
}

// ---- mixed-precision helpers -----------------------------------------------------------------------

namespace {

template <typename Kernel, typename In, typename Out>
void launch_cast(CudaBackend& backend, Kernel kernel, const In* in, Out* out, std::int64_t n, const char* op) {
  if (n <= 0) return;
  check(cudaSetDevice(backend.device()), "cudaSetDevice", op);
  SS_LAUNCH(kernel, blocks_for(n), kThreads, 0, backend.stream())(in, out, n);
  check_launch("cast kernel", op);
}

template <typename Kernel, typename T>
std::int64_t launch_first_non_finite(CudaBackend& backend, Kernel kernel, const T* values, std::int64_t n,
                                     const char* op) {
  if (n <= 0) return -1;
  check(cudaSetDevice(backend.device()), "cudaSetDevice", op);
  auto* first = static_cast<unsigned long long*>(backend.workspace(sizeof(unsigned long long), op));
  check(cudaMemsetAsync(first, 0xFF, sizeof *first, backend.stream()), "cudaMemsetAsync", op);  // ULLONG_MAX
  SS_LAUNCH(kernel, blocks_for(n), kThreads, 0, backend.stream())(first, values, n);
  check_launch("first_non_finite kernel", op);
  unsigned long long host = 0;
  check(cudaMemcpyAsync(&host, first, sizeof host, cudaMemcpyDeviceToHost, backend.stream()), "cudaMemcpyAsync", op);
  check(cudaStreamSynchronize(backend.stream()), "cudaStreamSynchronize", op);
  return host == ~0ull ? -1 : static_cast<std::int64_t>(host);
}

}  // namespace

void cuda_f32_to_f16(CudaBackend& backend, const float* in, std::uint16_t* out, std::int64_t n) {
  launch_cast(backend, f32_to_f16_kernel, in, reinterpret_cast<unsigned short*>(out), n, "cuda_f32_to_f16");
}
void cuda_f16_to_f32(CudaBackend& backend, const std::uint16_t* in, float* out, std::int64_t n) {
  launch_cast(backend, f16_to_f32_kernel, reinterpret_cast<const unsigned short*>(in), out, n, "cuda_f16_to_f32");
}
void cuda_f32_to_bf16(CudaBackend& backend, const float* in, std::uint16_t* out, std::int64_t n) {
  launch_cast(backend, f32_to_bf16_kernel, in, reinterpret_cast<unsigned short*>(out), n, "cuda_f32_to_bf16");
}
void cuda_bf16_to_f32(CudaBackend& backend, const std::uint16_t* in, float* out, std::int64_t n) {
  launch_cast(backend, bf16_to_f32_kernel, reinterpret_cast<const unsigned short*>(in), out, n, "cuda_bf16_to_f32");
}

std::int64_t cuda_first_non_finite(CudaBackend& backend, const float* values, std::int64_t n) {
  return launch_first_non_finite(backend, first_non_finite_f32_kernel, values, n, "cuda_first_non_finite");
}
std::int64_t cuda_first_non_finite_f16(CudaBackend& backend, const std::uint16_t* values, std::int64_t n) {
  return launch_first_non_finite(backend, first_non_finite_f16_kernel, reinterpret_cast<const unsigned short*>(values),
                                 n, "cuda_first_non_finite_f16");
}
std::int64_t cuda_first_non_finite_bf16(CudaBackend& backend, const std::uint16_t* values, std::int64_t n) {
  return launch_first_non_finite(backend, first_non_finite_bf16_kernel, reinterpret_cast<const unsigned short*>(values),
                                 n, "cuda_first_non_finite_bf16");
}

}  // namespace shardscope
