// SPDX-License-Identifier: GPL-3.0-or-later
// The C entry points of the NCCL plugin (libshardscope_nccl.so), which the
// engine dlopen()s (ops/nccl.cpp) so a program starts where NCCL is missing.
// A group's communicators are made together by one process driving all its
// GPUs (init_all), or one per process (unique_id, init_rank) when the ranks are
// processes, on this machine or others (mpirun).
// One context per rank and group: an NCCL communicator, a stream of its own
// and CUDA events that time its calls. Calls are enqueued on the context's
// stream after the work queued so far on the rank's compute stream, and polled
// for completion, so the host never blocks where a failing peer could leave it
// waiting forever. Each communicator has its own stream (as each PyTorch
// process group does): a DDP all-reduce and a pipeline send of the same rank,
// queued from two threads, never wait behind each other in one stream, which
// could deadlock when their peers queued them in the other order. The stream
// is non-blocking, so the legacy default stream (cudaMemset, cudaMemcpy of the
// allocator and helpers) never waits for a collective that waits for a peer.
// No entry point throws: each returns 0 or -1 with a message in `error`.
// Includes no CUDA or NCCL header.
#pragma once

#include <cstddef>

#define SHARDSCOPE_NCCL_PLUGIN_ABI 4
// NCCL's ncclUniqueId: the bytes a group's first rank makes and sends to the others.
#define SHARDSCOPE_NCCL_UNIQUE_ID_BYTES 128

extern "C" {

enum ShardscopeNcclOp {
  shardscope_nccl_all_reduce = 0,
  shardscope_nccl_reduce_scatter = 1,
  shardscope_nccl_all_gather = 2,
  shardscope_nccl_broadcast = 3,
  shardscope_nccl_gather = 4,   // grouped sends to the root (NCCL has no gather)
  shardscope_nccl_scatter = 5,  // grouped sends from the root
  shardscope_nccl_send = 6,
  shardscope_nccl_recv = 7,
  shardscope_nccl_send_recv = 8  // send to `peer` and receive from `recv_peer` as one group
};

struct ShardscopeNcclCall {
  int op;            // ShardscopeNcclOp
  const void* send;  // device memory
  void* recv;
  long long count;       // elements: all_reduce / broadcast / send / recv: the buffer; reduce_scatter: recv;
                         // all_gather, gather, scatter: one rank's part
  int dtype;             // 0 f32, 1 f16, 2 bf16 (shardscope::DType)
  int average;           // all_reduce / reduce_scatter: 1 ncclAvg, 0 ncclSum
  int peer;              // broadcast / gather / scatter: the root; send / recv: the peer (group ranks)
  void* compute_stream;  // cudaStream_t whose queued work the call waits for
  long long recv_count;  // send_recv: the receive's elements
  int recv_peer;         // send_recv: the receive's peer
};

int shardscope_nccl_abi_version(void);
// NCCL's version code (e.g. 22304 for 2.23.4).
int shardscope_nccl_version(int* version, char* error, std::size_t error_size);
// ncclCommInitAll over devices[0..n): contexts[i] is group rank i's, on devices[i].
int shardscope_nccl_init_all(int n, const int* devices, void** contexts, char* error, std::size_t error_size);
// ncclGetUniqueId: id (SHARDSCOPE_NCCL_UNIQUE_ID_BYTES) names a new communicator
// across processes; its maker sends it to the other ranks (over MPI).
int shardscope_nccl_unique_id(void* id, char* error, std::size_t error_size);
// ncclCommInitRank on `device`: this process's rank `rank` of `nranks` in the
// communicator `id` names; returns when every rank has joined and each pair is
// connected. *context is as init_all's.
int shardscope_nccl_init_rank(int nranks, const void* id, int rank, int device, void** context, char* error,
                              std::size_t error_size);
// Enqueues one call (see ShardscopeNcclCall) with start and end timing events.
int shardscope_nccl_enqueue(void* context, const ShardscopeNcclCall* call, char* error, std::size_t error_size);
// *done := 1 once the last enqueued call has finished on the GPU, with its
// start and end in milliseconds since the context's reference event (recorded
// and waited for at init); 0 while it runs. An asynchronous NCCL error
// (a peer gone, a network failure) is returned as -1.
int shardscope_nccl_poll(void* context, int* done, double* start_ms, double* end_ms, char* error,
                         std::size_t error_size);
// ncclCommAbort: kernels of the context's calls stop, now or when they start.
void shardscope_nccl_abort(void* context);
// ncclCommDestroy after its calls finished; frees the events.
void shardscope_nccl_destroy(void* context);

using ShardscopeNcclAbiVersionFn = int (*)(void);
using ShardscopeNcclVersionFn = int (*)(int*, char*, std::size_t);
using ShardscopeNcclInitAllFn = int (*)(int, const int*, void**, char*, std::size_t);
using ShardscopeNcclUniqueIdFn = int (*)(void*, char*, std::size_t);
using ShardscopeNcclInitRankFn = int (*)(int, const void*, int, int, void**, char*, std::size_t);
using ShardscopeNcclEnqueueFn = int (*)(void*, const ShardscopeNcclCall*, char*, std::size_t);
using ShardscopeNcclPollFn = int (*)(void*, int*, double*, double*, char*, std::size_t);
using ShardscopeNcclAbortFn = void (*)(void*);
using ShardscopeNcclDestroyFn = void (*)(void*);

}  // extern "C"
