// SPDX-License-Identifier: GPL-3.0-or-later
// The NCCL stand-in (nccl.h in this folder says what it models), compiled into
// the emulated NCCL plugin.
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "data_types.h"
#include "nccl.h"
#include "nccl_emulated_ops.h"

namespace nccl_emulation {

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::all_reduce:
      return "ncclAllReduce";
    case Kind::reduce_scatter:
      return "ncclReduceScatter";
    case Kind::all_gather:
      return "ncclAllGather";
    case Kind::broadcast:
      return "ncclBroadcast";
    case Kind::send:
      return "ncclSend";
    default:
      return "ncclRecv";
  }
}

namespace {
// NCCL's element types as the emulation's loads and stores name them (data_types.h).
cudaDataType_t cuda_type(ncclDataType_t t) {
  return t == ncclFloat32 ? CUDA_R_32F : t == ncclFloat16 ? CUDA_R_16F : CUDA_R_16BF;
}

}  // namespace

std::size_t element_bytes(ncclDataType_t t) {
  return static_cast<std::size_t>(cuda_emulation::element_bytes(cuda_type(t)));
}

std::vector<unsigned char> reduce(const std::vector<Op>& ops, int me) {
  const int size = static_cast<int>(ops.size());
  const Op& op = ops[static_cast<std::size_t>(me)];
  const std::size_t eb = element_bytes(op.type);
  std::vector<unsigned char> out;
  auto reduced = [&](std::size_t offset, std::size_t n) {  // sum over ranks of send[offset + i]
    out.resize(n * eb);
    for (std::size_t i = 0; i < n; ++i) {
      float sum = 0.0f;
      for (int r = 0; r < size; ++r)
        sum += cuda_emulation::load(ops[static_cast<std::size_t>(r)].send, static_cast<std::int64_t>(offset + i),
                                    cuda_type(op.type));
      if (op.reduce == ncclAvg) sum /= static_cast<float>(size);
      cuda_emulation::store(out.data(), static_cast<std::int64_t>(i), cuda_type(op.type), sum);
    }
  };
  switch (op.kind) {
    case Kind::all_reduce:
      reduced(0, op.count);
      break;
    case Kind::reduce_scatter:
      reduced(static_cast<std::size_t>(me) * op.count, op.count);
      break;
    case Kind::all_gather:
      out.resize(static_cast<std::size_t>(size) * op.count * eb);
      for (int r = 0; r < size; ++r)
        std::memcpy(out.data() + static_cast<std::size_t>(r) * op.count * eb, ops[static_cast<std::size_t>(r)].send,
                    op.count * eb);
      break;
    default: {  // broadcast
      const Op& root = ops[static_cast<std::size_t>(op.root_or_peer)];
      out.assign(static_cast<const unsigned char*>(root.send),
                 static_cast<const unsigned char*>(root.send) + op.count * eb);
      break;
    }
  }
  return out;
}

namespace {
std::mutex last_error_mutex;
std::string last_error;
}  // namespace

void set_last_error(const std::string& what) {
  std::fprintf(stderr, "NCCL emulation: %s\n", what.c_str());
  std::lock_guard lock(last_error_mutex);
  last_error = what;
}

