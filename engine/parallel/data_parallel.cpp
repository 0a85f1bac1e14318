// SPDX-License-Identifier: GPL-3.0-or-later
#include "parallel/data_parallel.h"

#include <algorithm>
#include <cstring>

namespace shardscope {

void replicate_parameters(Communicator& comm, void* params, std::int64_t n, DType dtype, const CommTag& tag) {
  comm.broadcast(params, n, dtype, /*root=*/0, with_purpose(tag, CommPurpose::parameters));
}

void scatter_tokens(Communicator& comm, const std::vector<std::int32_t>& all, std::vector<std::int32_t>& mine,
                    std::int64_t count, const CommTag& tag) {
  // Token ids travel as 32-bit patterns in float slots: scatter only copies bytes.
  // They are host values (the model uploads its batch to a device itself).
  static_assert(sizeof(float) == sizeof(std::int32_t));
  mine.resize(static_cast<std::size_t>(count));
  const float* send = comm.rank() == 0 ? reinterpret_cast<const float*>(all.data()) : nullptr;
  comm.scatter_host(send, reinterpret_cast<float*>(mine.data()), count, /*root=*/0, tag);
}

void reduce_gradients_to_master(Communicator& comm, Backend& backend, void* grads, std::int64_t n, DType dtype,
                                Buffer& gather_buffer, const CommTag& tag) {
  void* all = comm.rank() == 0 ? gather_buffer.data() : nullptr;
  comm.gather(grads, all, n, dtype, /*root=*/0, with_purpose(tag, CommPurpose::gradients));
  if (comm.rank() != 0) return;
  // Sum in rank order, then average: what the master's reduce-add does.
  const int size = comm.size();
  const float inv = 1.0f / static_cast<float>(size);
  if (dtype == DType::f32) {
    auto* g = static_cast<float*>(grads);
    const auto* parts = static_cast<const float*>(all);
    backend.copy(g, parts, n * 4);
    for (int r = 1; r < size; ++r) backend.add(g, g, parts + static_cast<std::int64_t>(r) * n, n);
    backend.scale(g, inv, n);
    return;
  }
  // 16 bits: a block at a time, widened, summed and averaged in f32, rounded once.
  const std::int64_t block = std::min<std::int64_t>(n, std::int64_t{1} << 20);
  Buffer sum_buffer(*gather_buffer.ledger(), MemoryCategory::workspace, block * 4);
  Buffer part_buffer(*gather_buffer.ledger(), MemoryCategory::workspace, block * 4);
  auto* sum = static_cast<float*>(sum_buffer.data());
  auto* part = static_cast<float*>(part_buffer.data());
  auto* g = static_cast<std::uint16_t*>(grads);
  const auto* parts = static_cast<const std::uint16_t*>(all);
  for (std::int64_t begin = 0; begin < n; begin += block) {
    const std::int64_t len = std::min(block, n - begin);
    backend.widen(dtype, parts + begin, sum, len);
    for (int r = 1; r < size; ++r) {
      backend.widen(dtype, parts + static_cast<std::int64_t>(r) * n + begin, part, len);
      backend.add(sum, sum, part, len);
    }
    backend.scale(sum, inv, len);
    backend.narrow(dtype, sum, g + begin, len);
  }
}

}  // namespace shardscope
