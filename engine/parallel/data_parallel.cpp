// SPDX-License-Identifier: GPL-3.0-or-later
#include "parallel/data_parallel.h"

#include <cstring>

namespace shardscope {

void replicate_parameters(Communicator& comm, float* params, std::int64_t n, const CommTag& tag) {
  comm.broadcast(params, n, /*root=*/0, tag);
}

void scatter_tokens(Communicator& comm, const std::vector<std::int32_t>& all, std::vector<std::int32_t>& mine,
                    std::int64_t count, const CommTag& tag) {
  // Token ids travel as 32-bit patterns in float slots: scatter only copies bytes.
  static_assert(sizeof(float) == sizeof(std::int32_t));
  mine.resize(static_cast<std::size_t>(count));
  const float* send = comm.rank() == 0 ? reinterpret_cast<const float*>(all.data()) : nullptr;
  comm.scatter(send, reinterpret_cast<float*>(mine.data()), count, /*root=*/0, tag);
}

void reduce_gradients_to_master(Communicator& comm, float* grads, std::int64_t n, Buffer& gather_buffer,
                                const CommTag& tag) {
  float* all = comm.rank() == 0 ? gather_buffer.floats() : nullptr;
  comm.gather(grads, all, n, /*root=*/0, tag);
  if (comm.rank() != 0) return;
  // Sum in rank order, then average: what the master's reduce-add does.
  const int size = comm.size();
  std::memcpy(grads, all, static_cast<std::size_t>(n) * sizeof(float));
  for (int r = 1; r < size; ++r) {
    const float* part = all + static_cast<std::int64_t>(r) * n;
    for (std::int64_t i = 0; i < n; ++i) grads[i] += part[i];
  }
  const float inv = 1.0f / static_cast<float>(size);
  for (std::int64_t i = 0; i < n; ++i) grads[i] *= inv;
}

}  // namespace shardscope
