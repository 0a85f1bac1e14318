// SPDX-License-Identifier: GPL-3.0-or-later
// Stand-in for NCCL's nccl.h under the CPU emulation (cuda_runtime.h): the
// calls ShardScope's NCCL plugin (engine/ops/nccl/nccl_plugin.cpp) makes,
// implemented by nccl_emulated.cpp on the emulated streams, so the plugin
// itself runs on the CPU against pretend GPUs (SHARDSCOPE_EMULATED_GPUS).
// What it keeps of NCCL: a collective is queued on the stream and, when the
// stream reaches it, waits there until every rank of the communicator has
// reached the same collective (their k-th); a mismatch (another op, count or
// type) is an asynchronous error, as NCCL reports what it can. A send and its
// receive meet: the receive waits for the send's data, and the send completes
// only once received (NCCL may complete a small send sooner, never later), so
// a schedule that waits here would wait on GPUs too. Calls between
// ncclGroupStart and ncclGroupEnd are queued at ncclGroupEnd, each rank's as
// one piece of work that posts its sends, runs its other calls, then waits for
// its sends, so one thread can drive every rank of a group. ncclCommAbort makes
// that communicator's waiting and later calls return at once (their buffers
// untouched); the peers of an aborted rank keep waiting until they are aborted
// too, as on GPUs, where the emulation's deadlock limit ends the program.
// Sums run in rank order in fp32; 16-bit results are rounded once.
// Across processes (ncclGetUniqueId, ncclCommInitRank under mpirun), the same
// calls travel as MPI messages (nccl_emulated_mpi.cpp): the unique id names
// its maker's process, which every rank asks to join; an id that process never
// made is refused (SHARDSCOPE_EMULATED_NCCL_WRONG_ID=<MPI rank> changes that
// process's copy; SHARDSCOPE_EMULATED_NCCL_STOP_INIT=<MPI rank> makes it SIGSTOP
// itself as it joins: test hooks). Device memory is each process's own host memory.
#pragma once

#include <cstddef>

#include "cuda_runtime.h"

typedef struct ncclComm* ncclComm_t;
typedef enum {
  ncclSuccess = 0,
  ncclUnhandledCudaError = 1,
  ncclSystemError = 2,
  ncclInternalError = 3,
  ncclInvalidArgument = 4,
  ncclInvalidUsage = 5,
  ncclRemoteError = 6,
  ncclInProgress = 7,
} ncclResult_t;
typedef enum { ncclFloat16 = 6, ncclFloat32 = 7, ncclBfloat16 = 9 } ncclDataType_t;
typedef enum { ncclSum = 0, ncclAvg = 4 } ncclRedOp_t;

#define NCCL_UNIQUE_ID_BYTES 128
typedef struct {
  char internal[NCCL_UNIQUE_ID_BYTES];
} ncclUniqueId;

ncclResult_t ncclGetVersion(int* version);
const char* ncclGetLastError(ncclComm_t comm);  // the last failure's details (any communicator)
ncclResult_t ncclGetUniqueId(ncclUniqueId* id);
ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank);
const char* ncclGetErrorString(ncclResult_t result);
ncclResult_t ncclCommInitAll(ncclComm_t* comms, int n, const int* devices);
ncclResult_t ncclCommDestroy(ncclComm_t comm);
ncclResult_t ncclCommAbort(ncclComm_t comm);
ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* async_error);
ncclResult_t ncclGroupStart();
ncclResult_t ncclGroupEnd();
ncclResult_t ncclAllReduce(const void* send, void* recv, std::size_t count, ncclDataType_t type, ncclRedOp_t op,
                           ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclReduceScatter(const void* send, void* recv, std::size_t recv_count, ncclDataType_t type,
                               ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclAllGather(const void* send, void* recv, std::size_t send_count, ncclDataType_t type, ncclComm_t comm,
                           cudaStream_t stream);
ncclResult_t ncclBroadcast(const void* send, void* recv, std::size_t count, ncclDataType_t type, int root,
                           ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclSend(const void* send, std::size_t count, ncclDataType_t type, int peer, ncclComm_t comm,
                      cudaStream_t stream);
ncclResult_t ncclRecv(void* recv, std::size_t count, ncclDataType_t type, int peer, ncclComm_t comm,
                      cudaStream_t stream);
