// SPDX-License-Identifier: GPL-3.0-or-later
#include "parallel/nccl_communicator.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>

#include "ops/nccl.h"

namespace shardscope {

namespace {

std::string ranks_text(const std::vector<int>& ranks) {  // "0,1,2,3"
  std::string text;
  for (const int r : ranks) {
    if (!text.empty()) text += ',';
    text += std::to_string(r);
  }
  return text;
}

class NcclCommunicator final : public Communicator {
 public:
  NcclCommunicator(void* context, std::vector<int> members, int me, const NcclRank& on, NcclAbortState state,
                   EventSink* sink, const RunClock* clock, std::int64_t reference_ns)
      : context_(context),
        members_(std::move(members)),
        me_(me),
        on_(on),
        state_(std::move(state)),
        sink_(sink),
        clock_(clock),
        reference_ns_(reference_ns),
        compute_stream_(on.compute_stream) {}

  ~NcclCommunicator() override {
    if (staging_ != nullptr) on_.memory->release(staging_);
    nccl_destroy(context_);
  }

  int rank() const override { return me_; }
  int size() const override { return static_cast<int>(members_.size()); }
  int global_rank(int group_rank) const override { return members_.at(static_cast<std::size_t>(group_rank)); }

  using Communicator::all_gather;
  using Communicator::all_reduce;
  using Communicator::broadcast;
  using Communicator::gather;
  using Communicator::reduce_scatter;
  using Communicator::scatter;

  void all_reduce(void* data, std::int64_t count, DType dtype, ReduceOp op, const CommTag& tag) override {
    require_reducible(count, dtype, "all_reduce");
    run(call(shardscope_nccl_all_reduce, data, data, count, dtype, op, -1), CommOp::all_reduce, count, dtype, -1, tag);
  }
  void reduce_scatter(const void* send, void* recv, std::int64_t recv_count, DType dtype, ReduceOp op,
                      const CommTag& tag) override {
    require_reducible(recv_count, dtype, "reduce_scatter");
    run(call(shardscope_nccl_reduce_scatter, send, recv, recv_count, dtype, op, -1), CommOp::reduce_scatter,
        recv_count * size(), dtype, -1, tag);
  }
  void all_gather(const void* send, void* recv, std::int64_t send_count, DType dtype, const CommTag& tag) override {
    require(send_count >= 0, "all_gather", "negative count");
    run(call(shardscope_nccl_all_gather, send, recv, send_count, dtype, ReduceOp::sum, -1), CommOp::all_gather,
        send_count, dtype, -1, tag);
  }
  void broadcast(void* data, std::int64_t count, DType dtype, int root, const CommTag& tag) override {
    require(count >= 0 && root >= 0 && root < size(), "broadcast", "negative count or root outside the group");
    run(call(shardscope_nccl_broadcast, data, data, count, dtype, ReduceOp::sum, root), CommOp::broadcast, count, dtype,
        -1, tag);
  }
  void gather(const void* send, void* recv, std::int64_t count, DType dtype, int root, const CommTag& tag) override {
    require(count >= 0 && root >= 0 && root < size(), "gather", "negative count or root outside the group");
    run(call(shardscope_nccl_gather, send, recv, count, dtype, ReduceOp::sum, root), CommOp::gather, count, dtype, root,
        tag);
  }
  void scatter(const void* send, void* recv, std::int64_t count, DType dtype, int root, const CommTag& tag) override {
    require(count >= 0 && root >= 0 && root < size(), "scatter", "negative count or root outside the group");
    run(call(shardscope_nccl_scatter, send, recv, count, dtype, ReduceOp::sum, root), CommOp::scatter, count, dtype, -1,
        tag);
  }
  void send(const float* data, std::int64_t count, int peer, const CommTag& tag) override {
    require(count >= 0 && peer >= 0 && peer < size() && peer != me_, "send", "bad count or peer");
    run(call(shardscope_nccl_send, data, nullptr, count, DType::f32, ReduceOp::sum, peer), CommOp::send, count,
        DType::f32, peer, tag);
  }
  void recv(float* data, std::int64_t count, int peer, const CommTag& tag) override {
    require(count >= 0 && peer >= 0 && peer < size() && peer != me_, "recv", "bad count or peer");
    run(call(shardscope_nccl_recv, nullptr, data, count, DType::f32, ReduceOp::sum, peer), CommOp::recv, count,
        DType::f32, -1, tag);
  }

