// SPDX-License-Identifier: GPL-3.0-or-later
// The collectives of the in-process communicator: ring reduce-scatter and
// all-gather (all_reduce is one then the other), and the rooted broadcast,
// gather and scatter. Indexing and synchronisation: in_process_communicator.h
// and the top of in_process_communicator.cpp.
#include <algorithm>
#include <cstring>

#include "core/half.h"
#include "parallel/in_process_group.h"

namespace shardscope {

namespace {

// The arithmetic of one element type, written so the compiler vectorizes the
// loops (-O3). 16-bit sums widen to f32, add, and round back (each ring hop's
// partial sum is stored in 16 bits, as with NCCL's half-precision reductions).
struct F32Elems {
  using T = float;
  static constexpr DType dtype = DType::f32;
  static void add_into(T* dst, const T* src, std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) dst[i] += src[i];
  }
  static void add_to(T* dst, const T* a, const T* b, std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) dst[i] = a[i] + b[i];
  }
  static void divide(T* data, std::int64_t n, int divisor) {
    const float d = static_cast<float>(divisor);
    for (std::int64_t i = 0; i < n; ++i) data[i] /= d;
  }
  static constexpr bool kPreDivide = false;  // fp32 sums first and divides once
};

template <DType D>
struct HalfElems {
  using T = std::uint16_t;
  static constexpr DType dtype = D;
  static float widen(T v) { return D == DType::f16 ? half::f16_bits_to_float(v) : half::bf16_bits_to_float(v); }
  static T narrow(float v) { return D == DType::f16 ? half::float_to_f16_bits(v) : half::float_to_bf16_bits(v); }
  static void add_into(T* dst, const T* src, std::int64_t n) { half::add_into(D, dst, src, n); }
  static void add_to(T* dst, const T* a, const T* b, std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) dst[i] = narrow(widen(a[i]) + widen(b[i]));
  }
  static void divide(T* data, std::int64_t n, int divisor) {
    const float d = static_cast<float>(divisor);
    for (std::int64_t i = 0; i < n; ++i) data[i] = narrow(widen(data[i]) / d);
  }
  // An average pre-divides each rank's values by N, in 16 bits, before the sum
  // (NCCL's ncclAvg on floating types; PyTorch DDP and DeepSpeed divide by the
  // world size first too), so a sum of N large gradients cannot overflow where
  // their average fits.
  static constexpr bool kPreDivide = true;
};

void copy_bytes(void* dst, const void* src, std::int64_t bytes) {
  if (bytes > 0 && dst != src) std::memcpy(dst, src, static_cast<std::size_t>(bytes));
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
                                      std::int64_t bytes, Copy&& copy) {
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
  emit(tr, phase_step, chunk, me_, right_, bytes, start, end);
}

template <class Elems>
void InProcessCommunicator::all_reduce_as(typename Elems::T* data, std::int64_t count, ReduceOp op,
                                          const CommTag& tag) {
  using T = typename Elems::T;
  if (n_ == 1) {
    if (world_->aborted()) raise_aborted();
    return;  // the sum (and the average) over one rank is its data
  }
  const bool pre_divide = Elems::kPreDivide && op == ReduceOp::average;
  if (pre_divide) Elems::divide(data, count, n_);  // before enter(): our buffer is ours until then
  const std::int64_t base = enter(CommOp::all_reduce, data, data, count, -1, Elems::dtype);
  const Chunks chunks(count, n_);
  const Transfer rs{CommOp::all_reduce, RingPhase::reduce_scatter, tag};
  for (int k = 0; k < n_ - 1; ++k) {  // reduce-scatter: right.chunk[c] += mine.chunk[c]
    const int c = mod(me_ - k - 1);
    const std::int64_t off = chunks.offset(c), len = chunks.size(c);
    ring_step(base, k, rs, k, c, bytes_of(len, Elems::dtype),
              [&](Slot& right) { Elems::add_into(static_cast<T*>(right.recv) + off, data + off, len); });
  }
  wait_for(left_, base + n_);  // chunk me_ now holds the sum over all ranks
  if (op == ReduceOp::average && !pre_divide) Elems::divide(data + chunks.offset(me_), chunks.size(me_), n_);
  const Transfer ag{CommOp::all_reduce, RingPhase::all_gather, tag};
  for (int k = 0; k < n_ - 1; ++k) {  // all-gather: right.chunk[c] = mine.chunk[c]
    const int c = mod(me_ - k);
    const std::int64_t off = chunks.offset(c), len = chunks.size(c);
    ring_step(base, n_ - 1 + k, ag, k, c, bytes_of(len, Elems::dtype), [&](Slot& right) {
      copy_bytes(static_cast<T*>(right.recv) + off, data + off, len * static_cast<std::int64_t>(sizeof(T)));
    });
  }
  wait_for(left_, base + 1 + 2 * (n_ - 1));  // the left neighbour's last write into data is done
}

