// SPDX-License-Identifier: GPL-3.0-or-later
// A stand-in for libshardscope_nccl.so (ops/nccl/nccl_plugin_abi.h) for CPU
// tests of the engine's NCCL path (parallel/nccl_communicator.cpp, the
// trainer's one-rank-per-GPU wiring), on the pretend device's memory
// (fake_device.h: device addresses have bit 62 set). It keeps NCCL's
// semantics where they matter for hangs: a call completes only when its peers
// have posted their matching calls (a collective: every rank of the group; a
// send: the peer's receive, in order per pair; a grouped send + receive: both
// ops met). It runs the data movement on the host when a call completes.
// Sums go in rank order in fp32 and round once (NCCL's order differs: tests
// compare with tolerances). Loaded by tests through SHARDSCOPE_NCCL_PLUGIN.
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/half.h"
#include "ops/nccl/nccl_plugin_abi.h"

namespace {

constexpr std::uintptr_t kDeviceTag = std::uintptr_t{1} << 62;

// The host address behind a pretend-device address (host addresses pass).
template <class T>
T* real(T* p) {
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  return reinterpret_cast<T*>(a & ~kDeviceTag);
}

std::size_t element_size(int dtype) {
  return dtype == 0 ? 4 : 2;
}

float load(int dtype, const void* base, std::size_t i) {
  if (dtype == 0) return static_cast<const float*>(base)[i];
  const std::uint16_t b = static_cast<const std::uint16_t*>(base)[i];
  return dtype == 1 ? shardscope::half::f16_bits_to_float(b) : shardscope::half::bf16_bits_to_float(b);
}

void store(int dtype, void* base, std::size_t i, float v) {
  if (dtype == 0)
    static_cast<float*>(base)[i] = v;
  else
    static_cast<std::uint16_t*>(base)[i] =
        dtype == 1 ? shardscope::half::float_to_f16_bits(v) : shardscope::half::float_to_bf16_bits(v);
}

struct Op {  // one point-to-point half of a call
  bool send;
  int peer;
  const void* data_send;
  void* data_recv;
  std::size_t bytes;
  bool met = false;
};

struct Call {
  ShardscopeNcclCall c;
  std::vector<Op> ops;  // point to point (send, recv, send_recv); empty for collectives
  bool done = false;
};

struct Group {
  int n;
  std::mutex mutex;
  std::vector<std::vector<std::shared_ptr<Call>>> queues;  // per rank, oldest first (done ones popped)
  explicit Group(int size) : n(size), queues(static_cast<std::size_t>(size)) {}

  std::shared_ptr<Call> head(int r) {
    auto& q = queues[static_cast<std::size_t>(r)];
    return q.empty() ? nullptr : q.front();
  }
  void pop_done(int r) {
    auto& q = queues[static_cast<std::size_t>(r)];
    while (!q.empty() && q.front()->done) q.erase(q.begin());
  }

  // Completes whatever can complete now. Called with the mutex held.
  void progress() {
    for (bool moved = true; moved;) {
      moved = false;
      // Point to point: meet each unmet op of a head with the peer head's opposite op.
      for (int r = 0; r < n; ++r) {
        const auto call = head(r);
        if (call == nullptr || call->ops.empty()) continue;
        for (Op& op : call->ops) {
          if (op.met) continue;
          const auto peer = head(op.peer);
          if (peer == nullptr) continue;
          for (Op& other : peer->ops) {
            if (other.met || other.peer != r || other.send == op.send) continue;
            Op& s = op.send ? op : other;
            Op& d = op.send ? other : op;
            if (s.bytes != d.bytes)
              std::fprintf(stderr, "fake NCCL: send of %zu bytes met a receive of %zu\n", s.bytes, d.bytes);
            std::memcpy(real(d.data_recv), real(s.data_send), std::min(s.bytes, d.bytes));
            op.met = other.met = true;
            moved = true;
            break;
          }
        }
      }
      for (int r = 0; r < n; ++r) {
        const auto call = head(r);
        if (call == nullptr || call->ops.empty()) continue;
        bool all = true;
        for (const Op& op : call->ops) all = all && op.met;
        if (all) {
          call->done = true;
          pop_done(r);
          moved = true;
        }
      }
      // Collectives: every rank's head is one.
      bool ready = true;
      for (int r = 0; r < n && ready; ++r) {
        const auto call = head(r);
        ready = call != nullptr && call->ops.empty();
      }
      if (ready) {
        run_collective();
        for (int r = 0; r < n; ++r) {
          head(r)->done = true;
          pop_done(r);
        }
        moved = true;
      }
    }
  }

