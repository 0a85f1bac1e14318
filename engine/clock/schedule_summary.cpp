// SPDX-License-Identifier: GPL-3.0-or-later
#include "clock/schedule_summary.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <set>
#include <tuple>
#include <utility>

#include "clock/pipeline_bubble.h"
#include "clock/zb_v_bubble.h"
#include "layout/grid.h"

namespace shardscope {

namespace {

using Interval = std::pair<std::int64_t, std::int64_t>;

// A stage's F, B or W box (a W: the weight gradients a zero-bubble schedule runs apart from B).
bool is_stage_span(const Event& e) {
  return e.kind == EventKind::compute_span && e.layer < 0 &&
         (e.compute == ComputeKind::forward || e.compute == ComputeKind::backward ||
          e.compute == ComputeKind::weight_gradient);
}

bool is_backward_phase(ComputeKind kind) {
  return kind == ComputeKind::backward || kind == ComputeKind::weight_gradient;
}

bool is_bucket_transfer(const Event& e) {
  return e.kind == EventKind::comm_span && e.op == CommOp::all_reduce && e.bucket >= 0;
}

// Sorted, disjoint intervals covering the same time.
std::vector<Interval> merged(std::vector<Interval> v) {
  std::sort(v.begin(), v.end());
  std::vector<Interval> out;
  for (const Interval& i : v) {
    if (!out.empty() && i.first <= out.back().second)
      out.back().second = std::max(out.back().second, i.second);
    else
      out.push_back(i);
  }
  return out;
}

std::int64_t length(const std::vector<Interval>& v) {
  std::int64_t total = 0;
  for (const Interval& i : v) total += i.second - i.first;
  return total;
}

// Time covered by both (each merged).
std::int64_t intersection(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  std::int64_t total = 0;
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    total += std::max<std::int64_t>(0, std::min(a[i].second, b[j].second) - std::max(a[i].first, b[j].first));
    if (a[i].second < b[j].second)
      ++i;
    else
      ++j;
  }
  return total;
}

// The formula (p - 1) / (m + p - 1) with each stage's own time per micro-batch
// (schedule_summary.h), from `busy`, each stage's busy time in a flush; the
// formula itself when the stages are equal. Also which stage is the slowest.
void stages_formula(PipelineBubble& b, const std::vector<double>& busy) {
  double total = 0.0, max = 0.0;
  for (double t : busy) {
    total += t;
    max = std::max(max, t);
  }
  if (total <= 0.0) return;
  const double p = b.stages, m = b.micro_batches;
  // In units of (a flush's busy time) / m: sum(t_s) + (m - 1) max(t_s).
  const double window = (total + (m - 1.0) * max) / m;
  b.for_stages = 1.0 - total / (p * window);
  b.slowest_stage = max * p / total;
  b.slowest_stage_index = static_cast<int>(std::max_element(busy.begin(), busy.end()) - busy.begin());
}

struct Flush {
  std::int64_t first = INT64_MAX, last = INT64_MIN;
  std::vector<std::int64_t> busy;  // per stage
};

// Each stage's busy time in a flush, the median over the flushes (of the
// middle two, their mean), as the idle time is the median flush's: summed
// over the flushes, one flush whose boxes the machine's load slowed (a rank
// preempted, its caches refilled) decided which stage paced the pipeline.
std::vector<double> median_stage_busy(const std::vector<const Flush*>& flushes, int stages) {
  std::vector<double> medians(static_cast<std::size_t>(stages), 0.0);
  std::vector<std::int64_t> busy;
  for (std::size_t s = 0; s < medians.size(); ++s) {
    busy.clear();
    for (const Flush* f : flushes) busy.push_back(f->busy[s]);
    std::sort(busy.begin(), busy.end());
    const std::size_t n = busy.size();
    if (n > 0) medians[s] = 0.5 * static_cast<double>(busy[n / 2] + busy[n % 2 == 1 ? n / 2 : n / 2 - 1]);
  }
  return medians;
}

struct FlushIdle {
  double idle = 0.0, bubble = 0.0;  // all the stages' idle time; its fill and drain (schedule_summary.h)
};

// Each stage's idle time W - busy_s, split: fill and drain up to (p - 1) times
// the slowest stage's time per micro-batch, the rest stage imbalance.
FlushIdle flush_idle(const Flush& f, int micro_batches) {
  std::int64_t slowest = 0;
  for (std::int64_t busy : f.busy) slowest = std::max(slowest, busy);
  const double window = static_cast<double>(f.last - f.first), p = static_cast<double>(f.busy.size());
  const double fill_and_drain = (p - 1.0) * static_cast<double>(slowest) / micro_batches;
  double idle = 0.0, bubble = 0.0;
  for (std::int64_t busy : f.busy) {
    const double stage_idle = std::max(0.0, window - static_cast<double>(busy));
    idle += stage_idle;
    bubble += std::min(stage_idle, fill_and_drain);
  }
  return {idle / (p * window), bubble / (p * window)};
}

// The median flush by idle time (of the middle two, their mean): one flush
// where the machine preempted a rank mid-span does not move it.
void take_median(PipelineBubble& b, std::vector<FlushIdle> flushes) {
  std::sort(flushes.begin(), flushes.end(), [](const FlushIdle& x, const FlushIdle& y) { return x.idle < y.idle; });
  const std::size_t n = flushes.size();
  const FlushIdle& high = flushes[n / 2];
  const FlushIdle& low = n % 2 == 1 ? high : flushes[n / 2 - 1];
  b.flushes = static_cast<int>(n);
  b.idle = 0.5 * (low.idle + high.idle);
  b.measured = 0.5 * (low.bubble + high.bubble);
  b.imbalance = b.idle - b.measured;
}

std::optional<PipelineBubble> pipeline_bubble(std::span<const Event> events, int dp, int pp, int m,
                                              std::int64_t first_step) {
  if (pp <= 1 || dp <= 0 || m <= 0) return std::nullopt;
  const Grid grid(dp, pp);
  std::map<std::tuple<std::int64_t, int, int>, Flush> flushes;  // (step, dp rank, accumulation step)
  PipelineBubble b;
  b.stages = pp;
  b.micro_batches = m;
  b.formula = gpipe_bubble_fraction(pp, m);
  b.stage_busy_ns.assign(static_cast<std::size_t>(pp), 0);
  std::map<std::pair<int, ComputeKind>, std::pair<double, int>> boxes;  // (stage, kind) -> (summed ns, count)
  for (const Event& e : events) {
    if (!is_stage_span(e) || e.step < first_step || e.micro_batch < 0) continue;
    b.virtual_stages = std::max(b.virtual_stages, e.chunk + 1);
    auto& [box_ns, box_count] = boxes[{grid.stage_of(e.rank), e.compute}];
    box_ns += static_cast<double>(e.end_ns - e.start_ns);
    ++box_count;
    Flush& f = flushes[{e.step, grid.dp_rank_of(e.rank), e.micro_batch / m}];
    f.busy.resize(static_cast<std::size_t>(pp), 0);
    f.first = std::min(f.first, e.start_ns);
    f.last = std::max(f.last, e.end_ns);
    const auto stage = static_cast<std::size_t>(grid.stage_of(e.rank));
    f.busy[stage] += e.end_ns - e.start_ns;
    b.stage_busy_ns[stage] += e.end_ns - e.start_ns;
  }
  std::vector<FlushIdle> idle;
  std::vector<const Flush*> measured;
  for (const auto& [key, f] : flushes)
    if (f.last > f.first) {
      idle.push_back(flush_idle(f, m));
      measured.push_back(&f);
    }
  if (idle.empty()) return std::nullopt;
  const auto mean = [&](ComputeKind kind, int only_stage) {  // only_stage -1: all stages
    double ns = 0.0;
    int count = 0;
    for (const auto& [key, box] : boxes)
      if (key.second == kind && (only_stage < 0 || key.first == only_stage)) ns += box.first, count += box.second;
    return count > 0 ? ns / count : 0.0;
  };
  b.forward_ns = mean(ComputeKind::forward, -1);
  b.backward_ns = mean(ComputeKind::backward, -1);
  b.weight_ns = mean(ComputeKind::weight_gradient, -1);
  stages_formula(b, median_stage_busy(measured, pp));
  b.slowest_forward_ns = mean(ComputeKind::forward, b.slowest_stage_index);
  b.slowest_backward_ns = mean(ComputeKind::backward, b.slowest_stage_index);
  b.slowest_weight_ns = mean(ComputeKind::weight_gradient, b.slowest_stage_index);
  take_median(b, std::move(idle));
  return b;
}

struct RankStep {
  std::vector<Interval> comm, backward;
  std::map<int, std::int64_t> bucket_start;  // bucket -> its first transfer's start
};

// Per (step, stage): how many buckets had begun on every rank before the group's last backward ended.
int fewest_started_in_backward(const std::map<std::pair<int, std::int64_t>, RankStep>& per, const Grid& grid) {
  struct Group {
    std::int64_t backward_end = INT64_MIN;
    std::map<int, std::int64_t> started;  // bucket -> its latest first start over the ranks
  };
  std::map<std::pair<std::int64_t, int>, Group> groups;  // (step, stage)
  for (const auto& [key, r] : per) {
    Group& g = groups[{key.second, grid.stage_of(key.first)}];
    for (const Interval& b : r.backward) g.backward_end = std::max(g.backward_end, b.second);
    for (const auto& [bucket, start] : r.bucket_start) {
      auto [it, fresh] = g.started.try_emplace(bucket, start);
      if (!fresh) it->second = std::max(it->second, start);
    }
  }
  int fewest = INT32_MAX;
  for (const auto& [key, g] : groups) {
    if (g.started.empty()) continue;
    int started = 0;
    for (const auto& [bucket, start] : g.started) started += start < g.backward_end ? 1 : 0;
    fewest = std::min(fewest, started);
  }
  return fewest == INT32_MAX ? 0 : fewest;
}

std::optional<DdpOverlap> ddp_overlap(std::span<const Event> events, const Grid& grid, std::int64_t first_step) {
  std::map<std::pair<int, std::int64_t>, RankStep> per;  // (rank, step)
  std::set<int> buckets;
  for (const Event& e : events) {
    if (e.step < first_step) continue;
    if (is_bucket_transfer(e) && e.src == e.rank) {
      RankStep& r = per[{e.rank, e.step}];
      r.comm.emplace_back(e.start_ns, e.end_ns);
      auto [it, fresh] = r.bucket_start.try_emplace(e.bucket, e.start_ns);
      if (!fresh) it->second = std::min(it->second, e.start_ns);
      buckets.insert(e.bucket);
    } else if (is_stage_span(e) && is_backward_phase(e.compute)) {  // DDP overlaps B and W
      per[{e.rank, e.step}].backward.emplace_back(e.start_ns, e.end_ns);
    }
  }
  if (buckets.empty()) return std::nullopt;
  DdpOverlap o;
  o.buckets = static_cast<int>(buckets.size());
  o.min_buckets_started_in_backward = fewest_started_in_backward(per, grid);
  for (auto& [key, r] : per) {
    if (r.comm.empty() || r.backward.empty()) continue;
    const std::vector<Interval> comm = merged(r.comm), backward = merged(r.backward);
    o.comm_ns += length(comm);
    o.overlapped_ns += intersection(comm, backward);
  }
  return o;
}

std::string percent(double fraction) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f%%", 100.0 * fraction);
  return text;
}