void InProcessCommunicator::all_reduce(void* data, std::int64_t count, DType dtype, ReduceOp op, const CommTag& tag) {
  check_argument(count >= 0, "all_reduce", "negative count");
  switch (dtype) {
    case DType::f32: return all_reduce_as<F32Elems>(static_cast<float*>(data), count, op, tag);
    case DType::f16: return all_reduce_as<HalfElems<DType::f16>>(static_cast<std::uint16_t*>(data), count, op, tag);
    case DType::bf16:
      return all_reduce_as<HalfElems<DType::bf16>>(static_cast<std::uint16_t*>(data), count, op, tag);
    case DType::i32: break;
  }
  check_argument(false, "all_reduce", "element type must be f32, f16 or bf16");
}

// The partial sum of a chunk travels round the ring and gains one rank's
// contribution per step; it lands in the receiver's `stage` (double-buffered:
// the receiver reads slot k%2 at step k+1 while the sender fills the other).
// After n-1 steps stage holds the sum over every rank but this one.
template <class Elems>
void InProcessCommunicator::reduce_scatter_as(const typename Elems::T* send, typename Elems::T* recv,
                                              std::int64_t recv_count, ReduceOp op, const CommTag& tag) {
  using T = typename Elems::T;
  if (n_ == 1) {
    if (world_->aborted()) raise_aborted();
    copy_bytes(recv, send, recv_count * static_cast<std::int64_t>(sizeof(T)));
    return;
  }
  std::vector<T> divided;  // 16-bit average: this rank's values / N (see kPreDivide)
  const bool pre_divide = Elems::kPreDivide && op == ReduceOp::average;
  if (pre_divide) {
    divided.assign(send, send + n_ * recv_count);
    Elems::divide(divided.data(), n_ * recv_count, n_);
    send = divided.data();
  }
  Slot& mine = slot(me_);
  const auto stage_size = static_cast<std::size_t>(2 * recv_count) * sizeof(T);
  if (mine.stage.size() < stage_size) mine.stage.resize(stage_size);  // before enter() publishes it
  const std::int64_t base = enter(CommOp::reduce_scatter, send, recv, recv_count, -1, Elems::dtype);
  const T* my_stage = reinterpret_cast<const T*>(mine.stage.data());
  const Transfer tr{CommOp::reduce_scatter, RingPhase::reduce_scatter, tag};
  for (int k = 0; k < n_ - 1; ++k) {
    const int c = mod(me_ - k - 1);
    const T* own = send + c * recv_count;
    ring_step(base, k, tr, k, c, bytes_of(recv_count, Elems::dtype), [&](Slot& right) {
      T* dst = reinterpret_cast<T*>(right.stage.data()) + (k % 2) * recv_count;
      if (k == 0)
        copy_bytes(dst, own, recv_count * static_cast<std::int64_t>(sizeof(T)));
      else
        Elems::add_to(dst, my_stage + ((k - 1) % 2) * recv_count, own, recv_count);
    });
  }
  wait_for(left_, base + n_);  // the left neighbour's last partial sum is in my stage
  Elems::add_to(recv, my_stage + ((n_ - 2) % 2) * recv_count, send + me_ * recv_count, recv_count);
  if (op == ReduceOp::average && !pre_divide) Elems::divide(recv, recv_count, n_);
}

