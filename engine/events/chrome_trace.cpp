// SPDX-License-Identifier: GPL-3.0-or-later
// Streams the trace instead of building one JSON document: a long run has
// millions of spans, and each line is escaped by nlohmann::json on its own.
#include "events/chrome_trace.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>

namespace shardscope {
namespace {

using nlohmann::json;

enum Track : int { kLogTrack = 0, kComputeTrack = 1, kCommTrack = 2, kShardTrack = 3, kTrackCount = 4 };
constexpr const char* kTrackNames[kTrackCount] = {"steps & logs", "compute", "communication", "ZeRO shards"};
constexpr int kMaxLanes = 1000;

std::int64_t pid_of(std::int32_t rank) {
  return std::int64_t{rank} + 1;
}
std::int64_t tid_of(std::int32_t rank, int track, int lane = 0) {
  return pid_of(rank) * 10000 + track * kMaxLanes + lane;
}
double micros(std::int64_t ns) {
  return static_cast<double>(ns) / 1000.0;
}

// A span's length, 0 when it ends before it starts. A damaged recording may
// hold any times: a difference past 64 bits is taken in double instead.
double duration_micros(const Event& e) {
  if (e.end_ns <= e.start_ns) return 0;
  std::int64_t ns = 0;
  if (__builtin_sub_overflow(e.end_ns, e.start_ns, &ns))
    return (static_cast<double>(e.end_ns) - static_cast<double>(e.start_ns)) / 1000.0;
  return micros(ns);
}

// The double closest to the float's shortest decimal form, so 3e-4f is
// written 0.0003 and not 0.0003000000142492354.
double decimal(float value) {
  char text[32];
  const auto result = std::to_chars(text, text + sizeof text - 1, value);
  *result.ptr = '\0';
  return std::strtod(text, nullptr);
}

Track track_of(EventKind kind) {
  switch (kind) {
    case EventKind::compute_span:
      return kComputeTrack;
    case EventKind::comm_span:
    case EventKind::wait_span:  // the idle part of a call, just before the transfer it delayed
      return kCommTrack;
    case EventKind::shard:
      return kShardTrack;
    default:
      return kLogTrack;
  }
}

bool is_span(EventKind kind) {
  return track_of(kind) != kLogTrack;
}

// Viewers require the spans of one thread to nest: two transfers of a rank
// that overlap without nesting (a send still waiting for its receiver while the
// next one starts) go to a second lane, shown as "communication 2", and so on.
// Returns each span's lane and, per (rank, track), how many lanes it uses.
std::vector<int> assign_lanes(const std::vector<Event>& events, std::map<std::pair<int, int>, int>& lanes_used) {
  std::map<std::pair<int, int>, std::vector<std::size_t>> groups;
  for (std::size_t i = 0; i < events.size(); ++i)
    if (is_span(events[i].kind)) groups[{events[i].rank, track_of(events[i].kind)}].push_back(i);
  std::vector<int> lane_of(events.size(), 0);
  for (auto& [key, spans] : groups) {
    // Parents before children: by start, then longest first.
    std::stable_sort(spans.begin(), spans.end(), [&](std::size_t a, std::size_t b) {
      if (events[a].start_ns != events[b].start_ns) return events[a].start_ns < events[b].start_ns;
      return events[a].end_ns > events[b].end_ns;
    });
    std::vector<std::vector<std::int64_t>> open_ends;  // per lane: ends of the spans still open
    for (std::size_t i : spans) {
      const Event& e = events[i];
      const std::int64_t end = std::max(e.start_ns, e.end_ns);
      int lane = 0;
      for (;; ++lane) {
        if (lane == static_cast<int>(open_ends.size())) open_ends.emplace_back();
        auto& stack = open_ends[static_cast<std::size_t>(lane)];
        while (!stack.empty() && stack.back() <= e.start_ns) stack.pop_back();
        if (stack.empty() || end <= stack.back() || lane == kMaxLanes - 1) {
          stack.push_back(end);
          break;
        }
      }
      lane_of[i] = lane;
    }
    lanes_used[key] = static_cast<int>(open_ends.size());
  }
  return lane_of;
}

// Writes the comma-separated lines of the traceEvents array.
class TraceOut {
 public:
  explicit TraceOut(std::ostream& out) : out_(out) {}
  void write(const json& event) {
    out_ << (first_ ? "\n" : ",\n");
    first_ = false;
    // Invalid UTF-8 (a damaged text field) becomes U+FFFD rather than an exception.
    out_ << event.dump(-1, ' ', false, json::error_handler_t::replace);
  }

