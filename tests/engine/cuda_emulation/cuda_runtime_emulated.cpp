// SPDX-License-Identifier: GPL-3.0-or-later
// The emulated CUDA runtime (cuda_runtime.h in this folder says what it models):
// libshardscope_cudart_emulated.so, one copy per program however many
// emulated modules (the CUDA and NCCL plugins, a kernel test) use it.
#include <algorithm>
#include <array>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cuda_runtime.h"

// A stream: a worker thread running its queue in order.
struct CUstream_st {
  int device = 0;
  bool blocking = true;  // waited for by the legacy default stream
  std::deque<std::function<void()>> queue;
  bool running = false;  // the worker is inside a piece of work
  bool stop = false;
  std::thread worker;
};

// One cudaEventRecord: done once its stream reached it, with the time then.
// Shared by the event and the stream work that completes or waits for it, so
// an event destroyed (or recorded again) while work still refers to a record
// leaves that record intact, as CUDA's snapshot semantics say.
struct EventRecord {
  bool done = false;
  std::chrono::steady_clock::time_point when{};
};

// An event: its device and its latest record (none before the first).
struct CUevent_st {
  int device = 0;
  bool timing = true;
  std::shared_ptr<EventRecord> last;
};

namespace cuda_emulation {
namespace {
std::atomic<std::uint64_t> finished_work{0};  // pieces of stream work done so far: progress

std::chrono::seconds wait_limit() {
  static const std::chrono::seconds limit = [] {
    const char* env = std::getenv("SHARDSCOPE_EMULATED_WAIT_S");
    const int s = env != nullptr ? std::atoi(env) : 120;
    return std::chrono::seconds(s > 0 ? s : 120);
  }();
  return limit;
}
}  // namespace

void wait_making_progress(std::unique_lock<std::mutex>& lock, std::condition_variable& changed,
                          const std::function<bool()>& ready, const std::string& what) {
  auto seen = finished_work.load();
  auto deadline = std::chrono::steady_clock::now() + wait_limit();
  while (!changed.wait_for(lock, std::chrono::milliseconds(500), ready)) {
    const auto now = std::chrono::steady_clock::now();
    if (const auto progress = finished_work.load(); progress != seen) {
      seen = progress;
      deadline = now + wait_limit();
    } else if (now >= deadline) {
      std::fprintf(stderr,
                   "%s has waited %lld s with no stream making progress: a deadlock (on a GPU this would hang); "
                   "SHARDSCOPE_EMULATED_WAIT_S sets the limit\n",
                   what.c_str(), static_cast<long long>(wait_limit().count()));
      std::fflush(stderr);
      std::abort();
    }
  }
}

namespace {

// One lock and one condition for all streams and events: simple, and the
// emulation's work items are large next to the contention. Never destroyed:
// stream workers a program leaves running still wait on them at its exit.
std::mutex& mutex = *new std::mutex;
std::condition_variable& changed = *new std::condition_variable;
std::vector<CUstream_st*>& streams = *new std::vector<CUstream_st*>;  // live streams
struct Allocation {
  std::size_t bytes = 0;
  int device = 0;
};
std::map<void*, Allocation>& allocations = *new std::map<void*, Allocation>;
std::array<std::size_t, 8> allocated_bytes{};  // per pretend device (device_count() <= 8)
std::atomic<bool> failed{false};
std::string failure;  // the first failure's message (under mutex)
thread_local int current_device = 0;

int device_count() {
  static const int count = [] {
    const char* env = std::getenv("SHARDSCOPE_EMULATED_GPUS");
    const int n = env != nullptr ? std::atoi(env) : 1;
    return std::clamp(n, 1, 8);
  }();
  return count;
}

// Each pretend device's size: SHARDSCOPE_EMULATED_GPU_BYTES (read at every
// allocation, so a test can shrink the device for one run), else 4 GiB.
std::size_t device_bytes() {
  const char* env = std::getenv("SHARDSCOPE_EMULATED_GPU_BYTES");
  const long long n = env != nullptr ? std::atoll(env) : 0;
  return n > 0 ? static_cast<std::size_t>(n) : kDeviceBytes;
}

template <typename Ready>
void wait_locked(std::unique_lock<std::mutex>& lock, Ready ready, const char* what) {
  wait_making_progress(lock, changed, ready, std::string("CUDA emulation: ") + what);
}

void record_failure(const char* what) {
  {
    std::lock_guard lock(mutex);
    if (failure.empty()) failure = what;
  }
  failed = true;
  std::fprintf(stderr, "CUDA emulation: stream work failed: %s\n", what);
}

void run_stream(CUstream_st* s) {
  std::unique_lock lock(mutex);
  for (;;) {
    changed.wait(lock, [&] { return s->stop || !s->queue.empty(); });
    if (s->queue.empty()) return;  // stopped and drained
    std::function<void()> work = std::move(s->queue.front());
    s->queue.pop_front();
    s->running = true;
    lock.unlock();
    try {
      work();
    } catch (const std::exception& e) {
      record_failure(e.what());
    } catch (...) {
      record_failure("an unknown exception");
    }
    work = nullptr;  // its captures go before the stream counts as idle
    lock.lock();
    s->running = false;
    ++finished_work;
    changed.notify_all();
  }
}

bool idle(const CUstream_st* s) {
  return s->queue.empty() && !s->running;
}

// The legacy default stream's rule: its work waits for every blocking stream of the device.
void wait_for_blocking_streams(std::unique_lock<std::mutex>& lock, int device, const char* what) {
  wait_locked(
      lock,
      [&] {
        return std::all_of(streams.begin(), streams.end(),
                           [&](const CUstream_st* s) { return !s->blocking || s->device != device || idle(s); });
      },
      what);
}

cudaError_t sticky() {
  return failed ? cudaErrorLaunchFailure : cudaSuccess;
}

bool valid_stream(cudaStream_t stream) {
  return stream == nullptr || std::find(streams.begin(), streams.end(), stream) != streams.end();
}

}  // namespace

void enqueue(cudaStream_t stream, std::function<void()> work) {
  std::unique_lock lock(mutex);
  if (stream == nullptr) {
    wait_for_blocking_streams(lock, current_device, "work on the default stream");
    lock.unlock();
    work();
    return;
  }
  stream->queue.push_back(std::move(work));
  changed.notify_all();
}

int stream_device(cudaStream_t stream) {
  return stream != nullptr ? stream->device : current_device;
}

int current() {
  return current_device;
}

int device_of(const void* pointer) {
  std::lock_guard lock(mutex);
  auto it = allocations.upper_bound(const_cast<void*>(pointer));
  if (it == allocations.begin()) return -1;
  --it;
  const auto* start = static_cast<const unsigned char*>(it->first);
  const auto* p = static_cast<const unsigned char*>(pointer);
  return p <= start + it->second.bytes ? it->second.device : -1;  // one past the end counts (empty ranges)
}

std::uint64_t progress() {
  return finished_work.load();
}

}  // namespace cuda_emulation

