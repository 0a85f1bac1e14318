// SPDX-License-Identifier: GPL-3.0-or-later
// The collectives of the in-process communicator: ring reduce-scatter and
// all-gather (all_reduce is one then the other), and the rooted broadcast,
// gather and scatter. Indexing and synchronisation: in_process_communicator.h
// and the top of in_process_communicator.cpp.
#include <algorithm>

#include "parallel/in_process_group.h"

namespace shardscope {

namespace {

// The inner loops, written so the compiler vectorizes them (-O3).
void add_into(float* dst, const float* src, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) dst[i] += src[i];
}
void add_to(float* dst, const float* a, const float* b, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) dst[i] = a[i] + b[i];
}
void divide(float* data, std::int64_t n, int divisor) {
  const float d = static_cast<float>(divisor);
  for (std::int64_t i = 0; i < n; ++i) data[i] /= d;
}

// count elements split into n chunks; the first count % n are one element longer.
struct Chunks {
  std::int64_t base, rem;
  Chunks(std::int64_t count, int n) : base(count / n), rem(count % n) {}
  std::int64_t offset(int c) const { return c * base + std::min<std::int64_t>(c, rem); }
  std::int64_t size(int c) const { return base + (c < rem ? 1 : 0); }
};

}  // namespace

template <class Copy>
void InProcessCommunicator::guarded(Copy&& copy) {
  Slot& s = slot(me_);
  s.busy.store(true);  // seq_cst, then read the flag (top of in_process_communicator.cpp)
  if (world_->aborted()) {
    s.busy.store(false);
    raise_aborted();
  }
  copy();
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
                                      std::int64_t elements, Copy&& copy) {
  wait_for(left_, base + 1 + t);
  wait_for(right_, base + 1 + t);
  if (t == 0) {
    check_matches(left_);
    check_matches(right_);
  }
  const std::int64_t start = now();
  Slot& right = slot(right_);
  guarded([&] { copy(right); });
  const std::int64_t end = now();
  advance(base + 2 + t);
  emit(tr, phase_step, chunk, me_, right_, bytes_of(elements), start, end);
}

void InProcessCommunicator::all_reduce(float* data, std::int64_t count, ReduceOp op, const CommTag& tag) {
  check_argument(count >= 0, "all_reduce", "negative count");
  if (n_ == 1) {
    if (world_->aborted()) raise_aborted();
    return;  // the sum (and the average) over one rank is its data
  }
  const std::int64_t base = enter(CommOp::all_reduce, data, data, count, -1);
  const Chunks chunks(count, n_);
  const Transfer rs{CommOp::all_reduce, RingPhase::reduce_scatter, tag};
  for (int k = 0; k < n_ - 1; ++k) {  // reduce-scatter: right.chunk[c] += mine.chunk[c]
    const int c = mod(me_ - k - 1);
    const std::int64_t off = chunks.offset(c), len = chunks.size(c);
    ring_step(base, k, rs, k, c, len, [&](Slot& right) { add_into(right.recv + off, data + off, len); });
  }
  wait_for(left_, base + n_);  // chunk me_ now holds the sum over all ranks
  if (op == ReduceOp::average) divide(data + chunks.offset(me_), chunks.size(me_), n_);
  const Transfer ag{CommOp::all_reduce, RingPhase::all_gather, tag};
  for (int k = 0; k < n_ - 1; ++k) {  // all-gather: right.chunk[c] = mine.chunk[c]
    const int c = mod(me_ - k);
    const std::int64_t off = chunks.offset(c), len = chunks.size(c);
    ring_step(base, n_ - 1 + k, ag, k, c, len, [&](Slot& right) { copy_floats(right.recv + off, data + off, len); });
  }
  wait_for(left_, base + 1 + 2 * (n_ - 1));  // the left neighbour's last write into data is done
}