// A run whose backward was split (zero-bubble schedules): the formulas of
// clock/pipeline_bubble.h with the measured box times, the mean stage's and
// the slowest stage's (zb_h1_bubble_paced); the line above measured the bubble
// itself ("idle in all").
std::string zero_bubble_line(const PipelineBubble& b) {
  const int p = b.stages, m = b.micro_batches;
  const double f = b.forward_ns, bw = b.backward_ns, w = b.weight_ns;
  char times[128], slowest[192];
  std::snprintf(times, sizeof times, "T_F %.3f ms, T_B %.3f ms, T_W %.3f ms", f / 1e6, bw / 1e6, w / 1e6);
  std::snprintf(slowest, sizeof slowest, "stage %d, %.2fx their mean: T_F %.3f ms, T_B %.3f ms, T_W %.3f ms",
                b.slowest_stage_index, b.slowest_stage, b.slowest_forward_ns / 1e6, b.slowest_backward_ns / 1e6,
                b.slowest_weight_ns / 1e6);
  return std::string("zero bubble, with the measured ") + times +
         ": ZB-H1's (p−1)(T_F+T_B−T_W) = " + percent(zb_h1_bubble_fraction(p, m, f, bw, w)) +
         " of the step, ZB-H2's floor (p−1)T_F = " + percent(zb_h2_bubble_fraction(p, m, f, bw, w)) +
         " (1F1B's (p−1)(T_F+T_B+T_W) is the formula above, (p−1)/(m+p−1)); paced by the slowest stage (" + slowest +
         "), the others idling the difference: ZB-H1's " + percent(zb_h1_bubble_paced(b)) + ", ZB-H2's " +
         percent(zb_h2_bubble_paced(b)) + " of the step, against the idle in all above";
}

