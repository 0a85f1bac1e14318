// SPDX-License-Identifier: GPL-3.0-or-later
// libshardscope_nccl.so: NCCL communicators for ranks on distinct GPUs, of one
// process (ncclCommInitAll) or one per process (ncclCommInitRank), as
// nccl_plugin_abi.h says. Each call waits (cudaStreamWaitEvent) for the work
// queued on the rank's compute stream, so a DDP bucket's all-reduce runs on its
// communicator's stream while backward goes on computing earlier layers.
#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "ops/cuda/cuda_error_text.h"
#include "ops/nccl/nccl_plugin_abi.h"
#include "ops/plugin_entry.h"

extern "C" void shardscope_nccl_destroy(void* context);

namespace {

using shardscope::plugin_entry::guarded;

struct Context {
  ncclComm_t comm = nullptr;
  int device = 0;
  int rank = 0, size = 1;
  cudaEvent_t reference = nullptr;  // time zero of the start_ms / end_ms reported by poll
  cudaEvent_t ready = nullptr;      // compute stream -> communication stream
  cudaEvent_t start = nullptr, end = nullptr;
  cudaStream_t stream = nullptr;  // this communicator's own (nccl_plugin_abi.h says why)
  bool aborted = false;
};

void check(cudaError_t status, const char* call) {
  if (status != cudaSuccess) throw std::runtime_error(std::string(call) + ": " + shardscope::cuda_error_text(status));
}

// NCCL's message, with its details (ncclGetLastError: which peer, which id) where it has them.
std::string nccl_error_text(ncclResult_t status, ncclComm_t comm) {
  const char* details = ncclGetLastError(comm);
  return std::string(ncclGetErrorString(status)) +
         (details != nullptr && details[0] != '\0' ? std::string(" (") + details + ")" : "");
}

void check(ncclResult_t status, const char* call) {
  if (status != ncclSuccess && status != ncclInProgress)
    throw std::runtime_error(std::string(call) + ": " + nccl_error_text(status, nullptr));
}

ncclDataType_t nccl_type(int dtype) {
  switch (dtype) {
    case 0:
      return ncclFloat32;
    case 1:
      return ncclFloat16;
    case 2:
      return ncclBfloat16;
    default:
      throw std::invalid_argument("NCCL call: dtype " + std::to_string(dtype) + " is not f32, f16 or bf16");
  }
}

std::size_t element_size(int dtype) {
  return dtype == 0 ? 4 : 2;
}

// ncclGroupStart ... ncclGroupEnd that also ends the group when a call inside
// it throws: NCCL's group depth is per thread, and a group left open defers
// every later NCCL call of the thread (ncclCommAbort on the error path too).
class Group {
 public:
  Group() { check(ncclGroupStart(), "ncclGroupStart"); }
  ~Group() {
    if (open_) ncclGroupEnd();
  }
  Group(const Group&) = delete;
  Group& operator=(const Group&) = delete;
  void end() {
    open_ = false;
    check(ncclGroupEnd(), "ncclGroupEnd");
  }

