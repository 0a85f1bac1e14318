// SPDX-License-Identifier: GPL-3.0-or-later
// In-process communicators: see in_process_communicator.h for the algorithms.
//
// Memory ordering. Each member of a group has a Slot with a progress counter
// that only grows: +1 when it enters a call (after publishing its buffers),
// +1 per step done (a ring step; a rooted op counts as one step). All members
// make the same calls, so they agree on the counter's value `base` at the
// start of each call. A peer reads published
// fields or data only after an acquire load shows the progress it needs, and
// every write into a peer's buffer comes after an acquire load showing that
// the peer has finished reading what it overwrites. No rank leaves a call
// while a peer may still write into its buffers.
//
// Abort. The flag is checked wherever a rank blocks. A rank marks itself
// `busy` before touching a peer's buffer and re-checks the flag (both
// seq_cst); a rank leaving a call with CommAborted first waits until no peer
// is busy. So a buffer is never written after its owner has thrown.
#include "parallel/in_process_communicator.h"
#include "parallel/ring_math.h"

#include <algorithm>
#include <stdexcept>
#include <thread>

#include "clock/device_clock.h"
#include "parallel/in_process_group.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace shardscope {

namespace {

// Spin this many times (a microsecond or two) before blocking: enough to catch
// a neighbour finishing on another core, little enough not to starve one that
// shares our core. Measured with bench_allreduce on 2 cores: 0 or 100 spins
// were alike, 1000 was up to 2x slower at 1-4 MB with 4-8 ranks, 10000 up to 20x.
constexpr int kSpinIterations = 100;

void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#else
  std::this_thread::yield();
#endif
}

}  // namespace

// ---- InProcessWorld ----

InProcessWorld::InProcessWorld(int world_size, EventSink* sink, const RunClock* clock)
    : world_size_(world_size), sink_(sink), clock_(clock != nullptr ? clock : &own_clock_) {}

InProcessWorld::~InProcessWorld() = default;

std::shared_ptr<InProcessWorld> InProcessWorld::create(int world_size, EventSink* sink, const RunClock* clock) {
  if (world_size < 1) throw std::invalid_argument("InProcessWorld: world_size must be at least 1");
  return std::shared_ptr<InProcessWorld>(new InProcessWorld(world_size, sink, clock));
}

std::unique_ptr<Communicator> InProcessWorld::communicator(int my_global_rank, const std::vector<int>& members,
                                                           const CommDevice& device, DeviceClock* clock) {
  const auto bad = [&](const std::string& why) {
    throw std::invalid_argument("InProcessWorld::communicator for rank " + std::to_string(my_global_rank) + ": " + why);
  };
  std::vector<int> sorted = members;
  std::sort(sorted.begin(), sorted.end());
  if (sorted.empty()) bad("the group is empty");
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) bad("a rank appears twice in the group");
  if (sorted.front() < 0 || sorted.back() >= world_size_) bad("a member is outside 0 .. world_size-1");
  const auto mine = std::find(members.begin(), members.end(), my_global_rank);
  if (mine == members.end()) bad("it is not a member of the group");

  std::lock_guard lock(mutex_);
  std::shared_ptr<InProcessGroup> group;
  for (const auto& g : groups_) {
    if (g->members == members) {
      group = g;
    } else if (std::is_permutation(g->members.begin(), g->members.end(), members.begin(), members.end())) {
      bad("another member listed the same ranks in another order");  // the group ranks would disagree
    }
  }
  if (group == nullptr) {
    group = std::make_shared<InProcessGroup>();
    group->members = members;
    const auto n = members.size();
    group->slots = std::make_unique<Slot[]>(n);
    group->mailboxes = std::make_unique<Mailbox[]>(n * n);
    groups_.push_back(group);
  }
  const int me = static_cast<int>(mine - members.begin());
  Slot& slot = group->slots[static_cast<std::size_t>(me)];
  if (slot.in_use) bad("it already holds a communicator for this group");
  slot.in_use = true;
  return std::make_unique<InProcessCommunicator>(shared_from_this(), std::move(group), me, device, clock);
}

void InProcessWorld::abort(int by_global_rank, const std::string& reason) {
  {
    std::lock_guard lock(mutex_);
    if (!aborted_.load()) {
      abort_message_ = abort_text(by_global_rank, reason);
      aborted_.store(true);  // seq_cst: pairs with the busy flags (top of this file)
    }
  }
  wake_all_waiters();
}

