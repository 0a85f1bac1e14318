// SPDX-License-Identifier: GPL-3.0-or-later
// Stand-in for CUB's DeviceRadixSort::SortPairs under the CPU emulation
// (cuda_emulation.h): a stable sort of (key, value) by the key's bits
// [begin_bit, end_bit), as an LSD radix sort orders them (signed keys as CUB
// does: numerically), queued on the stream. The temporary storage is asked
// for and then ignored.
#pragma once

#include <algorithm>
#include <cstddef>
#include <numeric>
#include <type_traits>
#include <vector>

#include "cuda_runtime.h"

namespace cub {

struct DeviceRadixSort {
  template <typename Key, typename Value, typename Count>
  static cudaError_t SortPairs(void* temp, std::size_t& temp_bytes, const Key* keys_in, Key* keys_out,
                               const Value* values_in, Value* values_out, Count count, int begin_bit = 0,
                               int end_bit = static_cast<int>(sizeof(Key) * 8), cudaStream_t stream = nullptr) {
    if (temp == nullptr) {
      temp_bytes = 1;
      return cudaSuccess;
    }
    cuda_emulation::check_device_work(stream, {keys_in, keys_out, values_in, values_out}, "cub::DeviceRadixSort");
    cuda_emulation::enqueue(stream, [=] { sort(keys_in, keys_out, values_in, values_out, count, begin_bit, end_bit); });
    return cudaSuccess;
  }

 private:
  template <typename Key, typename Value, typename Count>
  static void sort(const Key* keys_in, Key* keys_out, const Value* values_in, Value* values_out, Count count,
                   int begin_bit, int end_bit) {
    using Bits = std::make_unsigned_t<Key>;
    const int width = end_bit - begin_bit;
    const Bits mask = width >= static_cast<int>(sizeof(Bits) * 8) ? static_cast<Bits>(~Bits{0})
                                                                  : static_cast<Bits>((Bits{1} << width) - 1);
    auto radix = [&](Key k) {
      // CUB flips the sign bit of signed keys so that they sort numerically.
      Bits b = static_cast<Bits>(k);
      if constexpr (std::is_signed_v<Key>) b ^= static_cast<Bits>(Bits{1} << (sizeof(Bits) * 8 - 1));
      return static_cast<Bits>((b >> begin_bit) & mask);
    };
    std::vector<std::size_t> order(static_cast<std::size_t>(count));
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return radix(keys_in[a]) < radix(keys_in[b]); });
    std::vector<Key> keys(order.size());
    std::vector<Value> values(order.size());
    for (std::size_t i = 0; i < order.size(); ++i) {
      keys[i] = keys_in[order[i]];
      values[i] = values_in[order[i]];
    }
    std::copy(keys.begin(), keys.end(), keys_out);
    std::copy(values.begin(), values.end(), values_out);
  }
};

}  // namespace cub