using namespace cuda_emulation;

cudaError_t cudaGetLastError() {
  return sticky();
}

const char* cudaGetErrorName(cudaError_t e) {
  switch (e) {
    case cudaSuccess:
      return "cudaSuccess";
    case cudaErrorMemoryAllocation:
      return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidDevice:
      return "cudaErrorInvalidDevice";
    case cudaErrorInvalidResourceHandle:
      return "cudaErrorInvalidResourceHandle";
    case cudaErrorNotReady:
      return "cudaErrorNotReady";
    case cudaErrorLaunchFailure:
      return "cudaErrorLaunchFailure";
    default:
      return "cudaErrorInvalidValue";
  }
}

const char* cudaGetErrorString(cudaError_t e) {
  switch (e) {
    case cudaSuccess:
      return "no error";
    case cudaErrorMemoryAllocation:
      return "out of memory";
    case cudaErrorInvalidDevice:
      return "invalid device ordinal";
    case cudaErrorInvalidResourceHandle:
      return "invalid resource handle";
    case cudaErrorNotReady:
      return "device not ready";
    case cudaErrorLaunchFailure: {
      static thread_local std::string text;
      std::lock_guard lock(cuda_emulation::mutex);
      text = "unspecified launch failure (emulation: " + failure + ")";
      return text.c_str();
    }
    default:
      return "invalid argument";
  }
}

cudaError_t cudaGetDeviceCount(int* count) {
  *count = device_count();
  return cudaSuccess;
}

cudaError_t cudaSetDevice(int device) {
  if (device < 0 || device >= device_count()) return cudaErrorInvalidDevice;
  current_device = device;
  return cudaSuccess;
}