bool InProcessWorld::aborted() const {
  return aborted_.load();
}

std::string InProcessWorld::abort_message() const {
  std::lock_guard lock(mutex_);
  return abort_message_;
}

// Every waiter re-checks the abort flag under its own mutex, so taking each
// mutex once after setting the flag guarantees no one sleeps through it.
void InProcessWorld::wake_all_waiters() {
  std::lock_guard lock(mutex_);
  for (const auto& g : groups_) {
    const auto n = static_cast<std::size_t>(g->size());
    for (std::size_t i = 0; i < n; ++i) {
      { std::lock_guard slot_lock(g->slots[i].mutex); }
      g->slots[i].cv.notify_all();
    }
    for (std::size_t i = 0; i < n * n; ++i) {
      { std::lock_guard box_lock(g->mailboxes[i].mutex); }
      g->mailboxes[i].cv.notify_all();
    }
  }
}

// ---- InProcessCommunicator: waiting, abort, events ----

InProcessCommunicator::InProcessCommunicator(std::shared_ptr<InProcessWorld> world,
                                             std::shared_ptr<InProcessGroup> group, int me, const CommDevice& device,
                                             DeviceClock* clock)
    : world_(std::move(world)),
      group_(std::move(group)),
      me_(me),
      n_(group_->size()),
      left_(mod(me - 1)),
      right_(mod(me + 1)),
      host_memory_(make_host_comm_memory(device.ledger)),
      device_memory_(device.backend != nullptr ? make_device_comm_memory(device) : nullptr),
      memory_(device_memory_ != nullptr ? device_memory_.get() : host_memory_.get()),
      clock_(clock),
      virtual_(clock != nullptr && clock->is_virtual()) {}

InProcessCommunicator::~InProcessCommunicator() {
  std::lock_guard lock(world_->mutex_);
  slot(me_).in_use = false;
}

// Publishes this rank's buffers for the call and returns the progress value
// every member had when the call started.
std::int64_t InProcessCommunicator::enter(CommOp op, const void* send, void* recv, std::int64_t count, int root,
                                          DType dtype) {
  if (world_->aborted()) raise_aborted();
  memory_->settle();  // what this rank's streams still write into its buffers lands before peers read them
  Slot& s = slot(me_);
  const std::int64_t base = s.progress.load(std::memory_order_relaxed);  // only this rank writes it
  s.op = op;
  s.count = count;
  s.root = root;
  s.dtype = dtype;
  s.device = memory_->device();
  s.send = send;
  s.recv = recv;
  advance(base + 1);
  return base;
}

void InProcessCommunicator::advance(std::int64_t value) {
  Slot& s = slot(me_);
  s.virtual_ns[static_cast<std::size_t>(value % Slot::kVirtualTimes)].store(virtual_ns_, std::memory_order_relaxed);
  s.blame[static_cast<std::size_t>(value % Slot::kVirtualTimes)].store(blame_, std::memory_order_relaxed);
  s.progress.store(value, std::memory_order_release);  // publishes virtual_ns too
  // A peer checks the value under the mutex before it sleeps: taking the mutex
  // here means it either sees the new value or is already asleep and is notified.
  { std::lock_guard lock(s.mutex); }
  s.cv.notify_all();
}

void InProcessCommunicator::wait_for(int member, std::int64_t value) {
  Slot& s = slot(member);
  for (int i = 0; i < kSpinIterations; ++i) {
    if (s.progress.load(std::memory_order_acquire) >= value) return;
    cpu_relax();
  }
  {
    std::unique_lock lock(s.mutex);
    s.cv.wait(lock, [&] { return s.progress.load(std::memory_order_acquire) >= value || world_->aborted(); });
  }
  if (s.progress.load(std::memory_order_acquire) < value) raise_aborted();
}

void InProcessCommunicator::call_begin() {
  if (!virtual_) return;
  virtual_ns_ = clock_->comm_begin();
  blame_ = global_rank(me_);  // its own work brought it here
}

void InProcessCommunicator::call_end() {
  if (virtual_) clock_->comm_end(virtual_ns_);
}

std::int64_t InProcessCommunicator::peer_ns(int member, std::int64_t value) const {
  return slot(member).virtual_ns[static_cast<std::size_t>(value % Slot::kVirtualTimes)].load(
      std::memory_order_relaxed);
}