  void send_recv(const float* send_data, std::int64_t send_count, int send_peer, float* recv_data,
                 std::int64_t recv_count, int recv_peer, const CommTag& send_tag, const CommTag&) override {
    require(send_count >= 0 && recv_count >= 0 && send_peer >= 0 && send_peer < size() && send_peer != me_ &&
                recv_peer >= 0 && recv_peer < size() && recv_peer != me_,
            "send_recv", "bad count or peer");
    ShardscopeNcclCall c =
        call(shardscope_nccl_send_recv, send_data, recv_data, send_count, DType::f32, ReduceOp::sum, send_peer);
    c.recv_count = recv_count;
    c.recv_peer = recv_peer;
    run(c, CommOp::send, send_count, DType::f32, send_peer, send_tag);
  }

  // Host values travel through a small device buffer: NCCL reads device memory only.
  void all_reduce_host(float* data, std::int64_t count, ReduceOp op, const CommTag& tag) override {
    float* d = staging(count);
    on_.comm->upload(d, data, count * 4);
    all_reduce(d, count, DType::f32, op, tag);
    on_.comm->download(data, d, count * 4);
  }
  void broadcast_host(float* data, std::int64_t count, int root, const CommTag& tag) override {
    float* d = staging(count);
    on_.comm->upload(d, data, count * 4);
    broadcast(d, count, DType::f32, root, tag);
    on_.comm->download(data, d, count * 4);
  }
  void scatter_host(const float* send, float* recv, std::int64_t count, int root, const CommTag& tag) override {
    const std::int64_t whole = count * size();
    float* d = staging(whole + count);
    if (me_ == root) on_.comm->upload(d, send, whole * 4);
    scatter(d, d + whole, count, DType::f32, root, tag);
    on_.comm->download(recv, d + whole, count * 4);
  }
  void barrier() override {
    float one = 1.0f;
    all_reduce_host(&one, 1, ReduceOp::sum, CommTag{});
  }
  void abort(const std::string& reason) override { state_.abort(global_rank(me_), reason); }

 private:
  ShardscopeNcclCall call(int op, const void* send, void* recv, std::int64_t count, DType dtype, ReduceOp reduce,
                          int peer) const {
    ShardscopeNcclCall c{};
    c.op = op;
    c.send = send;
    c.recv = recv;
    c.count = count;
    c.dtype = static_cast<int>(dtype);
    c.average = reduce == ReduceOp::average ? 1 : 0;
    c.peer = peer;
    c.compute_stream = compute_stream_;
    return c;
  }

  // Queues the call, polls until the GPU has finished it (or the run is
  // aborted, or the call times out), and emits its span in GPU time.
  void run(const ShardscopeNcclCall& c, CommOp op, std::int64_t elements, DType dtype, int dst, const CommTag& tag) {
    if (state_.aborted()) throw CommAborted(state_.message());
    double start_ms = 0, end_ms = 0;
    try {
      nccl_enqueue(context_, c);
      wait_for_end(op, start_ms, end_ms);
    } catch (const CommAborted&) {
      throw;
    } catch (const std::exception& e) {
      state_.abort(global_rank(me_), e.what());
      nccl_abort(context_);
      throw;
    }
    emit(op, elements, dtype, dst, tag, start_ms, end_ms);
  }

