// SPDX-License-Identifier: GPL-3.0-or-later
// What the emulated NCCL's two halves share (nccl.h says what it models): the
// calls as queued, the arithmetic of a collective, and the communicators
// across processes (nccl_emulated_mpi.cpp), which nccl_emulated.cpp hands
// their calls to.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "nccl.h"

namespace nccl_emulation {

enum class Kind { all_reduce, reduce_scatter, all_gather, broadcast, send, recv };
const char* kind_name(Kind k);

struct Op {
  Kind kind = Kind::all_reduce;
  const void* send = nullptr;
  void* recv = nullptr;
  std::size_t count = 0;  // as the call counts: recv for reduce-scatter, send for all-gather
  ncclDataType_t type = ncclFloat32;
  ncclRedOp_t reduce = ncclSum;
  int root_or_peer = 0;
  std::uint64_t round = 0;  // collectives: the rank's k-th
};

std::size_t element_bytes(ncclDataType_t t);

// Rank `me`'s result of a collective, from every rank's call (ops[r].send is
// rank r's send buffer): sums in rank order in fp32, 16-bit rounded once.
std::vector<unsigned char> reduce(const std::vector<Op>& ops, int me);

// Records the details ncclGetLastError returns, and prints them.
void set_last_error(const std::string& what);

// A communicator whose ranks are processes, over MPI (nccl_emulated_mpi.cpp).
struct MpiLink;
ncclResult_t mpi_unique_id(ncclUniqueId* id);
// Joins the communicator `id` names as `rank` of `nranks`: asks the id's maker,
// which answers with every rank's process once all have asked.
ncclResult_t mpi_init_rank(std::shared_ptr<MpiLink>& link, int nranks, const ncclUniqueId& id, int rank);
int mpi_size(const MpiLink& link);
// Stream work: one call, or a group's calls (sends posted first, waited for last).
void mpi_run(MpiLink& link, const Op& op);
void mpi_group(MpiLink& link, const std::vector<Op>& ops);
void mpi_abort(MpiLink& link);         // waiting and later calls return at once
bool mpi_failed(const MpiLink& link);  // a mismatch between the ranks' calls was seen

}  // namespace nccl_emulation