int InProcessCommunicator::peer_blame(int member, std::int64_t value) const {
  return slot(member).blame[static_cast<std::size_t>(value % Slot::kVirtualTimes)].load(std::memory_order_relaxed);
}

void InProcessCommunicator::wait_for_peer(int member, std::int64_t value, const Transfer& tr) {
  wait_for(member, value);
  if (virtual_) wait_until(peer_ns(member, value), peer_blame(member, value), tr);
}

void InProcessCommunicator::wait_until(std::int64_t until, int culprit, const Transfer& tr) {
  if (!virtual_ || until <= virtual_ns_) return;
  if (world_->sink_ != nullptr && culprit != global_rank(me_)) {
    Event e = comm_span_event(tr.op, tr.phase, tr.tag, -1, -1, global_rank(me_), culprit, global_rank(me_), 0,
                              virtual_ns_, until);
    e.kind = EventKind::wait_span;
    world_->sink_->emit(e);
  }
  virtual_ns_ = until;
  blame_ = culprit;
}

// Best effort: catches members that disagree on the call (a bug in the caller)
// before it corrupts memory.
void InProcessCommunicator::check_matches(int member) {
  const Slot& p = slot(member);
  const Slot& s = slot(me_);
  if (p.op == s.op && p.count == s.count && p.root == s.root && p.dtype == s.dtype && p.device == s.device) return;
  const auto describe = [&](const Slot& x, int m) {
    return "rank " + std::to_string(global_rank(m)) + " called " + std::string(comm_op_name(x.op)) + " (count " +
           std::to_string(x.count) + " " + std::string(dtype_name(x.dtype)) + ", root " + std::to_string(x.root) +
           (x.device ? ", device memory)" : ")");
  };
  fail(describe(s, me_) + " but " + describe(p, member) + "; every member of a group must make the same calls");
}

void InProcessCommunicator::raise_aborted() {
  for (int p = 0; p < n_; ++p) {
    if (p == me_) continue;
    while (slot(p).busy.load()) std::this_thread::yield();  // a copy in flight: microseconds to milliseconds
  }
  throw CommAborted(world_->abort_message());
}

void InProcessCommunicator::fail(const std::string& what) {
  world_->abort(global_rank(me_), what);
  raise_aborted();
}

void InProcessCommunicator::check_argument(bool ok, const char* call, const char* what) {
  if (ok) return;
  const std::string message = std::string(call) + ": " + what;
  world_->abort(global_rank(me_), message);  // the other members would wait for this rank forever
  throw std::invalid_argument("rank " + std::to_string(global_rank(me_)) + ": " + message);
}

std::int64_t InProcessCommunicator::now() const {
  return world_->sink_ != nullptr ? world_->clock_->now_ns() : 0;
}

void InProcessCommunicator::emit(const Transfer& t, int ring_step, int chunk, int src, int dst, std::int64_t bytes,
                                 std::int64_t start_ns, std::int64_t end_ns) const {
  if (world_->sink_ == nullptr) return;
  world_->sink_->emit(comm_span_event(t.op, t.phase, t.tag, ring_step, chunk, global_rank(src >= 0 ? src : me_),
                             src >= 0 ? global_rank(src) : -1, dst >= 0 ? global_rank(dst) : -1, bytes, start_ns,
                             end_ns));  // rank: the sender
}

// ---- Small host values on a device communicator ----

template <class Call>
void InProcessCommunicator::on_host(Call&& call) {
  CommMemory* const saved = memory_;
  memory_ = host_memory_.get();
  try {
    call();
  } catch (...) {
    memory_ = saved;
    throw;
  }
  memory_ = saved;
}

void InProcessCommunicator::all_reduce_host(float* data, std::int64_t count, ReduceOp op, const CommTag& tag) {
  on_host([&] { all_reduce(data, count, DType::f32, op, tag); });
}

void InProcessCommunicator::broadcast_host(float* data, std::int64_t count, int root, const CommTag& tag) {
  on_host([&] { broadcast(data, count, DType::f32, root, tag); });
}

void InProcessCommunicator::scatter_host(const float* send, float* recv, std::int64_t count, int root,
                                         const CommTag& tag) {
  on_host([&] { scatter(send, recv, count, DType::f32, root, tag); });
}

// ---- Point to point ----