  // The watchdog's loop: the call's end, an abort of the run (a peer failed:
  // our kernels stop waiting for it), or the timeout.
  void wait_for_end(CommOp op, double& start_ms, double& end_ms) {
    struct Waiting {  // what this process answers a peer that asks after its own timeout
      const NcclAbortState& state;
      explicit Waiting(const NcclAbortState& s) : state(s) {
        if (state.waiting) state.waiting(1);
      }
      ~Waiting() {
        if (state.waiting) state.waiting(-1);
      }
    } waiting(state_);
    const auto start = std::chrono::steady_clock::now();
    for (int idle = 0; !nccl_poll(context_, start_ms, end_ms); ++idle) {
      if (state_.aborted()) {
        nccl_abort(context_);
        throw CommAborted(state_.message());
      }
      if (state_.timeout_s > 0 && idle % 256 == 255 &&
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > state_.timeout_s)
        throw std::runtime_error("NCCL " + std::string(comm_op_name(op)) + " of ranks " + ranks_text(members_) +
                                 " timed out after " + std::to_string(static_cast<int>(state_.timeout_s)) +
                                 " s (--comm-timeout): its communicators are aborted" +
                                 (state_.unresponsive ? state_.unresponsive() : std::string()));
      if (idle < 100)
        std::this_thread::yield();
      else
        std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }

  void emit(CommOp op, std::int64_t elements, DType dtype, int dst, const CommTag& tag, double start_ms,
            double end_ms) {
    if (sink_ == nullptr) return;
    Event e;
    e.kind = EventKind::comm_span;
    e.rank = global_rank(me_);
    e.step = tag.step;
    e.micro_batch = tag.micro_batch;
    e.bucket = tag.bucket;
    e.unit = tag.unit;
    e.purpose = tag.purpose;
    e.op = op;
    e.src = global_rank(me_);
    e.dst = dst >= 0 ? global_rank(dst) : -1;
    e.bytes = elements * static_cast<std::int64_t>(dtype_size(dtype));
    e.start_ns = reference_ns_ + static_cast<std::int64_t>(start_ms * 1e6);
    e.end_ns = std::max(e.start_ns, reference_ns_ + static_cast<std::int64_t>(end_ms * 1e6));
    sink_->emit(e);
  }

  float* staging(std::int64_t floats) {
    if (floats > staging_floats_) {
      if (staging_ != nullptr) {
        on_.comm->synchronize();
        on_.memory->release(staging_);
        staging_ = nullptr;
      }
      staging_floats_ = std::max<std::int64_t>(floats, 64);
      staging_ = on_.memory->allocate_zeroed(staging_floats_ * 4);
      on_.compute->synchronize();  // zeroed on the compute stream; uploads run on the comm stream
    }
    return static_cast<float*>(staging_);
  }

  void require(bool ok, const char* call, const char* what) {
    if (ok) return;
    const std::string message = std::string(call) + ": " + what;
    state_.abort(global_rank(me_), message);
    throw std::invalid_argument("rank " + std::to_string(global_rank(me_)) + ": " + message);
  }
  void require_reducible(std::int64_t count, DType dtype, const char* call) {
    require(count >= 0, call, "negative count");
    require(dtype == DType::f32 || dtype == DType::f16 || dtype == DType::bf16, call,
            "element type must be f32, f16 or bf16");
  }

  void* context_;
  std::vector<int> members_;
  int me_;
  NcclRank on_;
  NcclAbortState state_;
  EventSink* sink_;
  const RunClock* clock_;
  std::int64_t reference_ns_;
  void* compute_stream_;
  void* staging_ = nullptr;
  std::int64_t staging_floats_ = 0;
};

// ncclCommInitRank blocks until every member has joined, and NCCL offers no
// way to interrupt a blocking init. So a watchdog thread bounds it
// (--comm-timeout): when the time passes first, it asks which peers do not
// answer and aborts the run naming the rank, the group and "NCCL init"; the
// MPI job's watchdog then ends this process, still blocked in NCCL, as it ends
// every aborted process (parallel/mpi/mpi_faults.cpp, its exit grace).
class InitDeadline {
 public:
  InitDeadline(const NcclAbortState& state, int rank, const std::vector<int>& members) : state_(state) {
    if (state_.waiting) state_.waiting(1);  // a peer asking after its own timeout hears "waiting"
    if (state_.timeout_s <= 0) return;
    watchdog_ = std::thread([this, rank, what = "NCCL init of ranks " + ranks_text(members)] {
      std::unique_lock lock(mutex_);
      if (ended_.wait_for(lock, std::chrono::duration<double>(state_.timeout_s), [this] { return done_; })) return;
      std::string message = what;
      message += " timed out after " + std::to_string(static_cast<int>(state_.timeout_s)) + " s (--comm-timeout)";
      if (state_.unresponsive) message += state_.unresponsive();
      state_.abort(rank, message);
    });
  }
  ~InitDeadline() {
    {
      std::lock_guard lock(mutex_);
      done_ = true;
    }
    ended_.notify_all();
    if (watchdog_.joinable()) watchdog_.join();
    if (state_.waiting) state_.waiting(-1);
  }
  InitDeadline(const InitDeadline&) = delete;
  InitDeadline& operator=(const InitDeadline&) = delete;

