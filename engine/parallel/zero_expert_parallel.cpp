// SPDX-License-Identifier: GPL-3.0-or-later
#include "parallel/zero_expert_parallel.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace shardscope {

std::vector<FlatRun> parameter_runs(const ParameterLayout& layout, bool experts) {
  std::vector<FlatRun> runs;
  for (const ParameterEntry& e : layout.entries()) {
    if (e.expert != experts || e.numel == 0) continue;
    if (!runs.empty() && runs.back().end == e.offset)
      runs.back().end += e.numel;
    else
      runs.push_back({e.offset, e.offset + e.numel});
  }
  return runs;
}

std::vector<FlatRun> space_ranges(const std::vector<FlatRun>& runs, std::int64_t begin, std::int64_t end) {
  std::vector<FlatRun> ranges;
  std::int64_t at = 0;  // the space's position of the run's first element
  for (const FlatRun& r : runs) {
    const std::int64_t n = r.end - r.begin;
    const std::int64_t from = std::max(begin, at), to = std::min(end, at + n);
    if (from < to) ranges.push_back({r.begin + from - at, r.begin + to - at});
    at += n;
  }
  return ranges;
}

namespace {

// The rank's slot in the packed space: its shard, at comm.rank() · shard_size.
std::byte* slot_of(Communicator& comm, Buffer& staging, const ZeroPartition& part, std::int64_t esize) {
  const std::int64_t n = static_cast<std::int64_t>(comm.size()) * part.shard_size * esize;
  if (staging.bytes() < n)
    throw std::logic_error("ZeRO-1 staging holds " + std::to_string(staging.bytes()) + " bytes, the packed space " +
                           std::to_string(n));
  if (std::min(part.total, comm.rank() * part.shard_size) != part.begin)
    throw std::logic_error("ZeRO-1 shard does not start at the group rank's slot");
  return static_cast<std::byte*>(staging.data()) + comm.rank() * part.shard_size * esize;
}

// Copies between the flat buffer's ranges and consecutive packed elements.
void pack(Backend& backend, std::byte* packed, const std::byte* flat, const std::vector<FlatRun>& ranges,
          std::int64_t esize) {
  for (const FlatRun& r : ranges) {
    backend.copy(packed, flat + r.begin * esize, (r.end - r.begin) * esize);
    packed += (r.end - r.begin) * esize;
  }
}
void unpack(Backend& backend, std::byte* flat, const std::byte* packed, const std::vector<FlatRun>& ranges,
            std::int64_t esize) {
  for (const FlatRun& r : ranges) {
    backend.copy(flat + r.begin * esize, packed, (r.end - r.begin) * esize);
    packed += (r.end - r.begin) * esize;
  }
}

}  // namespace

void reduce_scatter_space(Communicator& comm, Backend& backend, void* grads, DType dtype,
                          const std::vector<FlatRun>& runs, const ZeroPartition& part, Buffer& staging,
                          const CommTag& tag) {
  if (comm.size() == 1 || part.total == 0) return;
  const auto esize = static_cast<std::int64_t>(dtype_size(dtype));
  auto* g = static_cast<std::byte*>(grads);
  auto* packed = static_cast<std::byte*>(staging.data());
  std::byte* slot = slot_of(comm, staging, part, esize);
  // The whole space packed, zeros after Ψ_kind; our slot receives the average.
  pack(backend, packed, g, runs, esize);
  backend.zero(packed + part.total * esize, (part.shard_size * comm.size() - part.total) * esize);
  comm.reduce_scatter(packed, slot, part.shard_size, dtype, ReduceOp::average,
                      with_purpose(tag, CommPurpose::gradients));
  unpack(backend, g, slot, space_ranges(runs, part.begin, part.end), esize);
}

void all_gather_space(Communicator& comm, Backend& backend, void* params, DType dtype, const std::vector<FlatRun>& runs,
                      const ZeroPartition& part, Buffer& staging, const CommTag& tag) {
  if (comm.size() == 1 || part.total == 0) return;
  const auto esize = static_cast<std::int64_t>(dtype_size(dtype));
  auto* p = static_cast<std::byte*>(params);
  auto* packed = static_cast<std::byte*>(staging.data());
  std::byte* slot = slot_of(comm, staging, part, esize);
  // Our updated shard into our slot (padding zeroed), gathered in place, then every shard back to flat.
  backend.zero(slot, part.shard_size * esize);
  pack(backend, slot, p, space_ranges(runs, part.begin, part.end), esize);
  comm.all_gather(slot, packed, part.shard_size, dtype, with_purpose(tag, CommPurpose::parameters));
  unpack(backend, p, packed, runs, esize);
}

}  // namespace shardscope