// Eager send: straight into a receiver already waiting (one copy), else into
// the queue (the receiver copies it out later). One event per message, from the
// send call to the data being in the receiver's buffer (virtual clock: to its
// arrival by the link model, the sender's clock unchanged).
void InProcessCommunicator::send(const float* data, std::int64_t count, int peer, const CommTag& tag) {
  check_argument(count >= 0, "send", "negative count");
  check_argument(peer >= 0 && peer < n_ && peer != me_, "send", "peer outside the group or self");
  if (world_->aborted()) raise_aborted();
  memory_->settle();  // the compute stream has written data before the comm stream copies it
  call_begin();
  Mailbox& box = group_->mailboxes[static_cast<std::size_t>(me_ * n_ + peer)];
  const std::int64_t start = virtual_ ? virtual_ns_ : now();
  std::int64_t arrival = 0;
  if (virtual_) {  // after this rank's earlier messages on its link
    arrival = std::max(start, link_free_ns_) + clock_->link().transfer_ns(bytes_of(count));
    link_free_ns_ = arrival;
  }
  std::unique_lock lock(box.mutex);
  if (box.posted != nullptr && !box.taken && box.queue.empty()) {
    if (box.posted_count != count) {
      const std::int64_t posted_count = box.posted_count;
      lock.unlock();
      fail("send of " + std::to_string(count) + " elements to rank " + std::to_string(global_rank(peer)) +
           ", which receives " + std::to_string(posted_count));
    }
    box.taken = true;
    float* dst = box.posted;
    lock.unlock();
    memory_->copy(dst, data, bytes_of(count));
    memory_->settle();
    const std::int64_t end = virtual_ ? arrival : now();
    lock.lock();
    box.filled = true;
    box.posted_arrival_ns = arrival;
    lock.unlock();
    box.cv.notify_all();
    emit({CommOp::send, RingPhase::none, tag}, -1, -1, me_, peer, bytes_of(count), start, end);
    call_end();
    return;
  }
  lock.unlock();
  Mailbox::Message message{std::vector<float>(static_cast<std::size_t>(count)), start, arrival, tag};
  memory_->to_host(message.data.data(), data, bytes_of(count));
  lock.lock();
  box.queue.push_back(std::move(message));
  lock.unlock();
  box.cv.notify_all();
  call_end();
}

void InProcessCommunicator::recv(float* data, std::int64_t count, int peer, const CommTag& tag) {
  check_argument(count >= 0, "recv", "negative count");
  check_argument(peer >= 0 && peer < n_ && peer != me_, "recv", "peer outside the group or self");
  if (world_->aborted()) raise_aborted();
  // The compute stream is done with data (it may still read the last message)
  // before a sender's comm stream, or ours, overwrites it.
  memory_->settle();
  call_begin();
  Mailbox& box = group_->mailboxes[static_cast<std::size_t>(peer * n_ + me_)];
  std::unique_lock lock(box.mutex);
  if (box.queue.empty()) {
    box.posted = data;
    box.posted_count = count;
    // Once a sender has taken the posted buffer, wait for its copy even on abort:
    // the buffer must not be released while it is being written.
    box.cv.wait(lock, [&] { return box.filled || (!box.taken && (!box.queue.empty() || world_->aborted())); });
    const bool filled = box.filled;
    const std::int64_t arrival = box.posted_arrival_ns;
    box.posted = nullptr;
    box.taken = box.filled = false;
    if (filled) {  // the sender copied directly and emitted the event
      lock.unlock();
      wait_until(arrival, global_rank(peer), {CommOp::recv, RingPhase::none, tag});
      call_end();
      return;
    }
    if (box.queue.empty()) {
      lock.unlock();
      raise_aborted();
    }
  }
  Mailbox::Message message = std::move(box.queue.front());
  box.queue.pop_front();
  lock.unlock();
  if (static_cast<std::int64_t>(message.data.size()) != count)
    fail("recv of " + std::to_string(count) + " elements from rank " + std::to_string(global_rank(peer)) +
         ", which sent " + std::to_string(message.data.size()));
  memory_->from_host(data, message.data.data(), bytes_of(count));
  emit({CommOp::send, RingPhase::none, message.tag}, -1, -1, peer, me_, bytes_of(count), message.start_ns,
       virtual_ ? message.arrival_ns : now());
  wait_until(message.arrival_ns, global_rank(peer), {CommOp::recv, RingPhase::none, tag});
  call_end();
}

}  // namespace shardscope
