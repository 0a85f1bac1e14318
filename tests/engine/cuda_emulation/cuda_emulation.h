// SPDX-License-Identifier: GPL-3.0-or-later
// Runs CUDA kernel sources on the CPU, to test kernels where no GPU is: a
// test includes this header, then the kernel's .cu file itself, built as C++
// with this folder first on the include path (its cuda_runtime.h, mma.h,
// cuda_bf16.h, cuda_fp16.h and cublas_v2.h stand in for CUDA's).
//
// A launch (SS_LAUNCH, ops/cuda/cuda_common.cuh) runs the grid's blocks one
// after another; a block's threads are fibers with their own stacks (a guard
// page below each), and __syncthreads and the warp shuffles (__shfl_xor_sync,
// __shfl_sync) yield to the block's scheduler until every thread that has not
// returned waits there. A barrier that not every thread reaches is reported as
// a deadlock, and a __syncthreads released while some thread has returned as
// an error (a GPU may hang there). Shared memory is shared by a block's
// threads: static __shared__ arrays become function statics (per launching
// thread), and the dynamic shared memory (SS_DYNAMIC_SHARED) is filled with
// 0xFF bytes (NaN as float, bf16 and fp16) before each block, so a read of
// shared memory nothing wrote shows as NaN. The wmma calls check what the
// hardware requires (256-bit aligned pointers, leading dimensions a multiple
// of 8 16-bit or 4 float elements). Lane 0 of a warp runs a warp-wide wmma call
// whole, on its fragment, and stores it; the other lanes only check, so a
// warp's result appears once. Fibers switch only at barriers, in index order in
// one block and reverse order in the next, so a missing barrier between a
// write and another thread's read shows whichever thread comes first.
// A launch on a stream is queued there and runs on the stream's worker thread
// (cuda_runtime.h); on stream 0 it runs before the launch returns. The launch
// is refused where a GPU's would fail or fault (check_device_work).
// Not modelled: warps diverging around a wmma call, the hardware's fragment
// layouts, blocks running at the same time, static shared memory's garbage.
#pragma once

#include <math.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <array>
#include <cmath>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#define __global__
#define __device__
#define __host__
#define __forceinline__
#define __shared__ static thread_local  // one block at a time per launching thread
#define __align__(n)
#define __launch_bounds__(...)

struct dim3 {
  unsigned x = 1, y = 1, z = 1;
  constexpr dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};

// Per launching thread; hidden, so the plugin reaches them without a call
// through the dynamic linker on every read (local-dynamic TLS).
#define SS_EMULATION_LOCAL __attribute__((visibility("hidden")))
SS_EMULATION_LOCAL inline thread_local dim3 threadIdx, blockIdx, blockDim, gridDim;

struct CUstream_st;  // a stream of the emulated runtime (cuda_runtime_emulated.cpp)

namespace cuda_emulation {
#define SS_EMULATION_API __attribute__((visibility("default")))
// The emulated runtime (cuda_runtime_emulated.cpp), shared by every module.
// Runs `work` in stream order: queued on `stream`'s worker thread, or (stream
// 0) at once on the calling thread once the device's blocking streams are
// idle, where an exception it throws reaches the caller (cuda_runtime.h).
SS_EMULATION_API void enqueue(CUstream_st* stream, std::function<void()> work);
SS_EMULATION_API int stream_device(CUstream_st* stream);  // its device (stream 0: the current one)
SS_EMULATION_API int current();                           // the calling thread's current device
SS_EMULATION_API int device_of(const void* pointer);      // the device whose memory holds it, or -1
SS_EMULATION_API std::uint64_t progress();                // pieces of stream work finished so far
// Waits on `changed` under `lock` until ready(). A wait during which no stream
// finishes any work for SHARDSCOPE_EMULATED_WAIT_S seconds (120) is a
// deadlock, which on a GPU would hang: the program ends, naming `what`.
SS_EMULATION_API void wait_making_progress(std::unique_lock<std::mutex>& lock, std::condition_variable& changed,
                                           const std::function<bool()>& ready, const std::string& what);

[[noreturn]] inline void fail(const std::string& what);

// What a GPU refuses or faults on where host memory would not: work for a
// stream of another device than the current one (a kernel launch fails), and
// a pointer argument outside that device's memory (a kernel would fault; the
// emulation's device memory is host memory, so it is checked here). Stream 0
// is exempt from the pointer check: the kernel tests launch there on host
// memory.
inline void check_device_work(CUstream_st* stream, const std::vector<const void*>& pointers, const char* what) {
  const int device = stream_device(stream);
  if (device != current())
    fail(std::string(what) + " on a stream of device " + std::to_string(device) + " while device " +
         std::to_string(current()) + " is current");
  if (stream == nullptr) return;
  for (const void* p : pointers)
    if (p != nullptr && device_of(p) != device)
      fail(std::string(what) + ": a pointer argument is not memory of device " + std::to_string(device) +
           (device_of(p) < 0 ? " (not device memory at all)" : " (another device's)"));
}

template <typename T>
void collect_pointer(std::vector<const void*>& out, const T& argument) {
  if constexpr (std::is_pointer_v<T>) out.push_back(static_cast<const void*>(argument));
}

// cudaFuncSetAttribute's MaxDynamicSharedMemorySize per kernel: a launch may
// ask for more than 48 KiB only after it (as on the GPU).
inline constexpr std::size_t kDefaultDynamicShared = 48 * 1024;
inline std::mutex attributes_mutex;
inline std::map<const void*, std::size_t> dynamic_shared_limit;
}  // namespace cuda_emulation

