// SPDX-License-Identifier: GPL-3.0-or-later
// --collectives native: MPI's own all-reduce, reduce-scatter and all-gather
// (in their nonblocking forms, polled by MpiWorld::wait for aborts and the
// deadline), one event per call; and the barrier. Results are close to the
// ring's, not bitwise equal: MPI picks its own algorithm and order of sums.
#include <climits>
#include <cstring>

#include "core/half.h"
#include "parallel/in_process_group.h"
#include "parallel/mpi/mpi_communicator.h"
#include "parallel/mpi/mpi_world.h"

namespace shardscope {

namespace {

// 16-bit sums as NCCL's: widen to f32, add, round back (half::add_into).
template <DType D>
void half_sum(void* in, void* inout, int* length, MPI_Datatype*) {
  half::add_into(D, static_cast<std::uint16_t*>(inout), static_cast<const std::uint16_t*>(in), *length);
}

struct SumOps {
  MPI_Op f16 = MPI_OP_NULL, bf16 = MPI_OP_NULL;
  SumOps() {
    MPI_Op_create(&half_sum<DType::f16>, 1, &f16);
    MPI_Op_create(&half_sum<DType::bf16>, 1, &bf16);
  }
};

// The MPI type and sum of an element type (made once, under the world's mutex).
void mpi_sum(DType dtype, MPI_Datatype& type, MPI_Op& op) {
  static const SumOps ops;
  type = dtype == DType::f32 ? MPI_FLOAT : MPI_UINT16_T;
  op = dtype == DType::f32 ? MPI_SUM : dtype == DType::f16 ? ops.f16 : ops.bf16;
}

bool overlaps(const std::byte* a, std::int64_t a_bytes, const std::byte* b, std::int64_t b_bytes) {
  return a < b + b_bytes && b < a + a_bytes;
}

}  // namespace

template <class Start>
void MpiCommunicator::native_call(const char* name, Start&& start) {
  if (world_.aborted()) throw CommAborted(world_.abort_message());
  MPI_Request request = MPI_REQUEST_NULL;
  world_.call(name, [&] { return start(&request); });
  world_.wait(&request, 1, name, -1);
}

void MpiCommunicator::native_all_reduce(std::byte* data, std::int64_t count, DType dtype, ReduceOp op,
                                        const CommTag& tag) {
  check_count(count <= INT_MAX, "all_reduce", "over 2^31 elements with --collectives native");
  const bool pre_divide = dtype != DType::f32 && op == ReduceOp::average;
  if (pre_divide) host_->divide(dtype, data, count, n_);
  const std::int64_t start = now();
  native_call("all_reduce", [&](MPI_Request* request) {
    MPI_Datatype type;
    MPI_Op sum;
    mpi_sum(dtype, type, sum);
    return MPI_Iallreduce(MPI_IN_PLACE, data, static_cast<int>(count), type, sum, comm_, request);
  });
  if (op == ReduceOp::average && !pre_divide) host_->divide(dtype, data, count, n_);
  const std::int64_t bytes = count * static_cast<std::int64_t>(dtype_size(dtype));
  emit({CommOp::all_reduce, RingPhase::none, tag}, -1, -1, me_, -1, bytes, start, now());
}

void MpiCommunicator::native_reduce_scatter(const std::byte* send, std::byte* recv, std::int64_t recv_count,
                                            DType dtype, ReduceOp op, const CommTag& tag) {
  check_count(recv_count <= INT_MAX, "reduce_scatter", "over 2^31 elements with --collectives native");
  const std::int64_t chunk = recv_count * static_cast<std::int64_t>(dtype_size(dtype));
  const bool pre_divide = dtype != DType::f32 && op == ReduceOp::average;
  if (pre_divide || overlaps(send, n_ * chunk, recv, chunk)) {  // MPI wants distinct buffers
    std::byte* copy = scratch(2, n_ * chunk);
    host_->copy(copy, send, n_ * chunk);
    if (pre_divide) host_->divide(dtype, copy, n_ * recv_count, n_);
    send = copy;
  }
  const std::int64_t start = now();
  native_call("reduce_scatter", [&](MPI_Request* request) {
    MPI_Datatype type;
    MPI_Op sum;
    mpi_sum(dtype, type, sum);
    return MPI_Ireduce_scatter_block(send, recv, static_cast<int>(recv_count), type, sum, comm_, request);
  });
  if (op == ReduceOp::average && !pre_divide) host_->divide(dtype, recv, recv_count, n_);
  emit({CommOp::reduce_scatter, RingPhase::none, tag}, -1, -1, me_, -1, n_ * chunk, start, now());
}

void MpiCommunicator::native_all_gather(const std::byte* send, std::byte* recv, std::int64_t send_count, DType dtype,
                                        const CommTag& tag) {
  const std::int64_t chunk = send_count * static_cast<std::int64_t>(dtype_size(dtype));
  check_count(chunk <= INT_MAX, "all_gather", "over 2 GiB per rank with --collectives native");
  const bool in_place = send == recv + me_ * chunk;
  const std::int64_t start = now();
  native_call("all_gather", [&](MPI_Request* request) {
    return MPI_Iallgather(in_place ? MPI_IN_PLACE : send, static_cast<int>(chunk), MPI_BYTE, recv,
                          static_cast<int>(chunk), MPI_BYTE, comm_, request);
  });
  emit({CommOp::all_gather, RingPhase::none, tag}, -1, -1, me_, -1, n_ * chunk, start, now());
}

void MpiCommunicator::barrier() {
  const std::int64_t start = now();
  native_call("barrier", [&](MPI_Request* request) { return MPI_Ibarrier(comm_, request); });
  emit({CommOp::barrier, RingPhase::none, CommTag{}}, -1, -1, -1, -1, 0, start, now());
}

}  // namespace shardscope
