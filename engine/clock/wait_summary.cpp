// SPDX-License-Identifier: GPL-3.0-or-later
#include "clock/wait_summary.h"

#include <algorithm>
#include <cstdio>

namespace shardscope {

namespace {
std::string ms(double ns) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f ms", ns / 1e6);
  return text;
}

std::string factor_text(double factor) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", factor);
  return text;
}
}  // namespace

void RankWaits::add(const Event& e) {
  if (e.kind != EventKind::wait_span || e.src < 0 || e.src == e.rank) return;
  ns[{e.rank, e.src}] += e.end_ns - e.start_ns;
  if (first_step == 0 || e.step < first_step) first_step = e.step;
  last_step = std::max(last_step, e.step);
}

std::int64_t RankWaits::waited_ns(int waiter) const {
  std::int64_t sum = 0;
  for (const auto& [pair, t] : ns)
    if (pair.first == waiter) sum += t;
  return sum;
}

std::int64_t RankWaits::waited_for_ns(int culprit) const {
  std::int64_t sum = 0;
  for (const auto& [pair, t] : ns)
    if (pair.second == culprit) sum += t;
  return sum;
}

std::int64_t RankWaits::total_ns() const {
  std::int64_t sum = 0;
  for (const auto& entry : ns) sum += entry.second;
  return sum;
}

int RankWaits::most_waited_for() const {
  std::map<int, std::int64_t> by_culprit;
  for (const auto& [pair, t] : ns) by_culprit[pair.second] += t;
  int best = -1;
  std::int64_t best_ns = 0;
  for (const auto& [culprit, t] : by_culprit)
    if (t > best_ns) best = culprit, best_ns = t;
  return best;
}

RankStepTimes rank_step_times(std::span<const Event> events, int world_size, std::int64_t first_step,
                              std::int64_t last_step) {
  const auto n = static_cast<std::size_t>(std::max(world_size, 0));
  RankStepTimes out{std::vector<double>(n, 0.0), std::vector<double>(n, 0.0)};
  if (last_step < first_step) return out;
  std::map<std::pair<std::int64_t, int>, std::pair<std::int64_t, std::int64_t>> windows;  // (step, rank) -> first, last
  for (const Event& e : events) {
    // Whole-stage spans and the optimizer: everything the rank's compute stream does in a step.
    const bool span = e.kind == EventKind::compute_span && e.layer < 0 && e.compute != ComputeKind::recompute;
    if (!span || e.step < first_step || e.step > last_step || e.rank < 0 || e.rank >= world_size) continue;
    out.compute_ns[static_cast<std::size_t>(e.rank)] += static_cast<double>(e.end_ns - e.start_ns);
    auto [it, added] = windows.try_emplace({e.step, e.rank}, e.start_ns, e.end_ns);
    if (!added) it->second = {std::min(it->second.first, e.start_ns), std::max(it->second.second, e.end_ns)};
  }
  for (const auto& [key, window] : windows)
    out.window_ns[static_cast<std::size_t>(key.second)] += static_cast<double>(window.second - window.first);
  const auto steps = static_cast<double>(last_step - first_step + 1);
  for (std::size_t r = 0; r < n; ++r) out.compute_ns[r] /= steps, out.window_ns[r] /= steps;
  return out;
}

namespace {
// "  rank 3 computes 46.5 ms per step (...), the others 15.5 ms on average; they idle 36.1 ms of each step, rank 3
// 5.3 ms (...): the difference, 30.8 ms, against (F − 1) × 15.5 ms = 31.0 ms". The straggler's own idle time is what
// every rank idles anyway (the last bucket's all-reduce after the backward); the rest is waiting for it.
std::string straggler_line(int culprit, const RankStepTimes& times, double slow_factor, bool slowed) {
  const std::vector<double>& compute = times.compute_ns;
  if (culprit < 0 || culprit >= static_cast<int>(compute.size()) || compute.size() < 2 ||
      times.window_ns.size() != compute.size())
    return {};
  double others = 0, idle = 0;
  for (std::size_t r = 0; r < compute.size(); ++r) {
    if (static_cast<int>(r) == culprit) continue;
    others += compute[r];
    idle += times.window_ns[r] - compute[r];
  }
  others /= static_cast<double>(compute.size() - 1);
  idle /= static_cast<double>(compute.size() - 1);
  const auto c = static_cast<std::size_t>(culprit);
  const double own_idle = times.window_ns[c] - compute[c];
  const std::string rank = "rank " + std::to_string(culprit);
  std::string line = "  " + rank + " computes " + ms(compute[c]) +
                     " per step (forward, backward, optimizer), the others " + ms(others) + " on average; they idle " +
                     ms(idle) + " of each step, " + rank + " " + ms(own_idle) + " (step minus compute)";
  if (slowed)
    line += ": the difference, " + ms(idle - own_idle) + ", against (F − 1) × " + ms(others) + " = " +
            ms((slow_factor - 1) * others) + " with F = " + factor_text(slow_factor);
  return line;
}
}  // namespace

std::vector<std::string> wait_summary_lines(const RankWaits& waits, int world_size, int slow_rank, double slow_factor,
                                            const RankStepTimes& times) {
  const double steps = static_cast<double>(waits.steps());
  const std::int64_t total = waits.total_ns();
  if (steps <= 0 || total <= 0) return {};
  const int culprit = waits.most_waited_for();
  const double share = 100.0 * static_cast<double>(waits.waited_for_ns(culprit)) / static_cast<double>(total);
  char head[256];
  std::snprintf(head, sizeof head,
                "waits: per step (steps %lld-%lld) the ranks' collectives and receives waited %s in all for other "
                "ranks (DDP's buckets wait beside the backward); %.0f%% of it for rank %d",
                static_cast<long long>(waits.first_step), static_cast<long long>(waits.last_step),
                ms(static_cast<double>(total) / steps).c_str(), share, culprit);
  std::string first = head;
  if (culprit == slow_rank)
    first += ", whose compute takes " + factor_text(slow_factor) + "x as long (--slow-rank " +
             std::to_string(slow_rank) + ":" + factor_text(slow_factor) + ")";
  std::vector<std::string> lines{first};
  // Each rank's line where one rank holds the others up (a straggler), else the head line says enough.
  if (culprit != slow_rank && share < 50.0) return lines;
  constexpr int kMostRanksListed = 16;
  for (int r = 0; r < std::min(world_size, kMostRanksListed); ++r) {
    const std::int64_t mine = waits.waited_ns(r);
    std::string line = "  rank " + std::to_string(r) + " waited " + ms(static_cast<double>(mine) / steps);
    const auto it = waits.ns.find({r, culprit});
    if (r != culprit && it != waits.ns.end())
      line += " (for rank " + std::to_string(culprit) + ": " + ms(static_cast<double>(it->second) / steps) + ")";
    lines.push_back(std::move(line));
  }
  if (std::string line = straggler_line(culprit, times, slow_factor, culprit == slow_rank); !line.empty())
    lines.push_back(std::move(line));
  if (world_size > kMostRanksListed)
    lines.push_back("  ... (" + std::to_string(world_size - kMostRanksListed) + " more ranks)");
  return lines;
}

}  // namespace shardscope
