// SPDX-License-Identifier: GPL-3.0-or-later
#include "events/event.h"

#include <algorithm>
#include <chrono>
#include <cstring>

namespace shardscope {

void Event::set_text(std::string_view s) {
  // Cut at a UTF-8 character boundary so the text stays valid.
  std::size_t n = std::min(s.size(), kEventTextSize - 1);
  while (n > 0 && n < s.size() && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  std::memcpy(text.data(), s.data(), n);
  text[n] = '\0';
}

std::string_view Event::text_view() const { return std::string_view(text.data()); }

std::string_view event_kind_name(EventKind kind) {
  switch (kind) {
    case EventKind::step_metrics: return "step_metrics";
    case EventKind::compute_span: return "compute";
    case EventKind::comm_span: return "comm";
    case EventKind::shard: return "shard";
    case EventKind::memory_sample: return "memory";
    case EventKind::log: return "log";
    case EventKind::error: return "error";
    case EventKind::overflow: return "overflow";
    case EventKind::wait_span:
      return "wait";
    case EventKind::expert_load:
      return "expert_load";
  }
  return "?";
}

std::string_view compute_kind_name(ComputeKind kind) {
  switch (kind) {
    case ComputeKind::forward: return "forward";
    case ComputeKind::backward: return "backward";
    case ComputeKind::recompute: return "recompute";
    case ComputeKind::optimizer: return "optimizer";
    case ComputeKind::weight_gradient:
      return "weight_gradient";
  }
  return "?";
}

std::string_view comm_op_name(CommOp op) {
  switch (op) {
    case CommOp::all_reduce: return "all_reduce";
    case CommOp::reduce_scatter: return "reduce_scatter";
    case CommOp::all_gather: return "all_gather";
    case CommOp::broadcast: return "broadcast";
    case CommOp::gather: return "gather";
    case CommOp::scatter: return "scatter";
    case CommOp::send: return "send";
    case CommOp::recv: return "recv";
    case CommOp::barrier: return "barrier";
  }
  return "?";
}

std::string_view ring_phase_name(RingPhase phase) {
  switch (phase) {
    case RingPhase::none: return "none";
    case RingPhase::reduce_scatter: return "reduce_scatter";
    case RingPhase::all_gather: return "all_gather";
  }
  return "?";
}

RunClock::RunClock() : origin_ns_(steady_ns()) {}

std::int64_t RunClock::steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::int64_t RunClock::now_ns() const { return steady_ns() - origin_ns_; }

}  // namespace shardscope
