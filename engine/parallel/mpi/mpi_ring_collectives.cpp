// SPDX-License-Identifier: GPL-3.0-or-later
// The ring collectives of the MPI communicator: reduce-scatter then all-gather
// over point-to-point messages, N-1 steps each, chunk by chunk, with the
// in-process communicator's chunking, order of additions and 16-bit rounding
// (mpi_communicator.h), so a process run matches a threaded one bit for bit.
#include <algorithm>

#include "clock/device_clock.h"
#include "parallel/in_process_group.h"
#include "parallel/mpi/mpi_communicator.h"
#include "parallel/mpi/mpi_world.h"
#include "parallel/ring_math.h"

namespace shardscope {

namespace {

constexpr int kRingTag = 3;

}  // namespace

void MpiCommunicator::all_reduce(void* data, std::int64_t count, DType dtype, ReduceOp op, const CommTag& tag) {
  check_count(count >= 0, "all_reduce", "negative count");
  check_count(reducible(dtype), "all_reduce", "element type must be f32, f16 or bf16");
  if (world_.aborted()) throw CommAborted(world_.abort_message());
  if (n_ == 1) return;  // the sum (and the average) over one rank is its data
  if (world_.options().collectives == MpiCollectives::native)
    native_all_reduce(static_cast<std::byte*>(data), count, dtype, op, tag);
  else
    ring_all_reduce(static_cast<std::byte*>(data), count, dtype, op, tag);
}

void MpiCommunicator::reduce_scatter(const void* send, void* recv, std::int64_t recv_count, DType dtype, ReduceOp op,
                                     const CommTag& tag) {
  check_count(recv_count >= 0, "reduce_scatter", "negative count");
  check_count(reducible(dtype), "reduce_scatter", "element type must be f32, f16 or bf16");
  if (world_.aborted()) throw CommAborted(world_.abort_message());
  if (n_ == 1) {
    host_->copy(recv, send, recv_count * static_cast<std::int64_t>(dtype_size(dtype)));
    return;
  }
  if (world_.options().collectives == MpiCollectives::native)
    native_reduce_scatter(static_cast<const std::byte*>(send), static_cast<std::byte*>(recv), recv_count, dtype, op,
                          tag);
  else
    ring_reduce_scatter(static_cast<const std::byte*>(send), static_cast<std::byte*>(recv), recv_count, dtype, op, tag);
}

void MpiCommunicator::all_gather(const void* send, void* recv, std::int64_t send_count, DType dtype,
                                 const CommTag& tag) {
  check_count(send_count >= 0, "all_gather", "negative count");
  if (world_.aborted()) throw CommAborted(world_.abort_message());
  if (n_ == 1) {
    host_->copy(recv, send, send_count * static_cast<std::int64_t>(dtype_size(dtype)));
    return;
  }
  if (world_.options().collectives == MpiCollectives::native)
    native_all_gather(static_cast<const std::byte*>(send), static_cast<std::byte*>(recv), send_count, dtype, tag);
  else
    ring_all_gather(static_cast<const std::byte*>(send), static_cast<std::byte*>(recv), send_count, dtype, tag);
}

// Reduce-scatter step k: chunk (r-k-1) goes right, chunk (r-k-2) comes from
// the left and is added in; then rank r holds the sum of chunk r. All-gather
// step k: chunk (r-k) goes right, chunk (r-k-1) comes from the left
// (ring_chunk_sent and ring_chunk_received, ring_math.h).
void MpiCommunicator::ring_all_reduce(std::byte* data, std::int64_t count, DType dtype, ReduceOp op,
                                      const CommTag& tag) {
  const auto esize = static_cast<std::int64_t>(dtype_size(dtype));
  const bool pre_divide = pre_divides(dtype, op);
  if (pre_divide) host_->divide(dtype, data, count, n_);
  const RingChunks chunks(count, n_);
  std::byte* incoming = scratch(0, chunks.size(0) * esize);
  const Transfer rs{CommOp::all_reduce, RingPhase::reduce_scatter, tag};
  for (int k = 0; k < n_ - 1; ++k) {
    const int out = ring_chunk_sent(RingPhase::reduce_scatter, me_, k, n_);
    const int in = ring_chunk_received(RingPhase::reduce_scatter, me_, k, n_);
    const std::int64_t start = now();
    exchange(data + chunks.offset(out) * esize, chunks.size(out) * esize, right_, incoming, chunks.size(in) * esize,
             left_, "all_reduce", kRingTag);
    host_->add_into(dtype, data + chunks.offset(in) * esize, incoming, chunks.size(in));  // receiver += sender
    emit(rs, k, out, me_, right_, chunks.size(out) * esize, start, now());
  }
  if (op == ReduceOp::average && !pre_divide)
    host_->divide(dtype, data + chunks.offset(me_) * esize, chunks.size(me_), n_);
  const Transfer ag{CommOp::all_reduce, RingPhase::all_gather, tag};
  for (int k = 0; k < n_ - 1; ++k) {
    const int out = ring_chunk_sent(RingPhase::all_gather, me_, k, n_);
    const int in = ring_chunk_received(RingPhase::all_gather, me_, k, n_);
    const std::int64_t start = now();
    exchange(data + chunks.offset(out) * esize, chunks.size(out) * esize, right_, data + chunks.offset(in) * esize,
             chunks.size(in) * esize, left_, "all_reduce", kRingTag);
    emit(ag, k, out, me_, right_, chunks.size(out) * esize, start, now());
  }
}

// The partial sum of a chunk travels round the ring, gaining one rank's
// contribution per step (partial + own, as in-process); the last one received
// plus this rank's own chunk is the result.
void MpiCommunicator::ring_reduce_scatter(const std::byte* send, std::byte* recv, std::int64_t recv_count, DType dtype,
                                          ReduceOp op, const CommTag& tag) {
  const std::int64_t chunk = recv_count * static_cast<std::int64_t>(dtype_size(dtype));
  const bool pre_divide = pre_divides(dtype, op);
  if (pre_divide) {  // this rank's values / N, in scratch (send stays untouched)
    std::byte* divided = scratch(2, n_ * chunk);
    host_->copy(divided, send, n_ * chunk);
    host_->divide(dtype, divided, n_ * recv_count, n_);
    send = divided;
  }
  std::byte* outgoing = scratch(0, chunk);
  std::byte* incoming = scratch(1, chunk);
  const Transfer tr{CommOp::reduce_scatter, RingPhase::reduce_scatter, tag};
  for (int k = 0; k < n_ - 1; ++k) {
    const int c = ring_chunk_sent(RingPhase::reduce_scatter, me_, k, n_);
    const std::byte* own = send + c * chunk;
    if (k > 0) host_->add_to(dtype, outgoing, incoming, own, recv_count);
    const std::int64_t start = now();
    exchange(k == 0 ? own : outgoing, chunk, right_, incoming, chunk, left_, "reduce_scatter", kRingTag);
    emit(tr, k, c, me_, right_, chunk, start, now());
  }
  host_->add_to(dtype, recv, incoming, send + me_ * chunk, recv_count);
  if (op == ReduceOp::average && !pre_divide) host_->divide(dtype, recv, recv_count, n_);
}

void MpiCommunicator::ring_all_gather(const std::byte* send, std::byte* recv, std::int64_t send_count, DType dtype,
                                      const CommTag& tag) {
  const std::int64_t chunk = send_count * static_cast<std::int64_t>(dtype_size(dtype));
  host_->copy(recv + me_ * chunk, send, chunk);  // nothing when in place
  const Transfer tr{CommOp::all_gather, RingPhase::all_gather, tag};
  for (int k = 0; k < n_ - 1; ++k) {
    const int out = ring_chunk_sent(RingPhase::all_gather, me_, k, n_);
    const int in = ring_chunk_received(RingPhase::all_gather, me_, k, n_);
    const std::int64_t start = now();
    exchange(recv + out * chunk, chunk, right_, recv + in * chunk, chunk, left_, "all_gather", kRingTag);
    emit(tr, k, out, me_, right_, chunk, start, now());
  }
}

}  // namespace shardscope
