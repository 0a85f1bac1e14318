// SPDX-License-Identifier: GPL-3.0-or-later
// The collectives of the in-process communicator: ring reduce-scatter and
// all-gather (all_reduce is one then the other), and the rooted broadcast,
// gather and scatter. Indexing and synchronisation: in_process_communicator.h
// and the top of in_process_communicator.cpp.
#include <algorithm>
#include <cstring>

#include "clock/device_clock.h"
#include "core/half.h"
#include "parallel/in_process_group.h"
#include "parallel/ring_math.h"

namespace shardscope {

template <class Copy>
void InProcessCommunicator::guarded(Copy&& copy) {
  Slot& s = slot(me_);
  s.busy.store(true);  // seq_cst, then read the flag (top of in_process_communicator.cpp)
  if (world_->aborted()) {
    s.busy.store(false);
    raise_aborted();
  }
  try {
    copy();
    memory_->settle();  // a device copy has landed before the peer is told (advance) or we leave
  } catch (const std::exception& e) {
    // A device copy can fail (a CUDA error): the peers would wait for it forever.
    s.busy.store(false, std::memory_order_release);
    world_->abort(global_rank(me_), e.what());
    throw;
  }
  s.busy.store(false, std::memory_order_release);
}

// ---- Ring collectives ----

// Step t (counted over the whole call) of a ring: wait until the left neighbour
// has finished step t-1 (it wrote what we send now) and the right one too (it
// has read what we overwrite), then copy or reduce one chunk into the right
// neighbour's buffer: copy(right) runs once the right neighbour's published
// buffers may be read.
template <class Copy>
void InProcessCommunicator::ring_step(std::int64_t base, int t, const Transfer& tr, int phase_step, int chunk,
                                      std::int64_t bytes, Copy&& copy) {
  wait_for(left_, base + 1 + t);
  wait_for(right_, base + 1 + t);
  if (t == 0) {
    check_matches(left_);
    check_matches(right_);
  }
  // Virtual clock: once this rank and both neighbours finished step t - 1
  // (waiting, if it must, for the later neighbour, and for whoever held it up).
  if (virtual_) {
    const std::int64_t value = base + 1 + t;
    const int later = peer_ns(left_, value) >= peer_ns(right_, value) ? left_ : right_;
    wait_until(peer_ns(later, value), peer_blame(later, value), tr);
  }
  const std::int64_t start = virtual_ ? virtual_ns_ : now();
  Slot& right = slot(right_);
  guarded([&] { copy(right); });
  const std::int64_t end = virtual_ ? start + clock_->link().transfer_ns(bytes) : now();
  virtual_ns_ = end;
  advance(base + 2 + t);
  emit(tr, phase_step, chunk, me_, right_, bytes, start, end);
}

void InProcessCommunicator::all_reduce(void* data_, std::int64_t count, DType dtype, ReduceOp op, const CommTag& tag) {
  check_argument(count >= 0, "all_reduce", "negative count");
  check_argument(reducible(dtype), "all_reduce", "element type must be f32, f16 or bf16");
  call_begin();
  if (n_ == 1) {
    if (world_->aborted()) raise_aborted();
    return;  // the sum (and the average) over one rank is its data
  }
  auto* data = static_cast<std::byte*>(data_);
  const auto esize = static_cast<std::int64_t>(dtype_size(dtype));
  CommMemory& mem = *memory_;
  const bool pre_divide = pre_divides(dtype, op);
  if (pre_divide) {  // before enter(): our buffer is ours until then
    mem.settle();    // ... once the compute stream has written it (the division runs on the comm stream)
    mem.divide(dtype, data, count, n_);
  }
  const std::int64_t base = enter(CommOp::all_reduce, data, data, count, -1, dtype);
  const RingChunks chunks(count, n_);
  const Transfer rs{CommOp::all_reduce, RingPhase::reduce_scatter, tag};
  for (int k = 0; k < n_ - 1; ++k) {  // reduce-scatter: right.chunk[c] += mine.chunk[c]
    const int c = ring_chunk_sent(RingPhase::reduce_scatter, me_, k, n_);
    const std::int64_t off = chunks.offset(c) * esize, len = chunks.size(c);
    ring_step(base, k, rs, k, c, len * esize,
              [&](Slot& right) { mem.add_into(dtype, static_cast<std::byte*>(right.recv) + off, data + off, len); });
  }
  wait_for(left_, base + n_);  // chunk me_ now holds the sum over all ranks
  if (op == ReduceOp::average && !pre_divide)
    mem.divide(dtype, data + chunks.offset(me_) * esize, chunks.size(me_), n_);
  const Transfer ag{CommOp::all_reduce, RingPhase::all_gather, tag};
  for (int k = 0; k < n_ - 1; ++k) {  // all-gather: right.chunk[c] = mine.chunk[c]
    const int c = ring_chunk_sent(RingPhase::all_gather, me_, k, n_);
    const std::int64_t off = chunks.offset(c) * esize, len = chunks.size(c);
    ring_step(base, n_ - 1 + k, ag, k, c, len * esize,
              [&](Slot& right) { mem.copy(static_cast<std::byte*>(right.recv) + off, data + off, len * esize); });
  }
  wait_for_peer(left_, base + 1 + 2 * (n_ - 1), ag);  // the left neighbour's last write into data is done
  mem.settle();
  call_end();
}

// The partial sum of a chunk travels round the ring and gains one rank's
// contribution per step; it lands in the receiver's `stage` (double-buffered:
// the receiver reads slot k%2 at step k+1 while the sender fills the other).
// After n-1 steps stage holds the sum over every rank but this one. A chunk
// larger than kRingSliceBytes goes round in slices, one ring pass each, as
// NCCL pipelines a large call through fixed buffers: the staging stays
// 2 x kRingSliceBytes however large the units are, and each element is summed
// in the same order as in one pass.
void InProcessCommunicator::reduce_scatter(const void* send_, void* recv, std::int64_t recv_count, DType dtype,
                                           ReduceOp op, const CommTag& tag) {
  check_argument(recv_count >= 0, "reduce_scatter", "negative count");
  check_argument(reducible(dtype), "reduce_scatter", "element type must be f32, f16 or bf16");
  const auto esize = static_cast<std::int64_t>(dtype_size(dtype));
  auto* send = static_cast<const std::byte*>(send_);
  // The copies below run on the comm stream: first the compute stream's writes
  // into send (and its reads of recv) must be done.
  memory_->settle();
  call_begin();
  if (n_ == 1) {
    if (world_->aborted()) raise_aborted();
    memory_->copy(recv, send, recv_count * esize);
    memory_->settle();  // the caller's compute reads recv next, on another stream
    call_end();
    return;
  }
  const std::int64_t slice = std::max<std::int64_t>(1, kRingSliceBytes / esize);
  for (std::int64_t begin = 0; begin < recv_count || begin == 0; begin += slice) {
    const std::int64_t count = std::min(slice, recv_count - begin);
    reduce_scatter_slice(send + begin * esize, recv_count * esize, static_cast<std::byte*>(recv) + begin * esize,
                         count, dtype, op, tag);
  }
  memory_->settle();  // the caller's compute reads recv next, on another stream
  call_end();
}

// One ring pass over `count` elements of each rank's chunk: chunk c's elements
// start at send + c * stride (bytes).
void InProcessCommunicator::reduce_scatter_slice(const std::byte* send, std::int64_t stride, std::byte* recv,
                                                 std::int64_t count, DType dtype, ReduceOp op, const CommTag& tag) {
  const auto esize = static_cast<std::int64_t>(dtype_size(dtype));
  const std::int64_t chunk = count * esize;
  CommMemory& mem = *memory_;
  const bool pre_divide = pre_divides(dtype, op);
  if (pre_divide) {  // this rank's values / N, in scratch (send stays untouched)
    auto* divided = static_cast<std::byte*>(mem.scratch(1, n_ * chunk));
    for (int c = 0; c < n_; ++c) mem.copy(divided + c * chunk, send + c * stride, chunk);
    mem.divide(dtype, divided, n_ * count, n_);
    send = divided;
    stride = chunk;
  }
  auto* my_stage = static_cast<std::byte*>(mem.scratch(0, 2 * chunk));  // before enter() publishes it
  slot(me_).stage = my_stage;
  const std::int64_t base = enter(CommOp::reduce_scatter, send, recv, count, -1, dtype);
  const Transfer tr{CommOp::reduce_scatter, RingPhase::reduce_scatter, tag};
  for (int k = 0; k < n_ - 1; ++k) {
    const int c = ring_chunk_sent(RingPhase::reduce_scatter, me_, k, n_);
    const std::byte* own = send + c * stride;
    ring_step(base, k, tr, k, c, chunk, [&](Slot& right) {
      std::byte* dst = static_cast<std::byte*>(right.stage) + (k % 2) * chunk;
      if (k == 0)
        mem.copy(dst, own, chunk);
      else
        mem.add_to(dtype, dst, my_stage + ((k - 1) % 2) * chunk, own, count);
    });
  }
  wait_for_peer(left_, base + n_, tr);  // the left neighbour's last partial sum is in my stage
  mem.add_to(dtype, recv, my_stage + ((n_ - 2) % 2) * chunk, send + me_ * stride, count);
  if (op == ReduceOp::average && !pre_divide) mem.divide(dtype, recv, count, n_);
}

void InProcessCommunicator::all_gather(const void* send, void* recv, std::int64_t send_count, DType dtype,
                                       const CommTag& tag) {
  check_argument(send_count >= 0, "all_gather", "negative count");
  const std::int64_t chunk = bytes_of(send_count, dtype);
  auto* out = static_cast<std::byte*>(recv);
  CommMemory& mem = *memory_;
  mem.settle();  // the compute stream's writes into send are done before the comm stream copies it
  call_begin();
  if (n_ == 1) {
    if (world_->aborted()) raise_aborted();
    mem.copy(recv, send, chunk);
    mem.settle();  // the caller's compute reads recv next, on another stream
    call_end();
    return;
  }
  mem.copy(out + me_ * chunk, send, chunk);  // before enter() settles and publishes
  const std::int64_t base =
      enter(CommOp::all_gather, send, recv, send_count, -1, dtype);  // own chunk: no transfer (nothing if in place)
  const Transfer tr{CommOp::all_gather, RingPhase::all_gather, tag};
  for (int k = 0; k < n_ - 1; ++k) {
    const int c = ring_chunk_sent(RingPhase::all_gather, me_, k, n_);
    const std::int64_t off = c * chunk;
    ring_step(base, k, tr, k, c, chunk,
              [&](Slot& right) { mem.copy(static_cast<std::byte*>(right.recv) + off, out + off, chunk); });
  }
  wait_for_peer(left_, base + n_, tr);
  mem.settle();
  call_end();
}

// ---- Rooted collectives: one direct copy between the root and each peer ----

// The root publishes its buffers; each peer makes its one copy to or from them
// (so the copies run in parallel, and the event still names the real sender),
// and the root leaves only when every peer is done with its buffers.
template <class PeerCopy, class RootCopy>
void InProcessCommunicator::rooted(const Transfer& tr, const void* send, void* recv, std::int64_t count, DType dtype,
                                   int root, bool to_root, int chunk, PeerCopy&& peer_copy, RootCopy&& root_copy) {
  const char* name = comm_op_name(tr.op).data();
  check_argument(count >= 0, name, "negative count");
  check_argument(root >= 0 && root < n_, name, "root outside the group");
  call_begin();
  const std::int64_t base = enter(tr.op, send, recv, count, root, dtype);
  const std::int64_t bytes = bytes_of(count, dtype);
  if (me_ == root) {
    root_copy();
    for (int p = 0; p < n_; ++p)
      if (p != root) wait_for_peer(p, base + 2, tr);
  } else {
    wait_for(root, base + 1);
    check_matches(root);
    const Slot& r = slot(root);
    // Virtual clock: the root's link serves its peers one after another.
    const int in_line = me_ < root ? me_ : me_ - 1;
    if (virtual_) wait_until(peer_ns(root, base + 1), peer_blame(root, base + 1), tr);  // the root got here
    const std::int64_t start =
        virtual_ ? std::max(virtual_ns_, peer_ns(root, base + 1) + in_line * clock_->link().wire_ns(bytes)) : now();
    guarded([&] { peer_copy(r); });
    const std::int64_t end = virtual_ ? start + clock_->link().transfer_ns(bytes) : now();
    virtual_ns_ = std::max(virtual_ns_, end);
    emit(tr, -1, chunk, to_root ? me_ : root, to_root ? root : me_, bytes, start, end);
  }
  memory_->settle();
  advance(base + 2);
  call_end();
}

void InProcessCommunicator::broadcast(void* data, std::int64_t count, DType dtype, int root, const CommTag& tag) {
  const std::int64_t bytes = bytes_of(count, dtype);
  rooted(
      {CommOp::broadcast, RingPhase::none, tag}, data, data, count, dtype, root, false, -1,
      [&](const Slot& r) { memory_->copy(data, r.send, bytes); }, [] {});
}

void InProcessCommunicator::gather(const void* send, void* recv, std::int64_t count, DType dtype, int root,
                                   const CommTag& tag) {
  const std::int64_t bytes = bytes_of(count, dtype);
  rooted(
      {CommOp::gather, RingPhase::none, tag}, send, recv, count, dtype, root, true, me_,
      [&](const Slot& r) { memory_->copy(static_cast<std::byte*>(r.recv) + me_ * bytes, send, bytes); },
      [&] { memory_->copy(static_cast<std::byte*>(recv) + me_ * bytes, send, bytes); });
}

void InProcessCommunicator::scatter(const void* send, void* recv, std::int64_t count, DType dtype, int root,
                                    const CommTag& tag) {
  const std::int64_t bytes = bytes_of(count, dtype);
  rooted(
      {CommOp::scatter, RingPhase::none, tag}, send, recv, count, dtype, root, false, me_,
      [&](const Slot& r) { memory_->copy(recv, static_cast<const std::byte*>(r.send) + me_ * bytes, bytes); },
      [&] { memory_->copy(recv, static_cast<const std::byte*>(send) + me_ * bytes, bytes); });
}

void InProcessCommunicator::barrier() {
  call_begin();
  const std::int64_t start = virtual_ ? virtual_ns_ : now();
  const std::int64_t base = enter(CommOp::barrier, nullptr, nullptr, 0, -1);
  const CommTag none;
  for (int p = 0; p < n_; ++p) wait_for_peer(p, base + 1, {CommOp::barrier, RingPhase::none, none});
  emit({CommOp::barrier, RingPhase::none, none}, -1, -1, -1, -1, 0, start, virtual_ ? virtual_ns_ : now());
  call_end();
}

}  // namespace shardscope
