// SPDX-License-Identifier: GPL-3.0-or-later
#include "parallel/data_parallel.h"

#include <algorithm>
#include <cstring>

#include "core/half.h"

namespace shardscope {

void replicate_parameters(Communicator& comm, void* params, std::int64_t n, DType dtype, const CommTag& tag) {
  comm.broadcast(params, n, dtype, /*root=*/0, tag);
}

void scatter_tokens(Communicator& comm, const std::vector<std::int32_t>& all, std::vector<std::int32_t>& mine,
                    std::int64_t count, const CommTag& tag) {
  // Token ids travel as 32-bit patterns in float slots: scatter only copies bytes.
  static_assert(sizeof(float) == sizeof(std::int32_t));
  mine.resize(static_cast<std::size_t>(count));
  const float* send = comm.rank() == 0 ? reinterpret_cast<const float*>(all.data()) : nullptr;
  comm.scatter(send, reinterpret_cast<float*>(mine.data()), count, /*root=*/0, tag);
}

void reduce_gradients_to_master(Communicator& comm, void* grads, std::int64_t n, DType dtype, Buffer& gather_buffer,
                                const CommTag& tag) {
  void* all = comm.rank() == 0 ? gather_buffer.data() : nullptr;
  comm.gather(grads, all, n, dtype, /*root=*/0, tag);
  if (comm.rank() != 0) return;
  // Sum in rank order, then average: what the master's reduce-add does.
  const int size = comm.size();
  const float inv = 1.0f / static_cast<float>(size);
  if (dtype == DType::f32) {
    auto* g = static_cast<float*>(grads);
    const auto* parts = static_cast<const float*>(all);
    std::memcpy(g, parts, static_cast<std::size_t>(n) * sizeof(float));
    for (int r = 1; r < size; ++r) {
      const float* part = parts + static_cast<std::int64_t>(r) * n;
      for (std::int64_t i = 0; i < n; ++i) g[i] += part[i];
    }
    for (std::int64_t i = 0; i < n; ++i) g[i] *= inv;
    return;
  }
  // 16 bits: a block at a time, widened, summed and averaged in f32, rounded once.
  constexpr std::int64_t kBlock = 4096;
  float sum[kBlock], part[kBlock];
  auto* g = static_cast<std::uint16_t*>(grads);
  const auto* parts = static_cast<const std::uint16_t*>(all);
  for (std::int64_t begin = 0; begin < n; begin += kBlock) {
    const std::int64_t len = std::min(kBlock, n - begin);
    half::widen(dtype, parts + begin, sum, len);
    for (int r = 1; r < size; ++r) {
      half::widen(dtype, parts + static_cast<std::int64_t>(r) * n + begin, part, len);
      for (std::int64_t i = 0; i < len; ++i) sum[i] += part[i];
    }
    for (std::int64_t i = 0; i < len; ++i) sum[i] *= inv;
    half::narrow(dtype, sum, g + begin, len);
  }
}

}  // namespace shardscope