namespace {

// The ranks of one ncclCommInitAll.
struct Clique {
  int size = 0;
  std::mutex mutex;
  std::condition_variable changed;
  struct Round {
    std::vector<Op> ops;
    int arrived = 0, computed = 0, left = 0;
  };
  std::map<std::uint64_t, Round> rounds;
  struct Mailbox {
    std::deque<std::vector<unsigned char>> messages;
    std::uint64_t posted = 0, taken = 0;  // a send's ticket is `posted` after it; it completes once taken
  };
  std::map<std::pair<int, int>, Mailbox> mail;  // (from, to)
  std::vector<char> aborted;
  std::string error;  // the first mismatch, reported by ncclCommGetAsyncError
};

struct Rank {
  std::shared_ptr<Clique> clique;  // null across processes
  int rank = 0;
  std::shared_ptr<MpiLink> mpi;  // across processes (nccl_emulated_mpi.cpp)
};

// Waits until ready() or this rank is aborted (false then), within the
// emulation's deadlock limit (cuda_emulation::wait_making_progress).
template <typename Ready>
bool wait(std::unique_lock<std::mutex>& lock, const Rank& me, const Op& op, Ready ready) {
  Clique& c = *me.clique;
  cuda_emulation::wait_making_progress(
      lock, c.changed, [&] { return c.aborted[me.rank] != 0 || ready(); },
      "NCCL emulation: rank " + std::to_string(me.rank) + " of " + std::to_string(c.size) + " in " +
          kind_name(op.kind) + " (its peers never reached it)");
  return c.aborted[me.rank] == 0;
}

void mismatch(Clique& c, const std::string& what) {
  if (c.error.empty()) c.error = what;
  std::fprintf(stderr, "NCCL emulation: %s\n", what.c_str());
}

// Stream work of one collective: meet, compute from every rank's send buffer,
// wait until every rank has read them, then write (send and recv may alias).
void collective(const Rank& me, const Op& op) {
  Clique& c = *me.clique;
  std::unique_lock lock(c.mutex);
  Clique::Round& round = c.rounds[op.round];
  if (round.ops.empty()) round.ops.resize(static_cast<std::size_t>(c.size));
  round.ops[static_cast<std::size_t>(me.rank)] = op;
  ++round.arrived;
  c.changed.notify_all();
  if (!wait(lock, me, op, [&] { return round.arrived == c.size; })) return;
  for (const Op& other : round.ops)
    if (other.kind != op.kind || other.count != op.count || other.type != op.type || other.reduce != op.reduce ||
        other.root_or_peer != op.root_or_peer) {
      mismatch(c, std::string("collective ") + std::to_string(op.round) + ": rank " + std::to_string(me.rank) +
                      " called " + kind_name(op.kind) + " of " + std::to_string(op.count) + ", a peer " +
                      kind_name(other.kind) + " of " + std::to_string(other.count) + " (or another type or root)");
      return;
    }
  lock.unlock();
  const std::vector<unsigned char> result = reduce(round.ops, me.rank);
  lock.lock();
  ++round.computed;
  c.changed.notify_all();
  if (!wait(lock, me, op, [&] { return round.computed == c.size; })) return;
  lock.unlock();
  std::memcpy(op.recv, result.data(), result.size());
  lock.lock();
  if (++round.left == c.size) c.rounds.erase(op.round);
}

// Posts a send's data for its receiver; returns its ticket (0: this rank is aborted).
std::uint64_t post(const Rank& me, const Op& op) {
  Clique& c = *me.clique;
  const auto* p = static_cast<const unsigned char*>(op.send);
  std::vector<unsigned char> message(p, p + op.count * element_bytes(op.type));
  std::lock_guard lock(c.mutex);
  if (c.aborted[me.rank] != 0) return 0;
  Clique::Mailbox& box = c.mail[{me.rank, op.root_or_peer}];
  box.messages.push_back(std::move(message));
  c.changed.notify_all();
  return ++box.posted;
}

// A send completes when its receiver has taken it (a rendezvous: NCCL may
// finish a small send sooner, never later).
void complete(const Rank& me, const Op& op, std::uint64_t ticket) {
  if (ticket == 0) return;
  Clique& c = *me.clique;
  std::unique_lock lock(c.mutex);
  const Clique::Mailbox& box = c.mail[{me.rank, op.root_or_peer}];
  wait(lock, me, op, [&] { return box.taken >= ticket; });
}

void recv(const Rank& me, const Op& op) {
  Clique& c = *me.clique;
  std::unique_lock lock(c.mutex);
  Clique::Mailbox& box = c.mail[{op.root_or_peer, me.rank}];
  if (!wait(lock, me, op, [&] { return !box.messages.empty(); })) return;
  std::vector<unsigned char> message = std::move(box.messages.front());
  box.messages.pop_front();
  ++box.taken;
  c.changed.notify_all();
  lock.unlock();
  const std::size_t bytes = op.count * element_bytes(op.type);
  if (message.size() != bytes) {
    std::lock_guard relock(c.mutex);
    mismatch(c, "rank " + std::to_string(me.rank) + " received " + std::to_string(message.size()) +
                    " bytes from rank " + std::to_string(op.root_or_peer) + " where it expected " +
                    std::to_string(bytes));
    return;
  }
  std::memcpy(op.recv, message.data(), bytes);
}

void run(const Rank& me, const Op& op) {
  if (me.mpi) return mpi_run(*me.mpi, op);
  switch (op.kind) {
    case Kind::send:
      complete(me, op, post(me, op));
      break;
    case Kind::recv:
      recv(me, op);
      break;
    default:
      collective(me, op);
      break;
  }
}

// Calls between ncclGroupStart and ncclGroupEnd on this thread.
struct Pending {
  Rank rank;
  cudaStream_t stream;
  Op op;
};
thread_local int group_depth = 0;
thread_local std::vector<Pending> group;

}  // namespace
}  // namespace nccl_emulation