inline int min(int a, int b) {
  return a < b ? a : b;
}
inline int max(int a, int b) {
  return a > b ? a : b;
}

namespace cuda_emulation {

[[noreturn]] inline void fail(const std::string& what) {
  throw std::logic_error("CUDA emulation: " + what);
}

// The most dynamic shared memory a block may ask for (cudaFuncSetAttribute refuses more).
inline std::size_t max_dynamic_shared_bytes = 99 * 1024;  // sm_86/89, the smallest of the targets

// A fiber's saved stack pointer. On x86-64 a switch is a few instructions
// (switch_stack below: the callee-saved registers pushed on the old stack, the
// stack pointer swapped, popped from the new one), so a launch of a million
// threads costs milliseconds; elsewhere ucontext stands in, which makes a
// system call per switch. The floating-point control words (rounding mode)
// are the launching thread's for every fiber: no kernel changes them.
#if defined(__x86_64__)
extern "C" void ss_emulation_switch_stack(void** save, void* load);
// One weak, hidden definition however many translation units include this header.
asm(R"(
  .text
  .weak ss_emulation_switch_stack
  .hidden ss_emulation_switch_stack
  .type ss_emulation_switch_stack, @function
ss_emulation_switch_stack:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size ss_emulation_switch_stack, .-ss_emulation_switch_stack
)");
struct Context {
  void* stack_pointer = nullptr;
};
#else
struct Context {
  ucontext_t context{};
};
#endif

// A fiber's stack, with an inaccessible page below it: an overflow faults
// instead of overwriting the heap.
class Stack {
 public:
  Stack() {
    const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    bytes_ = kBytes + page;
    base_ = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    if (base_ == MAP_FAILED) throw std::bad_alloc();
    mprotect(base_, page, PROT_NONE);
    bottom_ = static_cast<char*>(base_) + page;
  }
  ~Stack() {
    if (base_ != nullptr && base_ != MAP_FAILED) munmap(base_, bytes_);
  }
  Stack(Stack&& other) noexcept
      : base_(std::exchange(other.base_, nullptr)), bottom_(other.bottom_), bytes_(other.bytes_) {}
  Stack& operator=(Stack&&) = delete;
  Stack(const Stack&) = delete;
  char* bottom() const { return bottom_; }
  static constexpr std::size_t kBytes = 64 * 1024;