// 1 − (1 − formula) · mean(t_s) / max(t_s), the formula evaluated with the slowest stage's boxes.
double paced(const PipelineBubble& b, double formula) {
  return b.slowest_stage > 0 ? 1.0 - (1.0 - formula) / b.slowest_stage : formula;
}

// Interleaved 1F1B: its own formula, v times shorter fill and drain, and the
// same paced by the slowest stage, beside the idle time measured above.
std::string interleaved_line(const PipelineBubble& b) {
  const double formula = interleaved_bubble_fraction(b.stages, b.micro_batches, b.virtual_stages);
  return "interleaved, v " + std::to_string(b.virtual_stages) +
         " chunks per stage: formula (p−1)/(v·m+p−1) = " + percent(formula) +
         " of the step; paced by the slowest stage " + percent(paced(b, formula)) + ", against the idle in all above";
}
// ZB-V: its floor with the measured chunk boxes, and the same paced by the slowest stage.
std::string zb_v_line(const PipelineBubble& b) {
  char times[128];
  std::snprintf(times, sizeof times, "T_F %.3f ms, T_B %.3f ms, T_W %.3f ms", b.forward_ns / 1e6, b.backward_ns / 1e6,
                b.weight_ns / 1e6);
  return std::string("zb-v, 2 chunks per stage in a V, with the measured ") + times +
         " of a chunk: floor (p−1)T_F / (2m(T_F+T_B+T_W) + (p−1)T_F) = " +
         percent(zb_v_bubble_fraction(b.stages, b.micro_batches, b.forward_ns, b.backward_ns, b.weight_ns)) +
         " of the step; paced by the slowest stage " + percent(zb_v_bubble_paced(b)) +
         ", against the idle in all above";
}
}  // namespace