  void run_collective() {
    std::vector<ShardscopeNcclCall> c;
    for (int r = 0; r < n; ++r) c.push_back(head(r)->c);
    const int op = c[0].op, dtype = c[0].dtype;
    for (int r = 1; r < n; ++r)
      if (c[static_cast<std::size_t>(r)].op != op || c[static_cast<std::size_t>(r)].count != c[0].count)
        std::fprintf(stderr, "fake NCCL: ranks disagree on a collective (op %d vs %d)\n", op,
                     c[static_cast<std::size_t>(r)].op);
    const auto count = static_cast<std::size_t>(c[0].count);
    const std::size_t es = element_size(dtype);
    const auto rank = [&](int r) -> const ShardscopeNcclCall& { return c[static_cast<std::size_t>(r)]; };
    switch (op) {
      case shardscope_nccl_all_reduce:
      case shardscope_nccl_reduce_scatter: {
        const bool scatter = op == shardscope_nccl_reduce_scatter;
        const std::size_t total = scatter ? count * static_cast<std::size_t>(n) : count;
        std::vector<float> sum(total, 0.0f);
        for (int r = 0; r < n; ++r)
          for (std::size_t i = 0; i < total; ++i) sum[i] += load(dtype, real(rank(r).send), i);
        if (c[0].average != 0)
          for (float& v : sum) v /= static_cast<float>(n);
        for (int r = 0; r < n; ++r)
          for (std::size_t i = 0; i < count; ++i)
            store(dtype, real(rank(r).recv), i, sum[scatter ? static_cast<std::size_t>(r) * count + i : i]);
        break;
      }
      case shardscope_nccl_all_gather: {
        std::vector<unsigned char> all(count * es * static_cast<std::size_t>(n));
        for (int r = 0; r < n; ++r)
          std::memcpy(all.data() + static_cast<std::size_t>(r) * count * es, real(rank(r).send), count * es);
        for (int r = 0; r < n; ++r) std::memcpy(real(rank(r).recv), all.data(), all.size());
        break;
      }
      case shardscope_nccl_broadcast: {
        const int root = c[0].peer;
        std::vector<unsigned char> data(count * es);
        std::memcpy(data.data(), real(rank(root).send), data.size());
        for (int r = 0; r < n; ++r) std::memcpy(real(rank(r).recv), data.data(), data.size());
        break;
      }
      case shardscope_nccl_gather: {
        const int root = c[0].peer;
        for (int r = 0; r < n; ++r)
          std::memmove(static_cast<unsigned char*>(real(rank(root).recv)) + static_cast<std::size_t>(r) * count * es,
                       real(rank(r).send), count * es);
        break;
      }
      case shardscope_nccl_scatter: {
        const int root = c[0].peer;
        for (int r = 0; r < n; ++r)
          std::memmove(
              real(rank(r).recv),
              static_cast<const unsigned char*>(real(rank(root).send)) + static_cast<std::size_t>(r) * count * es,
              count * es);
        break;
      }
      default:
        std::fprintf(stderr, "fake NCCL: unknown collective %d\n", op);
    }
  }
};

struct Context {
  std::shared_ptr<Group> group;
  int rank;
  std::shared_ptr<Call> last;
  bool aborted = false;
};

int fail(char* error, std::size_t size, const char* message) {
  if (error != nullptr && size > 0) std::snprintf(error, size, "%s", message);
  return -1;
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) int shardscope_nccl_abi_version(void) {
  return SHARDSCOPE_NCCL_PLUGIN_ABI;
}

__attribute__((visibility("default"))) int shardscope_nccl_version(int* version, char*, std::size_t) {
  *version = 99999;  // not a real NCCL
  return 0;
}

__attribute__((visibility("default"))) int shardscope_nccl_init_all(int n, const int*, void** contexts, char* error,
                                                                    std::size_t error_size) {
  if (n < 1) return fail(error, error_size, "fake NCCL: no devices");
  auto group = std::make_shared<Group>(n);
  for (int i = 0; i < n; ++i) contexts[i] = new Context{group, i, nullptr};
  return 0;
}

// One process only: a communicator across processes is the emulated NCCL's (cuda_emulation/nccl.h).
__attribute__((visibility("default"))) int shardscope_nccl_unique_id(void*, char* error, std::size_t error_size) {
  return fail(error, error_size, "fake NCCL: no communicators across processes");
}

__attribute__((visibility("default"))) int shardscope_nccl_init_rank(int, const void*, int, int, void**, char* error,
                                                                     std::size_t error_size) {
  return fail(error, error_size, "fake NCCL: no communicators across processes");
}

__attribute__((visibility("default"))) int shardscope_nccl_enqueue(void* context, const ShardscopeNcclCall* call,
                                                                   char* error, std::size_t error_size) {
  auto& ctx = *static_cast<Context*>(context);
  if (ctx.aborted) return fail(error, error_size, "fake NCCL: communicator aborted");
  auto c = std::make_shared<Call>();
  c->c = *call;
  const std::size_t es = element_size(call->dtype);
  const auto bytes = static_cast<std::size_t>(call->count) * es;
  if (call->op == shardscope_nccl_send) c->ops.push_back({true, call->peer, call->send, nullptr, bytes});
  if (call->op == shardscope_nccl_recv) c->ops.push_back({false, call->peer, nullptr, call->recv, bytes});
  if (call->op == shardscope_nccl_send_recv) {
    c->ops.push_back({true, call->peer, call->send, nullptr, bytes});
    c->ops.push_back({false, call->recv_peer, nullptr, call->recv, static_cast<std::size_t>(call->recv_count) * es});
  }
  std::lock_guard lock(ctx.group->mutex);
  ctx.group->queues[static_cast<std::size_t>(ctx.rank)].push_back(c);
  ctx.last = c;
  ctx.group->progress();
  return 0;
}

__attribute__((visibility("default"))) int shardscope_nccl_poll(void* context, int* done, double* start_ms,
                                                                double* end_ms, char* error, std::size_t error_size) {
  auto& ctx = *static_cast<Context*>(context);
  if (ctx.aborted) return fail(error, error_size, "fake NCCL: communicator aborted");
  std::lock_guard lock(ctx.group->mutex);
  ctx.group->progress();
  *done = ctx.last == nullptr || ctx.last->done ? 1 : 0;
  *start_ms = 0.0;
  *end_ms = 0.001;
  return 0;
}

__attribute__((visibility("default"))) void shardscope_nccl_abort(void* context) {
  static_cast<Context*>(context)->aborted = true;
}

__attribute__((visibility("default"))) void shardscope_nccl_destroy(void* context) {
  delete static_cast<Context*>(context);
}

}  // extern "C"