cudaError_t cudaGetDevice(int* device) {
  *device = current_device;
  return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
  if (device < 0 || device >= device_count()) return cudaErrorInvalidDevice;
  *prop = cudaDeviceProp{};
  std::snprintf(prop->name, sizeof prop->name, "%s", "CUDA emulation on the CPU");
  prop->totalGlobalMem = device_bytes();
  prop->major = 8;
  prop->minor = 0;
  prop->multiProcessorCount = 1;
  return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize() {
  std::unique_lock lock(cuda_emulation::mutex);
  const int device = current_device;
  wait_locked(
      lock,
      [&] {
        return std::all_of(streams.begin(), streams.end(),
                           [&](const CUstream_st* s) { return s->device != device || idle(s); });
      },
      "cudaDeviceSynchronize");
  return sticky();
}

cudaError_t cudaMalloc(void** pointer, std::size_t bytes) {
  std::lock_guard lock(cuda_emulation::mutex);
  std::size_t& used = allocated_bytes[static_cast<std::size_t>(current_device)];
  if (used + bytes > device_bytes()) return cudaErrorMemoryAllocation;
  void* p = std::aligned_alloc(256, (bytes + 255) / 256 * 256 + 256);
  if (p == nullptr) return cudaErrorMemoryAllocation;
  std::memset(p, 0xA5, bytes);  // fresh device memory holds garbage, not zeros
  allocations[p] = Allocation{bytes, current_device};
  used += bytes;
  *pointer = p;
  return cudaSuccess;
}

// cudaFree waits for all work on the device first (CUDA documents the implicit
// synchronization), so a block is never freed under a kernel still using it.
cudaError_t cudaFree(void* pointer) {
  if (pointer == nullptr) return cudaSuccess;
  if (const cudaError_t e = cudaDeviceSynchronize(); e != cudaSuccess) return e;
  std::lock_guard lock(cuda_emulation::mutex);
  auto it = allocations.find(pointer);
  if (it == allocations.end()) return cudaErrorInvalidValue;
  allocated_bytes[static_cast<std::size_t>(it->second.device)] -= it->second.bytes;
  allocations.erase(it);
  std::free(pointer);
  return cudaSuccess;
}

cudaError_t cudaMemGetInfo(std::size_t* free_bytes, std::size_t* total_bytes) {
  std::lock_guard lock(cuda_emulation::mutex);
  const std::size_t used = allocated_bytes[static_cast<std::size_t>(current_device)];
  *total_bytes = std::max(device_bytes(), used);
  *free_bytes = *total_bytes - used;
  return cudaSuccess;
}

cudaError_t cudaMemcpy(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind) {
  return cudaMemcpyAsync(dst, src, bytes, kind, nullptr);  // the default stream: waits, then copies
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind, cudaStream_t stream) {
  {
    std::lock_guard lock(cuda_emulation::mutex);
    if (!valid_stream(stream)) return cudaErrorInvalidResourceHandle;
  }
  // The device side of a copy must be device memory (the host's would fault);
  // a host side may be anything.
  const bool device_dst = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
  const bool device_src = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
  if (bytes > 0 && ((device_dst && device_of(dst) < 0) || (device_src && device_of(src) < 0))) {
    std::fprintf(stderr, "CUDA emulation: cudaMemcpy(kind %d) of %zu bytes with a device side outside device memory\n",
                 static_cast<int>(kind), bytes);
    return cudaErrorInvalidValue;
  }
  enqueue(stream, [=] {
    if (bytes > 0) std::memmove(dst, src, bytes);
  });
  return sticky();
}

cudaError_t cudaMemset(void* dst, int value, std::size_t bytes) {
  return cudaMemsetAsync(dst, value, bytes, nullptr);
}

cudaError_t cudaMemsetAsync(void* dst, int value, std::size_t bytes, cudaStream_t stream) {
  {
    std::lock_guard lock(cuda_emulation::mutex);
    if (!valid_stream(stream)) return cudaErrorInvalidResourceHandle;
  }
  if (bytes > 0 && device_of(dst) < 0) {
    std::fprintf(stderr, "CUDA emulation: cudaMemset of %zu bytes outside device memory\n", bytes);
    return cudaErrorInvalidValue;
  }
  enqueue(stream, [=] {
    if (bytes > 0) std::memset(dst, value, bytes);
  });
  return sticky();
}

cudaError_t cudaStreamCreate(cudaStream_t* stream) {
  return cudaStreamCreateWithFlags(stream, cudaStreamDefault);
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned flags) {
  auto* s = new CUstream_st;
  s->device = current_device;
  s->blocking = (flags & cudaStreamNonBlocking) == 0;
  {
    std::lock_guard lock(cuda_emulation::mutex);
    streams.push_back(s);
  }
  s->worker = std::thread(run_stream, s);
  *stream = s;
  return cudaSuccess;
}

// The stream's queued work still runs, as in CUDA; unlike CUDA, this waits for
// it (so no worker outlives the program's data).
cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  if (stream == nullptr) return cudaErrorInvalidResourceHandle;
  {
    std::lock_guard lock(cuda_emulation::mutex);
    if (!valid_stream(stream)) return cudaErrorInvalidResourceHandle;
    stream->stop = true;
    changed.notify_all();
  }
  stream->worker.join();
  {
    std::lock_guard lock(cuda_emulation::mutex);
    streams.erase(std::find(streams.begin(), streams.end(), stream));
    changed.notify_all();
  }
  delete stream;
  return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  std::unique_lock lock(cuda_emulation::mutex);
  if (!valid_stream(stream)) return cudaErrorInvalidResourceHandle;
  if (stream == nullptr)
    wait_for_blocking_streams(lock, current_device, "cudaStreamSynchronize(0)");
  else
    wait_locked(
        lock, [&] { return idle(stream); }, "cudaStreamSynchronize");
  return sticky();
}