using namespace nccl_emulation;

struct ncclComm {
  Rank rank;
  int device = 0;
  std::uint64_t collectives = 0;  // issued so far: the next one's round
};

namespace {

// NCCL reads and writes its buffers from its kernels on the communicator's
// GPU: the stream and every buffer must be that device's.
bool on_device(const ncclComm& comm, cudaStream_t stream, const Op& op) {
  const char* problem = nullptr;
  if (cuda_emulation::stream_device(stream) != comm.device)
    problem = "the stream belongs to another device";
  else if (op.send != nullptr && cuda_emulation::device_of(op.send) != comm.device)
    problem = "the send buffer is not memory of the communicator's device";
  else if (op.recv != nullptr && cuda_emulation::device_of(op.recv) != comm.device)
    problem = "the receive buffer is not memory of the communicator's device";
  if (problem == nullptr) return true;
  std::fprintf(stderr, "NCCL emulation: %s on rank %d (device %d): %s\n", kind_name(op.kind), comm.rank.rank,
               comm.device, problem);
  return false;
}

int size_of(const ncclComm& comm) {
  return comm.rank.mpi ? mpi_size(*comm.rank.mpi) : comm.rank.clique->size;
}

ncclResult_t issue(ncclComm_t comm, cudaStream_t stream, Op op) {
  if (comm == nullptr) return ncclInvalidArgument;
  if (!on_device(*comm, stream, op)) return ncclInvalidArgument;
  if (op.kind != Kind::send && op.kind != Kind::recv) op.round = comm->collectives++;
  if (group_depth > 0) {
    group.push_back({comm->rank, stream, op});
    return ncclSuccess;
  }
  cuda_emulation::enqueue(stream, [me = comm->rank, op] { run(me, op); });
  return ncclSuccess;
}

}  // namespace

ncclResult_t ncclGetVersion(int* version) {
  *version = 22700;  // the API the plugin is written against (2.27)
  return ncclSuccess;
}

const char* ncclGetErrorString(ncclResult_t result) {
  switch (result) {
    case ncclSuccess:
      return "no error";
    case ncclInvalidArgument:
      return "invalid argument (emulation)";
    case ncclInvalidUsage:
      return "invalid usage (emulation: mismatched calls between ranks)";
    case ncclRemoteError:
      return "remote process exited or there was a network error";
    default:
      return "internal error (emulation)";
  }
}

const char* ncclGetLastError(ncclComm_t) {
  static thread_local std::string copy;  // stays valid for the caller, whatever other threads record
  std::lock_guard lock(last_error_mutex);
  copy = last_error;
  return copy.c_str();
}

ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
  return id == nullptr ? ncclInvalidArgument : mpi_unique_id(id);
}

ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank) {
  if (comm == nullptr) return ncclInvalidArgument;
  std::shared_ptr<MpiLink> link;
  const ncclResult_t status = mpi_init_rank(link, nranks, id, rank);
  if (status != ncclSuccess) return status;
  int device = 0;
  cudaGetDevice(&device);  // the communicator's GPU is the current one, as in NCCL
  *comm = new ncclComm{Rank{nullptr, rank, link}, device};
  return ncclSuccess;
}

ncclResult_t ncclCommInitAll(ncclComm_t* comms, int n, const int* devices) {
  int count = 0;
  cudaGetDeviceCount(&count);
  if (n < 1) return ncclInvalidArgument;
  for (int i = 0; i < n; ++i)
    if (devices[i] < 0 || devices[i] >= count) return ncclInvalidArgument;
  auto clique = std::make_shared<Clique>();
  clique->size = n;
  clique->aborted.assign(static_cast<std::size_t>(n), 0);
  for (int i = 0; i < n; ++i) comms[i] = new ncclComm{Rank{clique, i, nullptr}, devices[i]};
  return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  delete comm;  // queued work holds the clique
  return ncclSuccess;
}