double zb_h1_bubble_paced(const PipelineBubble& b) {
  return paced(b, zb_h1_bubble_fraction(b.stages, b.micro_batches, b.slowest_forward_ns, b.slowest_backward_ns,
                                        b.slowest_weight_ns));
}

double zb_v_bubble_fraction(int stages, int micro_batches, double forward_time, double backward_input_time,
                            double weight_time) {
  // ZB-H2's floor over 2m micro-batch chunks: (p - 1) T_F beside 2m (T_F + T_B + T_W).
  return zb_h2_bubble_fraction(stages, 2 * micro_batches, forward_time, backward_input_time, weight_time);
}

double zb_v_bubble_paced(const PipelineBubble& b) {
  return paced(b, zb_v_bubble_fraction(b.stages, b.micro_batches, b.slowest_forward_ns, b.slowest_backward_ns,
                                       b.slowest_weight_ns));
}

double zb_h2_bubble_paced(const PipelineBubble& b) {
  return paced(b, zb_h2_bubble_fraction(b.stages, b.micro_batches, b.slowest_forward_ns, b.slowest_backward_ns,
                                        b.slowest_weight_ns));
}

ScheduleSummary summarize_schedule(std::span<const Event> events, int dp, int pp, int micro_batches) {
  ScheduleSummary s;
  for (const Event& e : events)
    if (is_stage_span(e)) s.last_step = std::max(s.last_step, e.step);
  s.first_step = s.last_step >= 2 ? 2 : s.last_step;  // step 1 allocates and touches memory first
  s.bubble = pipeline_bubble(events, dp, pp, micro_batches, s.first_step);
  s.overlap = ddp_overlap(events, Grid(std::max(1, dp), std::max(1, pp)), s.first_step);
  return s;
}