 private:
  bool open_ = true;
};

// NCCL connects a pair of ranks for send/recv at their first send/recv, and
// (NCCL_RUNTIME_CONNECT=1, the default since 2.22) the ranks of a collective
// algorithm at its first call, inside the call: the host thread waits there
// until every peer has made the same call, where no abort flag is watched, so
// a rank that failed before its first contact (an out-of-memory in the first
// step) would leave its peers blocked forever. So every connection is made at
// init instead, where this one thread drives every rank: the collectives'
// through NCCL_RUNTIME_CONNECT=0 (unless the user set it), read by NCCL at its
// first communicator, the pairs' through one send and receive of one element
// between every two ranks.
void connect_at_init() {
  setenv("NCCL_RUNTIME_CONNECT", "0", /*overwrite=*/0);
}

// Every local rank sends one element to and receives one from each other
// rank of its communicator (in this process or another), in one group.
void connect_pairs(const std::vector<Context*>& ranks) {
  if (ranks.empty() || ranks.front()->size < 2) return;
  const auto n = static_cast<std::size_t>(ranks.front()->size);
  std::vector<float*> scratch(ranks.size(), nullptr);  // per local rank: n floats sent, n received
  const auto free_scratch = [&] {
    for (std::size_t i = 0; i < ranks.size(); ++i)
      if (scratch[i] != nullptr) {
        cudaSetDevice(ranks[i]->device);
        cudaFree(scratch[i]);
      }
  };
  try {
    for (std::size_t i = 0; i < ranks.size(); ++i) {
      check(cudaSetDevice(ranks[i]->device), "cudaSetDevice");
      check(cudaMalloc(&scratch[i], 2 * n * sizeof(float)), "cudaMalloc");
      check(cudaMemsetAsync(scratch[i], 0, 2 * n * sizeof(float), ranks[i]->stream), "cudaMemsetAsync");
    }
    Group group;
    for (std::size_t i = 0; i < ranks.size(); ++i)
      for (std::size_t j = 0; j < n; ++j) {
        const Context& c = *ranks[i];
        if (static_cast<int>(j) == c.rank) continue;
        check(ncclSend(scratch[i] + j, 1, ncclFloat32, static_cast<int>(j), c.comm, c.stream), "ncclSend");
        check(ncclRecv(scratch[i] + n + j, 1, ncclFloat32, static_cast<int>(j), c.comm, c.stream), "ncclRecv");
      }
    group.end();
    for (Context* c : ranks) {
      check(cudaSetDevice(c->device), "cudaSetDevice");
      check(cudaStreamSynchronize(c->stream), "cudaStreamSynchronize");
    }
  } catch (...) {
    free_scratch();
    throw;
  }
  free_scratch();
}

// A context (stream, events) for communicator `comm`, group rank `rank` of `size` on `device`.
Context* make_context(ncclComm_t comm, int device, int rank, int size) {
  auto* c = new Context;
  c->comm = comm;
  c->device = device;
  c->rank = rank;
  c->size = size;
  try {
    check(cudaSetDevice(c->device), "cudaSetDevice");
    check(cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    check(cudaEventCreateWithFlags(&c->ready, cudaEventDisableTiming), "cudaEventCreate");
    check(cudaEventCreate(&c->reference), "cudaEventCreate");
    check(cudaEventCreate(&c->start), "cudaEventCreate");
    check(cudaEventCreate(&c->end), "cudaEventCreate");
  } catch (...) {
    c->comm = nullptr;  // the caller destroys the communicator
    shardscope_nccl_destroy(c);
    throw;
  }
  return c;
}

// The contexts of this process's ranks first_rank, first_rank + 1, ... of a
// communicator of `size`, connected to every peer, their clocks started.
// Nothing half made survives a failure: the communicators, streams and events go.
std::vector<Context*> make_contexts(const std::vector<ncclComm_t>& comms, const int* devices, int first_rank,
                                    int size) {
  std::vector<Context*> made;
  try {
    for (std::size_t i = 0; i < comms.size(); ++i)
      made.push_back(make_context(comms[i], devices[i], first_rank + static_cast<int>(i), size));
    connect_pairs(made);
    for (Context* c : made) {  // last: the caller reads its clock when this returns
      check(cudaSetDevice(c->device), "cudaSetDevice");
      check(cudaEventRecord(c->reference, nullptr), "cudaEventRecord");
      check(cudaEventSynchronize(c->reference), "cudaEventSynchronize");
      check(cudaEventRecord(c->end, nullptr), "cudaEventRecord");  // poll before any call: done
    }
  } catch (...) {
    for (Context* c : made) shardscope_nccl_destroy(c);
    for (std::size_t i = made.size(); i < comms.size(); ++i) ncclCommDestroy(comms[i]);
    throw;
  }
  return made;
}

// A call waits (cudaStreamWaitEvent) for the work queued so far on the rank's
// compute stream, then runs on the communicator's stream from its start event.
void start_after_compute(const Context& c, cudaStream_t compute) {
  check(cudaSetDevice(c.device), "cudaSetDevice");
  check(cudaEventRecord(c.ready, compute), "cudaEventRecord");
  check(cudaStreamWaitEvent(c.stream, c.ready, 0), "cudaStreamWaitEvent");
  check(cudaEventRecord(c.start, c.stream), "cudaEventRecord");
}

// Root's recv (size * count) := every rank's send, in rank order: the root
// copies its own part and receives the others', each other rank sends.
void gather(const Context& c, const ShardscopeNcclCall& call, ncclDataType_t type) {
  const auto count = static_cast<std::size_t>(call.count);
  const std::size_t part_bytes = count * element_size(call.dtype);
  Group group;
  if (c.rank == call.peer) {
    for (int r = 0; r < c.size; ++r) {
      auto* slot = static_cast<char*>(call.recv) + static_cast<std::size_t>(r) * part_bytes;
      if (r == c.rank) {
        check(cudaMemcpyAsync(slot, call.send, part_bytes, cudaMemcpyDeviceToDevice, c.stream), "cudaMemcpyAsync");
      } else {
        check(ncclRecv(slot, count, type, r, c.comm, c.stream), "ncclRecv");
      }
    }
  } else {
    check(ncclSend(call.send, count, type, call.peer, c.comm, c.stream), "ncclSend");
  }
  group.end();
}

// Each rank's recv := chunk `rank` of root's send: the root copies its own
// chunk and sends the others', each other rank receives.
void scatter(const Context& c, const ShardscopeNcclCall& call, ncclDataType_t type) {
  const auto count = static_cast<std::size_t>(call.count);
  const std::size_t part_bytes = count * element_size(call.dtype);
  Group group;
  if (c.rank == call.peer) {
    for (int r = 0; r < c.size; ++r) {
      const auto* part = static_cast<const char*>(call.send) + static_cast<std::size_t>(r) * part_bytes;
      if (r == c.rank) {
        check(cudaMemcpyAsync(call.recv, part, part_bytes, cudaMemcpyDeviceToDevice, c.stream), "cudaMemcpyAsync");
      } else {
        check(ncclSend(part, count, type, r, c.comm, c.stream), "ncclSend");
      }
    }
  } else {
    check(ncclRecv(call.recv, count, type, call.peer, c.comm, c.stream), "ncclRecv");
  }
  group.end();
}

// Send to peer and receive from recv_peer in one group: neither waits for the other.
void send_recv(const Context& c, const ShardscopeNcclCall& call, ncclDataType_t type) {
  Group group;
  check(ncclSend(call.send, static_cast<std::size_t>(call.count), type, call.peer, c.comm, c.stream), "ncclSend");
  check(ncclRecv(call.recv, static_cast<std::size_t>(call.recv_count), type, call.recv_peer, c.comm, c.stream),
        "ncclRecv");
  group.end();
}

// Queues the call's collective or point-to-point operation on the communicator's stream.
void enqueue_operation(const Context& c, const ShardscopeNcclCall& call) {
  const ncclDataType_t type = nccl_type(call.dtype);
  const ncclRedOp_t op = call.average != 0 ? ncclAvg : ncclSum;
  const auto count = static_cast<std::size_t>(call.count);
  switch (call.op) {
    case shardscope_nccl_all_reduce:
      check(ncclAllReduce(call.send, call.recv, count, type, op, c.comm, c.stream), "ncclAllReduce");
      break;
    case shardscope_nccl_reduce_scatter:
      check(ncclReduceScatter(call.send, call.recv, count, type, op, c.comm, c.stream), "ncclReduceScatter");
      break;
    case shardscope_nccl_all_gather:
      check(ncclAllGather(call.send, call.recv, count, type, c.comm, c.stream), "ncclAllGather");
      break;
    case shardscope_nccl_broadcast:
      check(ncclBroadcast(call.send, call.recv, count, type, call.peer, c.comm, c.stream), "ncclBroadcast");
      break;
    case shardscope_nccl_gather:
      gather(c, call, type);
      break;
    case shardscope_nccl_scatter:
      scatter(c, call, type);
      break;
    case shardscope_nccl_send:
      check(ncclSend(call.send, count, type, call.peer, c.comm, c.stream), "ncclSend");
      break;
    case shardscope_nccl_recv:
      check(ncclRecv(call.recv, count, type, call.peer, c.comm, c.stream), "ncclRecv");
      break;
    case shardscope_nccl_send_recv:
      send_recv(c, call, type);
      break;
    default:
      throw std::invalid_argument("NCCL call: unknown op " + std::to_string(call.op));
  }
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) int shardscope_nccl_abi_version(void) {
  return SHARDSCOPE_NCCL_PLUGIN_ABI;
}

__attribute__((visibility("default"))) int shardscope_nccl_version(int* version, char* error, std::size_t error_size) {
  return guarded(error, error_size, [&] { check(ncclGetVersion(version), "ncclGetVersion"); });
}

__attribute__((visibility("default"))) int shardscope_nccl_init_all(int n, const int* devices, void** contexts,
                                                                    char* error, std::size_t error_size) {
  return guarded(error, error_size, [&] {
    if (n < 1) throw std::invalid_argument("ncclCommInitAll: no devices");
    std::vector<ncclComm_t> comms(static_cast<std::size_t>(n));
    connect_at_init();
    check(ncclCommInitAll(comms.data(), n, devices), "ncclCommInitAll");
    const std::vector<Context*> made = make_contexts(comms, devices, 0, n);
    for (int i = 0; i < n; ++i) contexts[i] = made[static_cast<std::size_t>(i)];
  });
}

__attribute__((visibility("default"))) int shardscope_nccl_unique_id(void* id, char* error, std::size_t error_size) {
  static_assert(sizeof(ncclUniqueId) == SHARDSCOPE_NCCL_UNIQUE_ID_BYTES);
  return guarded(error, error_size, [&] {
    ncclUniqueId unique{};
    check(ncclGetUniqueId(&unique), "ncclGetUniqueId");
    std::memcpy(id, &unique, sizeof unique);
  });
}

__attribute__((visibility("default"))) int shardscope_nccl_init_rank(int nranks, const void* id, int rank, int device,
                                                                     void** context, char* error,
                                                                     std::size_t error_size) {
  return guarded(error, error_size, [&] {
    if (nranks < 1 || rank < 0 || rank >= nranks)
      throw std::invalid_argument("ncclCommInitRank: rank " + std::to_string(rank) + " of " + std::to_string(nranks));
    ncclUniqueId unique{};
    std::memcpy(&unique, id, sizeof unique);
    connect_at_init();
    check(cudaSetDevice(device), "cudaSetDevice");  // ncclCommInitRank takes the current device
    ncclComm_t comm = nullptr;
    check(ncclCommInitRank(&comm, nranks, unique, rank), "ncclCommInitRank");
    *context = make_contexts({comm}, &device, rank, nranks).front();
  });
}

__attribute__((visibility("default"))) int shardscope_nccl_enqueue(void* context, const ShardscopeNcclCall* call,
                                                                   char* error, std::size_t error_size) {
  return guarded(error, error_size, [&] {
    auto& c = *static_cast<Context*>(context);
    if (c.aborted) throw std::runtime_error("NCCL communicator was aborted");
    start_after_compute(c, static_cast<cudaStream_t>(call->compute_stream));
    enqueue_operation(c, *call);
    check(cudaEventRecord(c.end, c.stream), "cudaEventRecord");
  });
}

__attribute__((visibility("default"))) int shardscope_nccl_poll(void* context, int* done, double* start_ms,
                                                                double* end_ms, char* error, std::size_t error_size) {
  return guarded(error, error_size, [&] {
    auto& c = *static_cast<Context*>(context);
    *done = 0;
    if (c.aborted) throw std::runtime_error("NCCL communicator was aborted");  // its comm may be freed
    ncclResult_t async = ncclSuccess;
    check(ncclCommGetAsyncError(c.comm, &async), "ncclCommGetAsyncError");
    if (async != ncclSuccess && async != ncclInProgress)
      throw std::runtime_error("NCCL: " + nccl_error_text(async, c.comm));
    check(cudaSetDevice(c.device), "cudaSetDevice");
    const cudaError_t status = cudaEventQuery(c.end);
    if (status == cudaErrorNotReady) return;
    check(status, "cudaEventQuery");
    // cudaEventElapsedTime gives a float: measured from the reference event
    // recorded at init, its step grows with the run (about 2 us after 16 s,
    // 0.25 ms after an hour), coarser than most calls. So only the start is
    // placed from the reference; the duration is measured from start to end.
    float start = 0.0f, duration = 0.0f;
    check(cudaEventElapsedTime(&start, c.reference, c.start), "cudaEventElapsedTime");
    check(cudaEventElapsedTime(&duration, c.start, c.end), "cudaEventElapsedTime");
    *start_ms = start;
    *end_ms = static_cast<double>(start) + duration;
    *done = 1;
  });
}

__attribute__((visibility("default"))) void shardscope_nccl_abort(void* context) {
  auto& c = *static_cast<Context*>(context);
  if (c.aborted) return;
  c.aborted = true;
  ncclCommAbort(c.comm);
}

__attribute__((visibility("default"))) void shardscope_nccl_destroy(void* context) {
  auto* c = static_cast<Context*>(context);
  if (c == nullptr) return;
  cudaSetDevice(c->device);
  if (!c->aborted && c->comm != nullptr) ncclCommDestroy(c->comm);
  if (c->stream != nullptr) cudaStreamSynchronize(c->stream);
  for (cudaEvent_t e : {c->reference, c->ready, c->start, c->end})
    if (e != nullptr) cudaEventDestroy(e);
  if (c->stream != nullptr) cudaStreamDestroy(c->stream);
  delete c;
}

}  // extern "C"