void InProcessCommunicator::reduce_scatter(const void* send, void* recv, std::int64_t recv_count, DType dtype,
                                           ReduceOp op, const CommTag& tag) {
  check_argument(recv_count >= 0, "reduce_scatter", "negative count");
  using H16 = HalfElems<DType::f16>;
  using B16 = HalfElems<DType::bf16>;
  switch (dtype) {
    case DType::f32:
      return reduce_scatter_as<F32Elems>(static_cast<const float*>(send), static_cast<float*>(recv), recv_count, op,
                                         tag);
    case DType::f16:
      return reduce_scatter_as<H16>(static_cast<const std::uint16_t*>(send), static_cast<std::uint16_t*>(recv),
                                    recv_count, op, tag);
    case DType::bf16:
      return reduce_scatter_as<B16>(static_cast<const std::uint16_t*>(send), static_cast<std::uint16_t*>(recv),
                                    recv_count, op, tag);
    case DType::i32: break;
  }
  check_argument(false, "reduce_scatter", "element type must be f32, f16 or bf16");
}

void InProcessCommunicator::all_gather(const void* send, void* recv, std::int64_t send_count, DType dtype,
                                       const CommTag& tag) {
  check_argument(send_count >= 0, "all_gather", "negative count");
  const std::int64_t chunk = bytes_of(send_count, dtype);
  auto* out = static_cast<std::byte*>(recv);
  if (n_ == 1) {
    if (world_->aborted()) raise_aborted();
    copy_bytes(recv, send, chunk);
    return;
  }
  const std::int64_t base = enter(CommOp::all_gather, send, recv, send_count, -1, dtype);
  copy_bytes(out + me_ * chunk, send, chunk);  // own chunk: no transfer (nothing if in place)
  const Transfer tr{CommOp::all_gather, RingPhase::all_gather, tag};
  for (int k = 0; k < n_ - 1; ++k) {
    const std::int64_t off = mod(me_ - k) * chunk;
    ring_step(base, k, tr, k, mod(me_ - k), chunk,
              [&](Slot& right) { copy_bytes(static_cast<std::byte*>(right.recv) + off, out + off, chunk); });
  }
  wait_for(left_, base + n_);
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
  const std::int64_t base = enter(tr.op, send, recv, count, root, dtype);
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
    emit(tr, -1, chunk, to_root ? me_ : root, to_root ? root : me_, bytes_of(count, dtype), start, end);
  }
  advance(base + 2);
}

void InProcessCommunicator::broadcast(void* data, std::int64_t count, DType dtype, int root, const CommTag& tag) {
  const std::int64_t bytes = bytes_of(count, dtype);
  rooted(
      {CommOp::broadcast, RingPhase::none, tag}, data, data, count, dtype, root, false, -1,
      [&](const Slot& r) { copy_bytes(data, r.send, bytes); }, [] {});
}

void InProcessCommunicator::gather(const void* send, void* recv, std::int64_t count, DType dtype, int root,
                                   const CommTag& tag) {
  const std::int64_t bytes = bytes_of(count, dtype);
  rooted(
      {CommOp::gather, RingPhase::none, tag}, send, recv, count, dtype, root, true, me_,
      [&](const Slot& r) { copy_bytes(static_cast<std::byte*>(r.recv) + me_ * bytes, send, bytes); },
      [&] { copy_bytes(static_cast<std::byte*>(recv) + me_ * bytes, send, bytes); });
}

void InProcessCommunicator::scatter(const void* send, void* recv, std::int64_t count, DType dtype, int root,
                                    const CommTag& tag) {
  const std::int64_t bytes = bytes_of(count, dtype);
  rooted(
      {CommOp::scatter, RingPhase::none, tag}, send, recv, count, dtype, root, false, me_,
      [&](const Slot& r) { copy_bytes(recv, static_cast<const std::byte*>(r.send) + me_ * bytes, bytes); },
      [&] { copy_bytes(recv, static_cast<const std::byte*>(send) + me_ * bytes, bytes); });
}

void InProcessCommunicator::barrier() {
  const std::int64_t start = now();
  const std::int64_t base = enter(CommOp::barrier, nullptr, nullptr, 0, -1);
  for (int p = 0; p < n_; ++p) wait_for(p, base + 1);
  const CommTag none;
  emit({CommOp::barrier, RingPhase::none, none}, -1, -1, -1, -1, 0, start, now());
}

}  // namespace shardscope