std::vector<std::string> schedule_summary_lines(const ScheduleSummary& s, std::string_view clock_name) {
  std::vector<std::string> lines;
  const std::string steps = s.first_step == s.last_step
                                ? "step " + std::to_string(s.last_step)
                                : "steps " + std::to_string(s.first_step) + "-" + std::to_string(s.last_step);
  const std::string context = steps + ", " + std::string(clock_name) + " clock";
  if (s.bubble) {
    const PipelineBubble& b = *s.bubble;
    char slowest[32];
    std::snprintf(slowest, sizeof slowest, "%.2f", b.slowest_stage);
    lines.push_back("bubble measured " + percent(b.measured) + " · formula (p−1)/(m+p−1) = " + percent(b.formula) +
                    " · stage imbalance idles another " + percent(b.imbalance) + " (the slowest stage " + slowest +
                    "x their mean); idle in all " + percent(b.idle) + ", GPipe's with these stages' times " +
                    percent(b.for_stages) + " (p " + std::to_string(b.stages) + ", m " +
                    std::to_string(b.micro_batches) + ", " + std::to_string(b.flushes) + " flush" +
                    (b.flushes == 1 ? "" : "es") + ", " + context + ")");
    // Chunks with W boxes: ZB-V (two chunks in a V), the one built-in schedule that has both.
    const bool zb_v = b.weight_ns > 0 && b.virtual_stages == 2;
    if (b.weight_ns > 0) lines.push_back(zb_v ? zb_v_line(b) : zero_bubble_line(b));
    if (b.virtual_stages > 1 && b.weight_ns == 0) lines.push_back(interleaved_line(b));
  }
  if (s.overlap) {
    const DdpOverlap& o = *s.overlap;
    lines.push_back("communication overlapped with backward: " + percent(o.fraction()) + " (" +
                    std::to_string(o.buckets) + " bucket" + (o.buckets == 1 ? "" : "s") + ", at least " +
                    std::to_string(o.min_buckets_started_in_backward) + " of them under way on every rank before " +
                    "backward ended; " + context + ")");
  }
  return lines;
}

bool is_data_parallel_transfer(const Event& e, int dp) {
  return e.kind == EventKind::comm_span && moves_model_states(e.purpose) && e.src >= 0 && e.dst >= 0 &&
         e.src != e.dst && dp > 0 && e.src / dp == e.dst / dp;
}

MeasuredTraffic measure_data_parallel_traffic(std::span<const Event> events, std::int64_t step, int dp) {
  MeasuredTraffic m;
  for (const Event& e : events) {
    if (e.step != step || !is_data_parallel_transfer(e, dp)) continue;
    m.sent[e.src] += e.bytes;
    m.received[e.dst] += e.bytes;
  }
  return m;
}

bool is_tensor_parallel_layer_transfer(const Event& e) {
  return e.kind == EventKind::comm_span && e.purpose == CommPurpose::tensor_parallel && e.unit >= 1 && e.src >= 0 &&
         e.dst >= 0 && e.src != e.dst && e.micro_batch >= 0;  // -1: an evaluation's forward
}

LayerTraffic measure_tensor_parallel_traffic(std::span<const Event> events, std::int64_t step) {
  LayerTraffic bytes;
  for (const Event& e : events)
    if (e.step == step && is_tensor_parallel_layer_transfer(e)) bytes[{e.src, e.unit, e.micro_batch}] += e.bytes;
  return bytes;
}