 private:
  void* base_ = nullptr;
  char* bottom_ = nullptr;
  std::size_t bytes_ = 0;
};

// A block runs as fibers on the launching thread: each GPU thread has its own
// stack; __syncthreads and the shuffles yield to the block's scheduler, which
// resumes the waiting fibers once every fiber that has not returned is waiting
// (a returned thread no longer holds a barrier up, as on a GPU). Blocks run one
// after another.
struct Fibers {
  enum State { runnable, at_block_barrier, at_warp_barrier, done };
  static constexpr std::size_t kStackBytes = Stack::kBytes;
  Context scheduler;
  std::vector<Context> context;
  std::vector<Stack> stacks;
  unsigned launches = 0;  // blocks alternate their threads' order from launch to launch
  std::vector<State> state;
  std::vector<std::array<std::uint64_t, 32>> warp_slots;  // two sets per warp (see exchange)
  std::vector<unsigned> shuffles;                         // per thread: shuffles so far in this block
  std::vector<std::exception_ptr> errors;
  std::function<void()> body;
  unsigned current = 0;
  unsigned char* dynamic_shared = nullptr;
};
// The launching thread's fibers; their stacks are kept from launch to launch.
SS_EMULATION_LOCAL inline thread_local Fibers fibers;
// The fibers of the launch running on this thread (set by Launch): a plain
// pointer, read without the initialization check `fibers` costs.
SS_EMULATION_LOCAL inline thread_local Fibers* running = nullptr;

// Out of line, so no caller holds variables across the switch.
[[gnu::noinline]] inline void switch_to(Context& save, Context& load) {
#if defined(__x86_64__)
  ss_emulation_switch_stack(&save.stack_pointer, load.stack_pointer);
#else
  swapcontext(&save.context, &load.context);
#endif
}

[[gnu::noinline]] inline void yield(Fibers::State wait) {
  Fibers& f = *running;
  const unsigned me = f.current;
  f.state[me] = wait;
  switch_to(f.context[me], f.scheduler);
}

inline void resume(Fibers& f, unsigned t) {
  switch_to(f.scheduler, f.context[t]);
}

// Runs the block's body as fiber `current`, then returns to the scheduler for
// good (it is never resumed after `done`).
[[noreturn, gnu::noinline]] inline void fiber_entry() {
  Fibers& f = *running;
  const unsigned me = f.current;
  try {
    f.body();
  } catch (...) {
    f.errors[me] = std::current_exception();
  }
  f.state[me] = Fibers::done;
  switch_to(f.context[me], f.scheduler);
  std::abort();  // unreachable: a done fiber is not resumed
}

#if !defined(__x86_64__)
extern "C" inline void ss_emulation_fiber_entry_c() {
  fiber_entry();
}
#endif

// A fresh context for fiber t on its stack, starting in fiber_entry.
inline void prepare(Fibers& f, unsigned t) {
  char* const top = f.stacks[t].bottom() + Fibers::kStackBytes;
#if defined(__x86_64__)
  // What switch_stack pops: six registers, then the return address
  // (fiber_entry), above which a fake return address sits where a call would
  // have left it (so fiber_entry starts with rsp = 8 mod 16).
  auto* slot = reinterpret_cast<std::uint64_t*>(reinterpret_cast<std::uintptr_t>(top) / 16 * 16) - 1;
  *slot = 0;                                                // fiber_entry's own (fake) return address
  *--slot = reinterpret_cast<std::uint64_t>(&fiber_entry);  // switch_stack's ret goes here
  for (int r = 0; r < 6; ++r) *--slot = 0;                  // rbp rbx r12 r13 r14 r15
  f.context[t].stack_pointer = slot;
#else
  (void)top;
  getcontext(&f.context[t].context);
  f.context[t].context.uc_stack.ss_sp = f.stacks[t].bottom();
  f.context[t].context.uc_stack.ss_size = Fibers::kStackBytes;
  f.context[t].context.uc_link = nullptr;
  makecontext(&f.context[t].context, ss_emulation_fiber_entry_c, 0);
#endif
}

// Every lane publishes its value, then reads lane `source` once the warp has
// published. Shuffles alternate between two sets of slots, so one barrier per
// shuffle is enough: a lane writes a set again only two shuffles later, after
// the barrier of the shuffle between, which every lane reaches only once it
// has read this one.
template <typename T, typename Source>
T exchange(T value, Source source) {
  static_assert(sizeof(T) <= sizeof(std::uint64_t));
  Fibers& f = *running;
  const unsigned me = f.current;
  const unsigned set = f.shuffles[me]++ & 1u;
  auto& slots = f.warp_slots[me / 32 * 2 + set];
  std::uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof(T));
  slots[me % 32] = bits;
  yield(Fibers::at_warp_barrier);
  const std::uint64_t got = slots[static_cast<std::size_t>(source(static_cast<int>(me % 32)) & 31)];
  T out;
  std::memcpy(&out, &got, sizeof(T));
  return out;
}