// The partial sum of a chunk travels round the ring and gains one rank's
// contribution per step; it lands in the receiver's `stage` (double-buffered:
// the receiver reads slot k%2 at step k+1 while the sender fills the other).
// After n-1 steps stage holds the sum over every rank but this one.
void InProcessCommunicator::reduce_scatter(const float* send, float* recv, std::int64_t recv_count, ReduceOp op,
                                           const CommTag& tag) {
  check_argument(recv_count >= 0, "reduce_scatter", "negative count");
  if (n_ == 1) {
    if (world_->aborted()) raise_aborted();
    copy_floats(recv, send, recv_count);
    return;
  }
  Slot& mine = slot(me_);
  const auto stage_size = static_cast<std::size_t>(2 * recv_count);
  if (mine.stage.size() < stage_size) mine.stage.resize(stage_size);  // before enter() publishes it
  const std::int64_t base = enter(CommOp::reduce_scatter, send, recv, recv_count, -1);
  const float* my_stage = mine.stage.data();
  const Transfer tr{CommOp::reduce_scatter, RingPhase::reduce_scatter, tag};
  for (int k = 0; k < n_ - 1; ++k) {
    const int c = mod(me_ - k - 1);
    const float* own = send + c * recv_count;
    ring_step(base, k, tr, k, c, recv_count, [&](Slot& right) {
      float* dst = right.stage.data() + (k % 2) * recv_count;
      if (k == 0)
        copy_floats(dst, own, recv_count);
      else
        add_to(dst, my_stage + ((k - 1) % 2) * recv_count, own, recv_count);
    });
  }
  wait_for(left_, base + n_);  // the left neighbour's last partial sum is in my stage
  add_to(recv, my_stage + ((n_ - 2) % 2) * recv_count, send + me_ * recv_count, recv_count);
  if (op == ReduceOp::average) divide(recv, recv_count, n_);
}

void InProcessCommunicator::all_gather(const float* send, float* recv, std::int64_t send_count, const CommTag& tag) {
  check_argument(send_count >= 0, "all_gather", "negative count");
  if (n_ == 1) {
    if (world_->aborted()) raise_aborted();
    copy_floats(recv, send, send_count);
    return;
  }
  const std::int64_t base = enter(CommOp::all_gather, send, recv, send_count, -1);
  copy_floats(recv + me_ * send_count, send, send_count);  // own chunk: no transfer (nothing if in place)
  const Transfer tr{CommOp::all_gather, RingPhase::all_gather, tag};
  for (int k = 0; k < n_ - 1; ++k) {
    const std::int64_t off = mod(me_ - k) * send_count;
    ring_step(base, k, tr, k, mod(me_ - k), send_count,
              [&](Slot& right) { copy_floats(right.recv + off, recv + off, send_count); });
  }
  wait_for(left_, base + n_);
}

// ---- Rooted collectives: one direct copy between the root and each peer ----

// The root publishes its buffers; each peer makes its one copy to or from them
// (so the copies run in parallel, and the event still names the real sender),
// and the root leaves only when every peer is done with its buffers.
template <class PeerCopy, class RootCopy>
void InProcessCommunicator::rooted(const Transfer& tr, const float* send, float* recv, std::int64_t count, int root,
                                   bool to_root, int chunk, PeerCopy&& peer_copy, RootCopy&& root_copy) {
  const char* name = comm_op_name(tr.op).data();
  check_argument(count >= 0, name, "negative count");
  check_argument(root >= 0 && root < n_, name, "root outside the group");
  const std::int64_t base = enter(tr.op, send, recv, count, root);
  if (me_ == root) {
    root_copy();
    for (int p = 0; p < n_; ++p)
      if (p != root) wait_for(p, base + 2);
  } else {
    wait_for(root, base + 1);
    check_matches(root);
    const Slot& r = slot(root);
    const std::int64_t start = now();
    guarded([&] { peer_copy(r); });
    const std::int64_t end = now();
    emit(tr, -1, chunk, to_root ? me_ : root, to_root ? root : me_, bytes_of(count), start, end);
  }
  advance(base + 2);
}

void InProcessCommunicator::broadcast(float* data, std::int64_t count, int root, const CommTag& tag) {
  rooted(
      {CommOp::broadcast, RingPhase::none, tag}, data, data, count, root, false, -1,
      [&](const Slot& r) { copy_floats(data, r.send, count); }, [] {});
}

void InProcessCommunicator::gather(const float* send, float* recv, std::int64_t count, int root, const CommTag& tag) {
  rooted(
      {CommOp::gather, RingPhase::none, tag}, send, recv, count, root, true, me_,
      [&](const Slot& r) { copy_floats(r.recv + me_ * count, send, count); },
      [&] { copy_floats(recv + me_ * count, send, count); });
}

void InProcessCommunicator::scatter(const float* send, float* recv, std::int64_t count, int root, const CommTag& tag) {
  rooted(
      {CommOp::scatter, RingPhase::none, tag}, send, recv, count, root, false, me_,
      [&](const Slot& r) { copy_floats(recv, r.send + me_ * count, count); },
      [&] { copy_floats(recv, send + me_ * count, count); });
}

void InProcessCommunicator::barrier() {
  const std::int64_t start = now();
  const std::int64_t base = enter(CommOp::barrier, nullptr, nullptr, 0, -1);
  for (int p = 0; p < n_; ++p) wait_for(p, base + 1);
  const CommTag none;
  emit({CommOp::barrier, RingPhase::none, none}, -1, -1, -1, -1, 0, start, now());
}

}  // namespace shardscope
