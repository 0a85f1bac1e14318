// SPDX-License-Identifier: GPL-3.0-or-later
// Stand-in for nvcuda::wmma under the CPU emulation (cuda_emulation.h): 16x16x16
// fragments as plain float matrices. Loads and stores check the hardware's
// requirements; mma_sync sums in index order in fp32; only lane 0 computes
// and stores.
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>

#include "cuda_bf16.h"
#include "cuda_emulation.h"
#include "cuda_fp16.h"

namespace nvcuda::wmma {

struct row_major {};
struct col_major {};
struct matrix_a {};
struct matrix_b {};
struct accumulator {};
enum layout_t { mem_row_major, mem_col_major };

template <typename Use, int M, int N, int K, typename T, typename Layout = void>
struct fragment {
  static_assert(M == 16 && N == 16 && K == 16, "the emulation has 16x16x16 fragments only");
  float x[16 * 16];  // element (r, c) at r * 16 + c
};

namespace detail {
template <typename T>
void check(const T* p, unsigned ldm, const char* what) {
  if (reinterpret_cast<std::uintptr_t>(p) % 32 != 0)
    cuda_emulation::fail(std::string(what) + ": pointer not 256-bit aligned");
  const unsigned multiple = sizeof(T) == 2 ? 8 : 4;
  if (ldm % multiple != 0)
    cuda_emulation::fail(std::string(what) + ": leading dimension " + std::to_string(ldm) + " is not a multiple of " +
                         std::to_string(multiple));
}
template <typename Layout>
unsigned offset(int r, int c, unsigned ldm) {
  return std::is_same_v<Layout, row_major> ? r * ldm + c : c * ldm + r;
}
}  // namespace detail

// Only lane 0 computes a warp's fragments (the others would compute the same
// values, and only lane 0 stores): the kernels never read fragment elements,
// so the other lanes' fragments are never seen. The checks run in every lane.
inline bool computing_lane() {
  return threadIdx.x % 32 == 0;
}

template <typename Use, typename T, typename Layout>
void load_matrix_sync(fragment<Use, 16, 16, 16, T, Layout>& f, const T* p, unsigned ldm) {
  detail::check(p, ldm, "load_matrix_sync");
  if (!computing_lane()) return;
  for (int r = 0; r < 16; ++r)
    for (int c = 0; c < 16; ++c) f.x[r * 16 + c] = emulated_to_float(p[detail::offset<Layout>(r, c, ldm)]);
}

inline void load_matrix_sync(fragment<accumulator, 16, 16, 16, float>& f, const float* p, unsigned ldm,
                             layout_t layout) {
  detail::check(p, ldm, "load_matrix_sync (accumulator)");
  if (!computing_lane()) return;
  for (int r = 0; r < 16; ++r)
    for (int c = 0; c < 16; ++c) f.x[r * 16 + c] = p[layout == mem_row_major ? r * ldm + c : c * ldm + r];
}

inline void store_matrix_sync(float* p, const fragment<accumulator, 16, 16, 16, float>& f, unsigned ldm,
                              layout_t layout) {
  detail::check(p, ldm, "store_matrix_sync");
  if (!computing_lane()) return;  // the warp's one copy
  for (int r = 0; r < 16; ++r)
    for (int c = 0; c < 16; ++c) p[layout == mem_row_major ? r * ldm + c : c * ldm + r] = f.x[r * 16 + c];
}

inline void fill_fragment(fragment<accumulator, 16, 16, 16, float>& f, float value) {
  if (!computing_lane()) return;
  for (float& v : f.x) v = value;
}

template <typename T, typename LayoutA, typename LayoutB>
void mma_sync(fragment<accumulator, 16, 16, 16, float>& d, const fragment<matrix_a, 16, 16, 16, T, LayoutA>& a,
              const fragment<matrix_b, 16, 16, 16, T, LayoutB>& b, const fragment<accumulator, 16, 16, 16, float>& c) {
  if (!computing_lane()) return;
  fragment<accumulator, 16, 16, 16, float> out;
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 16; ++j) {
      float sum = c.x[i * 16 + j];
      for (int k = 0; k < 16; ++k) sum += a.x[i * 16 + k] * b.x[k * 16 + j];
      out.x[i * 16 + j] = sum;
    }
  d = out;
}

}  // namespace nvcuda::wmma