void ScheduleEvents::emit(const Event& event) {
  if (next_ != nullptr) next_->emit(event);
  const bool model_states =
      event.kind == EventKind::comm_span && moves_model_states(event.purpose) && event.src >= 0 && event.dst >= 0;
  const bool wait = event.kind == EventKind::wait_span;
  // The optimizer's spans too: with the stage spans they bound a rank's step (wait_summary.h).
  const bool optimizer =
      event.kind == EventKind::compute_span && event.layer < 0 && event.compute == ComputeKind::optimizer;
  const bool layer_traffic = is_tensor_parallel_layer_transfer(event);
  // Ring attention's block transfers (plan/context_parallel_traffic.h measures them from events()).
  const bool ring_attention =
      event.kind == EventKind::comm_span && event.purpose == CommPurpose::context_parallel && event.layer >= 0;
  // MoE's all-to-all sends (plan/expert_parallel_traffic.h measures them from events()).
  const bool all_to_all = event.kind == EventKind::comm_span && event.purpose == CommPurpose::expert_parallel &&
                          event.unit >= 1 && event.op == CommOp::send;
  if (!is_stage_span(event) && !is_bucket_transfer(event) && !model_states && !wait && !optimizer && !layer_traffic &&
      !ring_attention && !all_to_all)
    return;
  std::lock_guard lock(mutex_);
  if (event.step > latest_step_) {
    latest_step_ = event.step;
    const std::int64_t oldest = latest_step_ - keep_steps_ + 1;
    if (!kept_.empty() && kept_.front().step < oldest)
      std::erase_if(kept_, [oldest](const Event& e) { return e.step < oldest; });
    transfer_bytes_.erase(transfer_bytes_.begin(), transfer_bytes_.lower_bound(oldest));
    waits_.erase(waits_.begin(), waits_.lower_bound(oldest));
    layer_bytes_.erase(layer_bytes_.begin(), layer_bytes_.lower_bound(oldest));
  }
  if (wait) waits_[event.step].add(event);
  if (layer_traffic) layer_bytes_[event.step][{event.src, event.unit, event.micro_batch}] += event.bytes;
  if (model_states) transfer_bytes_[event.step][{event.src, event.dst}] += event.bytes;
  if (is_stage_span(event) || is_bucket_transfer(event) || optimizer || ring_attention || all_to_all)
    kept_.push_back(event);
}

RankWaits ScheduleEvents::waits(std::int64_t first_step) const {
  std::lock_guard lock(mutex_);
  RankWaits all;
  for (auto it = waits_.lower_bound(first_step); it != waits_.end(); ++it) {
    for (const auto& [pair, ns] : it->second.ns) all.ns[pair] += ns;
    if (all.first_step == 0) all.first_step = it->first;
    all.last_step = it->first;
  }
  return all;
}

MeasuredTraffic ScheduleEvents::data_parallel_traffic(std::int64_t step, int dp) const {
  std::lock_guard lock(mutex_);
  MeasuredTraffic m;
  const auto it = transfer_bytes_.find(step);
  if (it == transfer_bytes_.end()) return m;
  for (const auto& [pair, bytes] : it->second) {
    Event e;  // the pair as a transfer, for the one rule of what counts
    e.kind = EventKind::comm_span;
    e.purpose = CommPurpose::gradients;
    e.src = pair.first;
    e.dst = pair.second;
    if (!is_data_parallel_transfer(e, dp)) continue;
    m.sent[e.src] += bytes;
    m.received[e.dst] += bytes;
  }
  return m;
}

LayerTraffic ScheduleEvents::tensor_parallel_traffic(std::int64_t step) const {
  std::lock_guard lock(mutex_);
  const auto it = layer_bytes_.find(step);
  return it == layer_bytes_.end() ? LayerTraffic{} : it->second;
}

std::vector<Event> ScheduleEvents::events() const {
  std::lock_guard lock(mutex_);
  return kept_;
}

}  // namespace shardscope