 private:
  const NcclAbortState& state_;
  std::mutex mutex_;
  std::condition_variable ended_;
  bool done_ = false;
  std::thread watchdog_;
};

}  // namespace

NcclAbortState nccl_abort_state(std::shared_ptr<InProcessWorld> world, double timeout_s) {
  NcclAbortState state;
  state.aborted = [world] { return world->aborted(); };
  state.message = [world] { return world->abort_message(); };
  state.abort = [world](int rank, const std::string& reason) { world->abort(rank, reason); };
  state.timeout_s = timeout_s;
  return state;
}

NcclWorld::NcclWorld(std::vector<int> rank_devices, NcclAbortState abort_state, EventSink* sink, const RunClock* clock,
                     NcclShareId share_id)
    : rank_devices_(std::move(rank_devices)),
      abort_state_(std::move(abort_state)),
      share_id_(std::move(share_id)),
      sink_(sink),
      clock_(clock) {}

NcclWorld::~NcclWorld() {
  for (auto& [members, group] : groups_)
    for (void* context : group.contexts) nccl_destroy(context);  // those never handed out
}

std::unique_ptr<Communicator> NcclWorld::communicator(int rank, const std::vector<int>& members, const NcclRank& on) {
  const auto mine = std::find(members.begin(), members.end(), rank);
  if (mine == members.end())
    throw std::invalid_argument("NcclWorld::communicator: rank " + std::to_string(rank) + " is not in the group");
  const auto me = static_cast<std::size_t>(mine - members.begin());
  std::int64_t reference_ns = 0;
  void* context = nullptr;
  if (share_id_) {
    context = init_across_processes(rank, members, me);
    reference_ns = clock_->now_ns();  // the context's reference event was just waited for
  } else {
    context = init_in_process(rank, members, me, reference_ns);
  }
  return std::make_unique<NcclCommunicator>(context, members, static_cast<int>(me), on, abort_state_, sink_, clock_,
                                            reference_ns);
}

// ncclCommInitAll for every member at the group's first request; each member takes its own.
void* NcclWorld::init_in_process(int rank, const std::vector<int>& members, std::size_t me,
                                 std::int64_t& reference_ns) {
  std::lock_guard lock(mutex_);
  auto it = groups_.find(members);
  if (it == groups_.end()) {
    std::vector<int> devices;
    for (const int m : members) devices.push_back(rank_devices_.at(static_cast<std::size_t>(m)));
    Group group;
    group.contexts = nccl_init_all(devices);
    group.reference_ns = clock_->now_ns();  // the contexts' reference events were just waited for
    it = groups_.emplace(members, std::move(group)).first;
  }
  void* context = std::exchange(it->second.contexts.at(me), nullptr);
  if (context == nullptr)
    throw std::invalid_argument("NcclWorld::communicator: rank " + std::to_string(rank) +
                                " already holds a communicator for this group");
  reference_ns = it->second.reference_ns;
  return context;
}

// The bootstrap of NCCL across processes: the first member makes the unique
// id, every member gets it (MPI), and each joins with ncclCommInitRank.
void* NcclWorld::init_across_processes(int rank, const std::vector<int>& members, std::size_t me) {
  try {
    NcclUniqueId id{};
    if (me == 0) id = nccl_unique_id();
    share_id_(members, id);
    const InitDeadline deadline(abort_state_, rank, members);
    return nccl_init_rank(static_cast<int>(members.size()), id, static_cast<int>(me),
                          rank_devices_.at(static_cast<std::size_t>(rank)));
  } catch (const CommAborted&) {
    throw;
  } catch (const std::runtime_error& e) {
    throw std::runtime_error("NCCL communicator of ranks " + ranks_text(members) + ": " + e.what());
  }
}

}  // namespace shardscope