ncclResult_t ncclCommAbort(ncclComm_t comm) {
  if (comm == nullptr) return ncclInvalidArgument;
  if (comm->rank.mpi) {
    mpi_abort(*comm->rank.mpi);
  } else {
    Clique& c = *comm->rank.clique;
    std::lock_guard lock(c.mutex);
    c.aborted[comm->rank.rank] = 1;
    c.changed.notify_all();
  }
  delete comm;
  return ncclSuccess;
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* async_error) {
  if (comm == nullptr) return ncclInvalidArgument;
  if (comm->rank.mpi) {
    *async_error = mpi_failed(*comm->rank.mpi) ? ncclInvalidUsage : ncclSuccess;
    return ncclSuccess;
  }
  Clique& c = *comm->rank.clique;
  std::lock_guard lock(c.mutex);
  *async_error = c.error.empty() ? ncclSuccess : ncclInvalidUsage;
  return ncclSuccess;
}

ncclResult_t ncclGroupStart() {
  ++group_depth;
  return ncclSuccess;
}

ncclResult_t ncclGroupEnd() {
  if (group_depth == 0) return ncclInvalidUsage;
  if (--group_depth > 0) return ncclSuccess;
  std::vector<Pending> calls = std::move(group);
  group.clear();
  // One piece of work per rank (on the stream of its first call).
  std::vector<std::pair<Pending, std::vector<Op>>> per_rank;
  for (const Pending& p : calls) {
    auto it = std::find_if(per_rank.begin(), per_rank.end(), [&](const auto& e) {
      return e.first.rank.clique == p.rank.clique && e.first.rank.mpi == p.rank.mpi && e.first.rank.rank == p.rank.rank;
    });
    if (it == per_rank.end()) {
      per_rank.push_back({p, {}});
      it = std::prev(per_rank.end());
    }
    it->second.push_back(p.op);
  }
  // The group's calls run together: its sends are posted, its other calls
  // run in order, then its sends wait for their receivers.
  for (auto& [first, ops] : per_rank)
    cuda_emulation::enqueue(first.stream, [me = first.rank, ops = std::move(ops)] {
      if (me.mpi) return mpi_group(*me.mpi, ops);
      std::vector<std::uint64_t> tickets(ops.size(), 0);
      for (std::size_t i = 0; i < ops.size(); ++i)
        if (ops[i].kind == Kind::send) tickets[i] = post(me, ops[i]);
      for (const Op& op : ops)
        if (op.kind != Kind::send) run(me, op);
      for (std::size_t i = 0; i < ops.size(); ++i)
        if (ops[i].kind == Kind::send) complete(me, ops[i], tickets[i]);
    });
  return ncclSuccess;
}

ncclResult_t ncclAllReduce(const void* send, void* recv, std::size_t count, ncclDataType_t type, ncclRedOp_t op,
                           ncclComm_t comm, cudaStream_t stream) {
  return issue(comm, stream, Op{Kind::all_reduce, send, recv, count, type, op, 0, 0});
}

ncclResult_t ncclReduceScatter(const void* send, void* recv, std::size_t recv_count, ncclDataType_t type,
                               ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  return issue(comm, stream, Op{Kind::reduce_scatter, send, recv, recv_count, type, op, 0, 0});
}

ncclResult_t ncclAllGather(const void* send, void* recv, std::size_t send_count, ncclDataType_t type, ncclComm_t comm,
                           cudaStream_t stream) {
  return issue(comm, stream, Op{Kind::all_gather, send, recv, send_count, type, ncclSum, 0, 0});
}

ncclResult_t ncclBroadcast(const void* send, void* recv, std::size_t count, ncclDataType_t type, int root,
                           ncclComm_t comm, cudaStream_t stream) {
  if (comm == nullptr || root < 0 || root >= size_of(*comm)) return ncclInvalidArgument;
  return issue(comm, stream, Op{Kind::broadcast, send, recv, count, type, ncclSum, root, 0});
}

ncclResult_t ncclSend(const void* send, std::size_t count, ncclDataType_t type, int peer, ncclComm_t comm,
                      cudaStream_t stream) {
  if (comm == nullptr || peer < 0 || peer >= size_of(*comm) || peer == comm->rank.rank) return ncclInvalidArgument;
  return issue(comm, stream, Op{Kind::send, send, nullptr, count, type, ncclSum, peer, 0});
}

ncclResult_t ncclRecv(void* recv, std::size_t count, ncclDataType_t type, int peer, ncclComm_t comm,
                      cudaStream_t stream) {
  if (comm == nullptr || peer < 0 || peer >= size_of(*comm) || peer == comm->rank.rank) return ncclInvalidArgument;
  return issue(comm, stream, Op{Kind::recv, nullptr, recv, count, type, ncclSum, peer, 0});
}
