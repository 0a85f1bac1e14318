// SPDX-License-Identifier: GPL-3.0-or-later
// The MPI communicator: messages, rooted ops, point to point, barrier and
// events (mpi_communicator.h). The collectives are in mpi_ring_collectives.cpp
// and mpi_native_collectives.cpp.
#include "parallel/mpi/mpi_communicator.h"
#include "parallel/ring_math.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "clock/device_clock.h"
#include "parallel/in_process_group.h"
#include "parallel/mpi/mpi_world.h"

namespace shardscope {

namespace {
constexpr int kCollectiveTag = 1;
constexpr int kMessageTag = 2;
constexpr std::int64_t kPiece = std::int64_t{1} << 30;  // MPI counts are int: larger transfers go in pieces
}  // namespace

MpiCommunicator::MpiCommunicator(MpiWorld& world, MPI_Comm comm, std::vector<int> members, int me, DeviceClock* clock,
                                 EventSink* sink)
    : world_(world),
      comm_(comm),
      members_(std::move(members)),
      me_(me),
      n_(static_cast<int>(members_.size())),
      left_(mod(me - 1)),
      right_(mod(me + 1)),
      clock_(clock),
      sink_(sink),
      host_(make_host_comm_memory(nullptr)) {}  // its staging is not on a ledger (one rank per process)

MpiCommunicator::~MpiCommunicator() {
  if (world_.aborted()) return;  // a send may still be in flight to a process that is gone: leave it
  try {
    reap_sends(true);
    world_.call("MPI_Comm_free", [&] { return MPI_Comm_free(&comm_); });
  } catch (const std::exception&) {
    // aborted meanwhile: the process is on its way out
  }
}

std::byte* MpiCommunicator::scratch(int slot, std::int64_t bytes) {
  auto& s = scratch_[slot];
  if (static_cast<std::int64_t>(s.size()) < bytes) s.resize(static_cast<std::size_t>(bytes));
  return s.data();
}

std::int64_t MpiCommunicator::now() const {
  return clock_ != nullptr && sink_ != nullptr ? clock_->now() : 0;
}

void MpiCommunicator::emit(const Transfer& t, int ring_step, int chunk, int src, int dst, std::int64_t bytes,
                           std::int64_t start_ns, std::int64_t end_ns) const {
  if (sink_ == nullptr) return;
  sink_->emit(comm_span_event(t.op, t.phase, t.tag, ring_step, chunk, global_rank(src >= 0 ? src : me_),
                             src >= 0 ? global_rank(src) : -1, dst >= 0 ? global_rank(dst) : -1, bytes, start_ns,
                             end_ns));  // rank: the sender
}

void MpiCommunicator::check_count(bool ok, const char* call, const char* what) {
  if (ok) return;
  const std::string message = std::string(call) + ": " + what;
  world_.abort(global_rank(me_), message);  // the other members would wait for this rank forever
  throw std::invalid_argument("rank " + std::to_string(global_rank(me_)) + ": " + message);
}

void MpiCommunicator::exchange(const void* out, std::int64_t out_bytes, int to, void* in, std::int64_t in_bytes,
                               int from, const char* what, int tag) {
  if (world_.aborted()) throw CommAborted(world_.abort_message());
  std::vector<MPI_Request> requests;
  world_.call("MPI_Irecv", [&] {
    for (std::int64_t off = 0; from >= 0 && (off < in_bytes || off == 0); off += kPiece) {
      requests.emplace_back();
      const int rc = MPI_Irecv(static_cast<std::byte*>(in) + off, static_cast<int>(std::min(kPiece, in_bytes - off)),
                               MPI_BYTE, from, tag, comm_, &requests.back());
      if (rc != MPI_SUCCESS) return rc;
    }
    for (std::int64_t off = 0; to >= 0 && (off < out_bytes || off == 0); off += kPiece) {
      requests.emplace_back();
      const int rc =
          MPI_Isend(static_cast<const std::byte*>(out) + off, static_cast<int>(std::min(kPiece, out_bytes - off)),
                    MPI_BYTE, to, tag, comm_, &requests.back());
      if (rc != MPI_SUCCESS) return rc;
    }
    return MPI_SUCCESS;
  });
  const int peer = from >= 0 ? global_rank(from) : global_rank(to);
  world_.wait(requests.data(), static_cast<int>(requests.size()), what, peer);
}

// ---- Rooted collectives: one message between the root and each peer ----

void MpiCommunicator::broadcast(void* data, std::int64_t count, DType dtype, int root, const CommTag& tag) {
  check_count(count >= 0, "broadcast", "negative count");
  check_count(root >= 0 && root < n_, "broadcast", "root outside the group");
  const std::int64_t bytes = count * static_cast<std::int64_t>(dtype_size(dtype));
  const Transfer tr{CommOp::broadcast, RingPhase::none, tag};
  for (int p = 0; p < n_; ++p) {
    if (p == root || (me_ != root && p != me_)) continue;
    const std::int64_t start = now();
    if (me_ == root)
      exchange(data, bytes, p, nullptr, 0, -1, "broadcast", kCollectiveTag);
    else
      exchange(nullptr, 0, -1, data, bytes, root, "broadcast", kCollectiveTag);
    if (me_ != root) emit(tr, -1, -1, root, me_, bytes, start, now());
  }
}

void MpiCommunicator::gather(const void* send, void* recv, std::int64_t count, DType dtype, int root,
                             const CommTag& tag) {
  check_count(count >= 0, "gather", "negative count");
  check_count(root >= 0 && root < n_, "gather", "root outside the group");
  const std::int64_t bytes = count * static_cast<std::int64_t>(dtype_size(dtype));
  const std::int64_t start = now();
  if (me_ != root) {
    exchange(send, bytes, root, nullptr, 0, -1, "gather", kCollectiveTag);
    emit({CommOp::gather, RingPhase::none, tag}, -1, me_, me_, root, bytes, start, now());
    return;
  }
  auto* out = static_cast<std::byte*>(recv);
  host_->copy(out + me_ * bytes, send, bytes);
  for (int p = 0; p < n_; ++p)
    if (p != root) exchange(nullptr, 0, -1, out + p * bytes, bytes, p, "gather", kCollectiveTag);
}

void MpiCommunicator::scatter(const void* send, void* recv, std::int64_t count, DType dtype, int root,
                              const CommTag& tag) {
  check_count(count >= 0, "scatter", "negative count");
  check_count(root >= 0 && root < n_, "scatter", "root outside the group");
  const std::int64_t bytes = count * static_cast<std::int64_t>(dtype_size(dtype));
  const std::int64_t start = now();
  if (me_ != root) {
    exchange(nullptr, 0, -1, recv, bytes, root, "scatter", kCollectiveTag);
    emit({CommOp::scatter, RingPhase::none, tag}, -1, me_, root, me_, bytes, start, now());
    return;
  }
  const auto* in = static_cast<const std::byte*>(send);
  for (int p = 0; p < n_; ++p)
    if (p != root) exchange(in + p * bytes, bytes, p, nullptr, 0, -1, "scatter", kCollectiveTag);
  host_->copy(recv, in + me_ * bytes, bytes);
}

// ---- Point to point ----

void MpiCommunicator::reap_sends(bool all) {
  for (auto it = sends_.begin(); it != sends_.end();) {
    if (all) {
      world_.wait(&it->request, 1, "send", -1);
    } else {
      int done = 0;
      world_.call("MPI_Test", [&] { return MPI_Test(&it->request, &done, MPI_STATUS_IGNORE); });
      if (done == 0) {
        ++it;
        continue;
      }
    }
    it = sends_.erase(it);
  }
}

// Eager: the data is copied, so the caller may reuse its buffer at once.
void MpiCommunicator::send(const float* data, std::int64_t count, int peer, const CommTag&) {
  check_count(count >= 0 && count * 4 <= kPiece, "send", "negative count, or over 1 GiB");
  check_count(peer >= 0 && peer < n_ && peer != me_, "send", "peer outside the group or self");
  if (world_.aborted()) throw CommAborted(world_.abort_message());
  reap_sends(false);
  sends_.push_back({MPI_REQUEST_NULL, std::vector<float>(data, data + count)});
  PendingSend& s = sends_.back();
  world_.call("MPI_Isend", [&] {
    return MPI_Isend(s.data.data(), static_cast<int>(count * 4), MPI_BYTE, peer, kMessageTag, comm_, &s.request);
  });
}

void MpiCommunicator::recv(float* data, std::int64_t count, int peer, const CommTag& tag) {
  check_count(count >= 0, "recv", "negative count");
  check_count(peer >= 0 && peer < n_ && peer != me_, "recv", "peer outside the group or self");
  reap_sends(false);
  const std::int64_t start = now();
  exchange(nullptr, 0, -1, data, count * 4, peer, "recv", kMessageTag);
  emit({CommOp::send, RingPhase::none, tag}, -1, -1, peer, me_, count * 4, start, now());
}

void MpiCommunicator::send_recv(const float* send_data, std::int64_t send_count, int send_peer, float* recv_data,
                                std::int64_t recv_count, int recv_peer, const CommTag& tag, const CommTag& recv_tag) {
  check_count(send_count >= 0 && recv_count >= 0, "send_recv", "negative count");
  check_count(
      send_peer >= 0 && send_peer < n_ && send_peer != me_ && recv_peer >= 0 && recv_peer < n_ && recv_peer != me_,
      "send_recv", "peer outside the group or self");
  // The send goes out as send() sends it (copied, not waited for), then the
  // receive, as in-process exchanges do. An exchange that waited for its send
  // to be received hung where the peer's exchange reads an earlier message of
  // ours first: interleaved 1F1B at pp 2 × m 4, both stages sending to each other.
  send(send_data, send_count, send_peer, tag);
  recv(recv_data, recv_count, recv_peer, recv_tag);
}

void MpiCommunicator::abort(const std::string& reason) {
  world_.abort(global_rank(me_), reason);
}

}  // namespace shardscope
