// SPDX-License-Identifier: GPL-3.0-or-later
// Streams the trace instead of building one JSON document: a long run has
// millions of spans, and each line is escaped by nlohmann::json on its own.
#include "events/chrome_trace.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>

namespace shardscope {
namespace {

using nlohmann::json;

enum Track : int { kLogTrack = 0, kComputeTrack = 1, kCommTrack = 2, kShardTrack = 3, kTrackCount = 4 };
constexpr const char* kTrackNames[kTrackCount] = {"steps & logs", "compute", "communication", "ZeRO shards"};

std::int64_t pid_of(std::int32_t rank) { return std::int64_t{rank} + 1; }
std::int64_t tid_of(std::int32_t rank, Track track) { return pid_of(rank) * 10 + track; }
double micros(std::int64_t ns) { return static_cast<double>(ns) / 1000.0; }

Track track_of(EventKind kind) {
  switch (kind) {
    case EventKind::compute_span: return kComputeTrack;
    case EventKind::comm_span: return kCommTrack;
    case EventKind::shard: return kShardTrack;
    default: return kLogTrack;
  }
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

json base(const Event& e, const char* phase, Track track) {
  return {{"ph", phase}, {"pid", pid_of(e.rank)}, {"tid", tid_of(e.rank, track)}, {"ts", micros(e.start_ns)}};
}

json span(const Event& e, std::string name, const char* category, Track track) {
  json j = base(e, "X", track);
  j["name"] = std::move(name);
  j["cat"] = category;
  j["dur"] = micros(std::max<std::int64_t>(0, e.end_ns - e.start_ns));
  return j;
}

json counter(const Event& e, const char* name, json args) {
  json j = base(e, "C", kLogTrack);
  j["name"] = name;
  j["args"] = std::move(args);
  return j;
}

std::string suffix(const char* label, std::int64_t value) {
  return value >= 0 ? std::string(" ") + label + std::to_string(value) : std::string();
}

void write_event(const Event& e, TraceOut& trace) {
  switch (e.kind) {
    case EventKind::compute_span: {
      json j = span(e, std::string(compute_kind_name(e.compute)) + suffix("L", e.layer) + suffix("mb ", e.micro_batch),
                    "compute", kComputeTrack);
      j["args"] = {{"step", e.step}, {"micro_batch", e.micro_batch}, {"layer", e.layer}};
      trace.write(j);
      return;
    }
    case EventKind::comm_span: {
      std::string name(comm_op_name(e.op));
      if (e.phase != RingPhase::none) name += " (" + std::string(ring_phase_name(e.phase)) + ")";
      json j = span(e, std::move(name), "comm", kCommTrack);
      j["args"] = {{"step", e.step},       {"micro_batch", e.micro_batch}, {"bucket", e.bucket},
                   {"ring_step", e.ring_step}, {"chunk", e.chunk},          {"src", e.src},
                   {"dst", e.dst},         {"bytes", e.bytes},             {"phase", ring_phase_name(e.phase)}};
      trace.write(j);
      return;
    }
    case EventKind::shard: {
      const char* action = e.shard_action == ShardAction::gather ? "gather" : "release";
      json j = span(e, action + suffix("L", e.layer), "shard", kShardTrack);
      j["args"] = {{"step", e.step}, {"layer", e.layer}, {"bytes", e.bytes}, {"action", action}};
      trace.write(j);
      return;
    }
    case EventKind::memory_sample: {
      json bytes = json::object();
      for (std::size_t i = 0; i < kMemoryCategoryCount; ++i)
        bytes[std::string(memory_category_name(kAllMemoryCategories[i]))] = e.memory[i];
      trace.write(counter(e, "memory (bytes)", std::move(bytes)));
      return;
    }
    case EventKind::step_metrics: {
      trace.write(counter(e, "loss", {{"loss", e.loss}}));
      if (e.has_eval_loss) trace.write(counter(e, "eval loss", {{"eval_loss", e.eval_loss}}));
      trace.write(counter(e, "tokens/s", {{"tokens_per_s", e.tokens_per_s}}));
      trace.write(counter(e, "lr", {{"lr", e.lr}}));
      trace.write(counter(e, "grad norm", {{"grad_norm", e.grad_norm}}));
      // An instant too, so clicking the step shows all its figures together.
      json j = base(e, "i", kLogTrack);
      j["name"] = "step " + std::to_string(e.step);
      j["cat"] = "step";
      j["s"] = "t";
      j["args"] = {{"step", e.step}, {"loss", e.loss}, {"lr", e.lr}, {"grad_norm", e.grad_norm},
                   {"tokens_per_s", e.tokens_per_s}};
      if (e.has_eval_loss) j["args"]["eval_loss"] = e.eval_loss;
      trace.write(j);
      return;
    }
    case EventKind::log:
    case EventKind::error: {
      json j = base(e, "i", kLogTrack);
      j["name"] = std::string(e.text_view());
      j["cat"] = e.kind == EventKind::error ? "error" : "log";
      j["s"] = e.kind == EventKind::error ? "p" : "t";  // an error marks the whole rank
      static constexpr const char* kLevels[] = {"debug", "info", "warning", "error"};
      const auto level = static_cast<std::size_t>(e.level);
      j["args"] = {{"step", e.step}, {"level", level < 4 ? kLevels[level] : "?"}, {"text", e.text_view()}};
      trace.write(j);
      return;
    }
  }
}

}  // namespace

void write_chrome_trace(const std::vector<Event>& events, const std::string& metadata_json, std::ostream& out) {
  // First pass: which ranks exist, their stage, and which tracks each uses.
  struct RankInfo {
    std::int32_t stage = 0;
    bool used[kTrackCount] = {};
  };
  std::map<std::int32_t, RankInfo> ranks;
  for (const Event& e : events) {
    auto [it, inserted] = ranks.try_emplace(e.rank);
    if (inserted) it->second.stage = e.stage;
    it->second.used[track_of(e.kind)] = true;
  }

  const json other = {{"producer", "ShardScope"}, {"run", metadata_json.empty() ? "{}" : metadata_json}};
  out << "{\"displayTimeUnit\":\"ms\",\"otherData\":" << other.dump(-1, ' ', false, json::error_handler_t::replace)
      << ",\"traceEvents\":[";
  TraceOut trace(out);
  for (const auto& [rank, info] : ranks) {
    const std::int64_t pid = pid_of(rank);
    trace.write({{"ph", "M"}, {"pid", pid}, {"tid", tid_of(rank, kLogTrack)}, {"name", "process_name"},
                 {"args", {{"name", "rank " + std::to_string(rank) + " (stage " + std::to_string(info.stage) + ")"}}}});
    trace.write({{"ph", "M"}, {"pid", pid}, {"tid", tid_of(rank, kLogTrack)}, {"name", "process_sort_index"},
                 {"args", {{"sort_index", rank}}}});
    for (int t = 0; t < kTrackCount; ++t) {
      if (!info.used[t]) continue;
      const std::int64_t tid = tid_of(rank, static_cast<Track>(t));
      trace.write({{"ph", "M"}, {"pid", pid}, {"tid", tid}, {"name", "thread_name"},
                   {"args", {{"name", kTrackNames[t]}}}});
      trace.write({{"ph", "M"}, {"pid", pid}, {"tid", tid}, {"name", "thread_sort_index"},
                   {"args", {{"sort_index", t}}}});
    }
  }
  for (const Event& e : events) write_event(e, trace);
  out << "\n]}\n";
}

}  // namespace shardscope
