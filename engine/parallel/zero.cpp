// SPDX-License-Identifier: GPL-3.0-or-later
#include "parallel/zero.h"

#include <algorithm>
#include <cstring>

namespace shardscope {

void all_gather_parameter_shards(Communicator& comm, Backend& backend, void* params, DType dtype,
                                 const ZeroPartition& part, Buffer& staging, const CommTag& tag) {
  const int dp = comm.size();
  const auto esize = static_cast<std::int64_t>(dtype_size(dtype));
  auto* p = static_cast<std::byte*>(params);
  if (part.shard_size * dp == part.total) {  // in place, as NCCL allows: send is our slot of recv
    comm.all_gather(p + part.begin * esize, p, part.shard_size, dtype, tag);
    return;
  }
  auto* send = static_cast<std::byte*>(staging.data());
  std::byte* recv = send + part.shard_size * esize;
  backend.zero(send, part.shard_size * esize);
  backend.copy(send, p + part.begin * esize, (part.end - part.begin) * esize);
  comm.all_gather(send, recv, part.shard_size, dtype, tag);
  backend.copy(p, recv, part.total * esize);
}

}  // namespace shardscope