template <typename Kernel>
struct Launch {
  Kernel kernel;
  dim3 grid, block;
  std::size_t bytes;
  CUstream_st* stream;
  // Queues the grid on the stream with the arguments' values (a launch's
  // arguments are copied, as CUDA copies them); a bad geometry is refused here.
  template <typename... Args>
  void operator()(Args... args) const {
    const unsigned threads = block.x * block.y * block.z;
    if (threads == 0 || threads > 1024 || threads % 32 != 0)
      fail("a block of " + std::to_string(threads) + " threads (whole warps of 32 only)");
    if (bytes > kDefaultDynamicShared) {
      std::lock_guard lock(attributes_mutex);
      const auto it = dynamic_shared_limit.find(reinterpret_cast<const void*>(kernel));
      if (it == dynamic_shared_limit.end() || bytes > it->second)
        fail("a launch asks for " + std::to_string(bytes) +
             " bytes of dynamic shared memory, over 48 KiB, without cudaFuncSetAttribute allowing it");
    }
    std::vector<const void*> pointers;
    (collect_pointer(pointers, args), ...);
    check_device_work(stream, pointers, "a kernel launch");
    enqueue(stream, [launch = *this, args...] { launch.run(args...); });
  }
  template <typename... Args>
  void run(Args... args) const {
    const unsigned threads = block.x * block.y * block.z;
    Fibers& f = fibers;
    running = &f;
    f.context.assign(threads, Context{});
    while (f.stacks.size() < threads) f.stacks.emplace_back();
    const unsigned launch_parity = f.launches++ & 1u;
    f.warp_slots.assign(threads / 16, {});
    std::vector<unsigned char> shared_bytes(bytes + 128);
    f.dynamic_shared =
        reinterpret_cast<unsigned char*>((reinterpret_cast<std::uintptr_t>(shared_bytes.data()) + 127) / 128 * 128);
    f.body = [&] { kernel(args...); };
    for (unsigned z = 0; z < grid.z; ++z)
      for (unsigned y = 0; y < grid.y; ++y)
        for (unsigned x = 0; x < grid.x; ++x) {
          if (bytes > 0) std::memset(f.dynamic_shared, 0xFF, bytes);  // unwritten shared memory reads as NaN
          f.state.assign(threads, Fibers::runnable);
          f.errors.assign(threads, nullptr);
          f.shuffles.assign(threads, 0);
          for (unsigned t = 0; t < threads; ++t) prepare(f, t);
          blockIdx = dim3(x, y, z);
          blockDim = block;
          gridDim = grid;
          // Threads run from barrier to barrier in index order, or in reverse
          // order in every other block: a read that a missing barrier lets run
          // before another thread's write shows one way or the other.
          const bool reverse = ((x + y + z + launch_parity) & 1u) != 0;
          for (;;) {
            bool ran = false;
            for (unsigned i = 0; i < threads; ++i) {
              const unsigned t = reverse ? threads - 1 - i : i;
              if (f.state[t] != Fibers::runnable) continue;
              ran = true;
              f.current = t;
              threadIdx = dim3(t % block.x, t / block.x % block.y, t / (block.x * block.y));
              resume(f, t);
            }
            if (ran) continue;
            // Nobody can run: release a barrier every live fiber of its scope has reached.
            bool live = false, all_at_block = true;
            for (unsigned t = 0; t < threads; ++t)
              if (f.state[t] != Fibers::done) {
                live = true;
                all_at_block = all_at_block && f.state[t] == Fibers::at_block_barrier;
              }
            if (!live) break;
            bool released = false;
            if (all_at_block) {
              // A thread that returned never reaches this barrier: a GPU may hang.
              for (unsigned t = 0; t < threads; ++t)
                if (f.state[t] == Fibers::done)
                  fail("a __syncthreads that thread " + std::to_string(t) + " never reaches (it returned before)");
              for (auto& st : f.state)
                if (st == Fibers::at_block_barrier) st = Fibers::runnable;
              released = true;
            }
            for (unsigned w = 0; w < threads / 32 && !released; ++w) {
              bool waiting = false, all_at_warp = true;
              for (unsigned t = w * 32; t < w * 32 + 32; ++t)
                if (f.state[t] != Fibers::done) {
                  waiting = true;
                  all_at_warp = all_at_warp && f.state[t] == Fibers::at_warp_barrier;
                }
              if (waiting && all_at_warp) {
                for (unsigned t = w * 32; t < w * 32 + 32; ++t)
                  if (f.state[t] == Fibers::at_warp_barrier) f.state[t] = Fibers::runnable;
                released = true;
              }
            }
            if (!released)
              fail(
                  "deadlock: threads wait at different barriers (a __syncthreads or shuffle not every thread reaches)");
          }
          for (auto& e : f.errors)
            if (e) std::rethrow_exception(e);
        }
  }
};

template <typename Kernel>
Launch<Kernel> launch(Kernel kernel, dim3 grid, dim3 block, std::size_t bytes, CUstream_st* stream) {
  return Launch<Kernel>{kernel, grid, block, bytes, stream};
}

}  // namespace cuda_emulation

inline void __syncthreads() {
  cuda_emulation::yield(cuda_emulation::Fibers::at_block_barrier);
}

// Full-warp shuffles only (mask 0xffffffff, width 32), as the kernels use them.
template <typename T>
T __shfl_xor_sync(unsigned /*mask*/, T value, int lane_mask) {
  return cuda_emulation::exchange(value, [lane_mask](int lane) { return lane ^ lane_mask; });
}
template <typename T>
T __shfl_sync(unsigned /*mask*/, T value, int source_lane) {
  return cuda_emulation::exchange(value, [source_lane](int) { return source_lane; });
}

#define SS_DYNAMIC_SHARED(name) unsigned char* const name = ::cuda_emulation::running->dynamic_shared

#define SS_LAUNCH(kernel, grid, block, shared_bytes, stream) \
  ::cuda_emulation::launch((kernel), dim3(grid), dim3(block), static_cast<std::size_t>(shared_bytes), (stream))