 private:
  std::ostream& out_;
  bool first_ = true;
};

json base(const Event& e, const char* phase, std::int64_t tid) {
  return {{"ph", phase}, {"pid", pid_of(e.rank)}, {"tid", tid}, {"ts", micros(e.start_ns)}};
}

json counter(const Event& e, const char* name, json args) {
  json j = base(e, "C", tid_of(e.rank, kLogTrack));
  j["name"] = name;
  j["args"] = std::move(args);
  return j;
}

std::string suffix(const char* label, std::int64_t value) {
  return value >= 0 ? std::string(" ") + label + std::to_string(value) : std::string();
}

// A compute, comm or shard event as a complete ("X") event on its lane.
json span(const Event& e, int lane) {
  json j = base(e, "X", tid_of(e.rank, track_of(e.kind), lane));
  j["dur"] = duration_micros(e);
  if (e.kind == EventKind::compute_span) {
    j["name"] = std::string(compute_kind_name(e.compute)) + suffix("L", e.layer) + suffix("mb ", e.micro_batch);
    j["cat"] = "compute";
    j["args"] = {{"step", e.step}, {"micro_batch", e.micro_batch}, {"layer", e.layer}};
  } else if (e.kind == EventKind::comm_span) {
    std::string name(comm_op_name(e.op));
    if (e.phase != RingPhase::none) name += " (" + std::string(ring_phase_name(e.phase)) + ")";
    j["name"] = std::move(name);
    j["cat"] = "comm";
    j["args"] = {{"step", e.step},
                 {"micro_batch", e.micro_batch},
                 {"bucket", e.bucket},
                 {"unit", e.unit},
                 {"ring_step", e.ring_step},
                 {"chunk", e.chunk},
                 {"src", e.src},
                 {"dst", e.dst},
                 {"bytes", e.bytes},
                 {"phase", ring_phase_name(e.phase)}};
  } else if (e.kind == EventKind::wait_span) {
    j["name"] = "wait for rank " + std::to_string(e.src) + " (" + std::string(comm_op_name(e.op)) + ")";
    j["cat"] = "wait";
    j["args"] = {{"step", e.step}, {"micro_batch", e.micro_batch}, {"bucket", e.bucket}, {"waited_for", e.src}};
  } else {
    const char* action = e.shard_action == ShardAction::gather ? "gather" : "release";
    j["name"] = action + suffix("unit ", e.unit);
    j["cat"] = "shard";
    j["args"] = {{"step", e.step}, {"unit", e.unit}, {"bytes", e.bytes}, {"action", action}};
  }
  return j;
}

void write_point_event(const Event& e, TraceOut& trace) {
  const std::int64_t tid = tid_of(e.rank, kLogTrack);
  if (e.kind == EventKind::memory_sample) {
    json bytes = json::object();
    for (std::size_t i = 0; i < kMemoryCategoryCount; ++i)
      bytes[std::string(memory_category_name(kAllMemoryCategories[i]))] = e.memory[i];
    trace.write(counter(e, "memory (bytes)", std::move(bytes)));
    if (e.device >= 0)  // a GPU rank: the device as cudaMemGetInfo and the caching allocator see it
      trace.write(counter(e, "GPU memory (bytes)",
                          {{"used (cudaMemGetInfo)", e.device_used_bytes},
                           {"reserved by the allocator", e.device_reserved_bytes},
                           {"total", e.device_total_bytes}}));
  } else if (e.kind == EventKind::step_metrics) {
    trace.write(counter(e, "loss", {{"loss", decimal(e.loss)}}));
    if (e.has_eval_loss) trace.write(counter(e, "eval loss", {{"eval_loss", decimal(e.eval_loss)}}));
    trace.write(counter(e, "tokens/s", {{"tokens_per_s", decimal(e.tokens_per_s)}}));
    trace.write(counter(e, "lr", {{"lr", decimal(e.lr)}}));
    trace.write(counter(e, "grad norm", {{"grad_norm", decimal(e.grad_norm)}}));
    trace.write(counter(e, "loss scale", {{"loss_scale", decimal(e.loss_scale)}}));
    // An instant too, so clicking the step shows all its figures together.
    json j = base(e, "i", tid);
    j["name"] = "step " + std::to_string(e.step);
    j["cat"] = "step";
    j["s"] = "t";
    j["args"] = {{"step", e.step},
                 {"loss", decimal(e.loss)},
                 {"lr", decimal(e.lr)},
                 {"grad_norm", decimal(e.grad_norm)},
                 {"tokens_per_s", decimal(e.tokens_per_s)},
                 {"loss_scale", decimal(e.loss_scale)},
                 {"skipped", e.skipped}};
    if (e.has_eval_loss) j["args"]["eval_loss"] = decimal(e.eval_loss);
    trace.write(j);
  } else if (e.kind == EventKind::expert_load) {  // the choices one expert of a MoE layer kept this step
    const std::string series = "layer " + std::to_string(e.layer) + " expert " + std::to_string(e.expert);
    trace.write(counter(e, "tokens per expert", {{series, e.expert_tokens}}));
  } else {  // log, error, overflow
    // A log that lasts (a checkpoint's save, from the copy to the write's end) is a span on the log track.
    const bool lasts = e.kind == EventKind::log && e.end_ns > e.start_ns;
    json j = base(e, lasts ? "X" : "i", tid);
    j["name"] = std::string(e.text_view());
    j["cat"] = std::string(e.kind == EventKind::log ? "log" : event_kind_name(e.kind));
    if (lasts)
      j["dur"] = duration_micros(e);
    else
      j["s"] = e.kind == EventKind::error ? "p" : "t";  // an error marks the whole rank
    static constexpr const char* kLevels[] = {"debug", "info", "warning", "error"};
    const auto level = static_cast<std::size_t>(e.level);
    j["args"] = {{"step", e.step}, {"level", level < 4 ? kLevels[level] : "?"}, {"text", e.text_view()}};
    trace.write(j);
  }
}

json metadata(const char* what, std::int64_t pid, std::int64_t tid, json args) {
  return {{"ph", "M"}, {"pid", pid}, {"tid", tid}, {"name", what}, {"args", std::move(args)}};
}

}  // namespace

void write_chrome_trace(const std::vector<Event>& events, const std::string& metadata_json, std::ostream& out) {
  // rank -> its stage, from its first event that says one: communication events leave stage 0.
  std::map<std::int32_t, std::int32_t> stage_of;
  std::map<std::pair<int, int>, int> lanes_used;  // (rank, track) -> lanes
  for (const Event& e : events) {
    const bool says_stage = e.kind != EventKind::comm_span && e.kind != EventKind::wait_span;
    if (says_stage) stage_of.try_emplace(e.rank, e.stage);
    if (!is_span(e.kind)) lanes_used[{e.rank, kLogTrack}] = 1;
  }
  for (const Event& e : events) stage_of.try_emplace(e.rank, e.stage);  // a rank with transfers only
  const std::vector<int> lane_of = assign_lanes(events, lanes_used);

  const json other = {{"producer", "ShardScope"}, {"run", metadata_json.empty() ? "{}" : metadata_json}};
  out << "{\"displayTimeUnit\":\"ms\",\"otherData\":" << other.dump(-1, ' ', false, json::error_handler_t::replace)
      << ",\"traceEvents\":[";
  TraceOut trace(out);
  for (const auto& [rank, stage] : stage_of) {
    const std::int64_t pid = pid_of(rank);
    trace.write(metadata("process_name", pid, tid_of(rank, kLogTrack),
                         {{"name", "rank " + std::to_string(rank) + " (stage " + std::to_string(stage) + ")"}}));
    trace.write(metadata("process_sort_index", pid, tid_of(rank, kLogTrack), {{"sort_index", rank}}));
    for (int track = 0; track < kTrackCount; ++track) {
      const auto used = lanes_used.find({rank, track});
      if (used == lanes_used.end()) continue;
      for (int lane = 0; lane < used->second; ++lane) {
        const std::int64_t tid = tid_of(rank, track, lane);
        std::string name = kTrackNames[track];
        if (lane > 0) name.append(" ").append(std::to_string(lane + 1));
        trace.write(metadata("thread_name", pid, tid, {{"name", name}}));
        trace.write(metadata("thread_sort_index", pid, tid, {{"sort_index", track * kMaxLanes + lane}}));
      }
    }
  }
  for (std::size_t i = 0; i < events.size(); ++i) {
    if (is_span(events[i].kind))
      trace.write(span(events[i], lane_of[i]));
    else
      write_point_event(events[i], trace);
  }
  out << "\n]}\n";
}

}  // namespace shardscope
