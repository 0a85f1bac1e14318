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
  const CommTag parameters = with_purpose(tag, CommPurpose::parameters);
  if (part.shard_size * dp == part.total) {  // in place, as NCCL allows: send is our slot of recv
    comm.all_gather(p + part.begin * esize, p, part.shard_size, dtype, parameters);
    return;
  }
  auto* send = static_cast<std::byte*>(staging.data());
  std::byte* recv = send + part.shard_size * esize;
  backend.zero(send, part.shard_size * esize);
  backend.copy(send, p + part.begin * esize, (part.end - part.begin) * esize);
  comm.all_gather(send, recv, part.shard_size, dtype, parameters);
  backend.copy(p, recv, part.total * esize);
}

void reduce_scatter_gradient_shards(Communicator& comm, Backend& backend, void* grads, DType dtype,
                                    const ZeroPartition& part, Buffer& staging, const CommTag& tag) {
  const int dp = comm.size();
  const auto esize = static_cast<std::int64_t>(dtype_size(dtype));
  auto* g = static_cast<std::byte*>(grads);
  const CommTag gradients = with_purpose(tag, CommPurpose::gradients);
  const std::int64_t mine = (part.end - part.begin) * esize;
  if (part.shard_size * dp == part.total) {  // in place: our shard of send receives the average
    comm.reduce_scatter(g, g + part.begin * esize, part.shard_size, dtype, ReduceOp::average, gradients);
    return;
  }
  // Padded: the whole gradient, zeros after Ψ, then our slot back into grads.
  auto* padded = static_cast<std::byte*>(staging.data());
  backend.copy(padded, g, part.total * esize);
  backend.zero(padded + part.total * esize, (part.shard_size * dp - part.total) * esize);
  std::byte* slot = padded + static_cast<std::int64_t>(comm.rank()) * part.shard_size * esize;
  comm.reduce_scatter(padded, slot, part.shard_size, dtype, ReduceOp::average, gradients);
  if (mine > 0) backend.copy(g + part.begin * esize, slot, mine);
}

}  // namespace shardscope