cudaError_t cudaStreamQuery(cudaStream_t stream) {
  std::lock_guard lock(cuda_emulation::mutex);
  if (stream == nullptr || !valid_stream(stream)) return cudaErrorInvalidResourceHandle;
  if (failed) return cudaErrorLaunchFailure;
  return idle(stream) ? cudaSuccess : cudaErrorNotReady;
}

cudaError_t cudaEventCreate(cudaEvent_t* event) {
  return cudaEventCreateWithFlags(event, cudaEventDefault);
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned flags) {
  *event = new CUevent_st;
  (*event)->device = current_device;
  (*event)->timing = (flags & cudaEventDisableTiming) == 0;
  return cudaSuccess;
}

// As CUDA's: at once; work that records or waits for it keeps its record.
cudaError_t cudaEventDestroy(cudaEvent_t event) {
  if (event == nullptr) return cudaErrorInvalidResourceHandle;
  std::lock_guard lock(cuda_emulation::mutex);
  delete event;
  return cudaSuccess;
}

// Fails where the event and the stream belong to different devices (CUDA's rule).
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  auto record = std::make_shared<EventRecord>();
  {
    std::lock_guard lock(cuda_emulation::mutex);
    if (event == nullptr || !valid_stream(stream)) return cudaErrorInvalidResourceHandle;
    if (stream_device(stream) != event->device) return cudaErrorInvalidResourceHandle;
    event->last = record;
  }
  enqueue(stream, [record] {
    std::lock_guard lock(cuda_emulation::mutex);
    record->done = true;
    record->when = std::chrono::steady_clock::now();
    changed.notify_all();
  });
  return sticky();
}

cudaError_t cudaEventQuery(cudaEvent_t event) {
  std::lock_guard lock(cuda_emulation::mutex);
  if (event == nullptr) return cudaErrorInvalidResourceHandle;
  if (failed) return cudaErrorLaunchFailure;
  return event->last == nullptr || event->last->done ? cudaSuccess : cudaErrorNotReady;
}

cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  std::unique_lock lock(cuda_emulation::mutex);
  if (event == nullptr) return cudaErrorInvalidResourceHandle;
  if (const std::shared_ptr<EventRecord> record = event->last)
    wait_locked(
        lock, [&] { return record->done; }, "cudaEventSynchronize");
  return sticky();
}

// The stream's later work waits for the event's latest record as of this call
// (a later cudaEventRecord does not change what it waits for).
cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned) {
  std::shared_ptr<EventRecord> record;
  {
    std::lock_guard lock(cuda_emulation::mutex);
    if (event == nullptr || !valid_stream(stream)) return cudaErrorInvalidResourceHandle;
    record = event->last;
  }
  if (record == nullptr) return sticky();  // never recorded: nothing to wait for
  enqueue(stream, [record] {
    std::unique_lock lock(cuda_emulation::mutex);
    wait_locked(
        lock, [&] { return record->done; }, "cudaStreamWaitEvent's stream");
  });
  return sticky();
}

cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  std::lock_guard lock(cuda_emulation::mutex);
  if (start == nullptr || end == nullptr || !start->timing || !end->timing) return cudaErrorInvalidResourceHandle;
  if (start->last == nullptr || end->last == nullptr) return cudaErrorInvalidResourceHandle;
  if (!start->last->done || !end->last->done) return cudaErrorNotReady;
  *ms = std::chrono::duration<float, std::milli>(end->last->when - start->last->when).count();
  return cudaSuccess;
}
