// SPDX-License-Identifier: GPL-3.0-or-later
#include "parallel/zero.h"

#include <algorithm>
#include <cstring>

namespace shardscope {

ZeroPartition make_zero_partition(std::int64_t total, int dp, int dp_rank) {
  ZeroPartition p;
  p.total = total;
  p.shard_size = (total + dp - 1) / dp;
  p.begin = std::min(total, dp_rank * p.shard_size);
  p.end = std::min(total, p.begin + p.shard_size);
  return p;
}

void all_gather_parameter_shards(Communicator& comm, float* params, const ZeroPartition& part, Buffer& staging,
                                 const CommTag& tag) {
  const int dp = comm.size();
  if (part.shard_size * dp == part.total) {  // in place, as NCCL allows: send is our slot of recv
    comm.all_gather(params + part.begin, params, part.shard_size, tag);
    return;
  }
  float* send = staging.floats();
  float* recv = send + part.shard_size;
  std::memset(send, 0, static_cast<std::size_t>(part.shard_size) * sizeof(float));
  std::memcpy(send, params + part.begin, static_cast<std::size_t>(part.end - part.begin) * sizeof(float));
  comm.all_gather(send, recv, part.shard_size, tag);
  std::memcpy(params, recv, static_cast<std::size_t>(part.total) * sizeof(float));
}

}  // namespace shardscope
