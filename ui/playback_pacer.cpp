// SPDX-License-Identifier: GPL-3.0-or-later
#include "playback_pacer.h"

#include <algorithm>
#include <cmath>

namespace shardscope::ui {

void PlaybackPacer::push(const std::vector<Event>& events, std::int64_t now_ns) {
  if (events.empty()) return;
  if (!anchored_) {
    anchored_ = true;
    wall0_ns_ = now_ns;
    event0_ns_ = events.front().start_ns;
    for (const Event& e : events) event0_ns_ = std::min(event0_ns_, e.start_ns);
  }
  pending_.insert(pending_.end(), events.begin(), events.end());
}

std::int64_t PlaybackPacer::replayTimeNs(std::int64_t now_ns) const {
  if (!anchored_) return event0_ns_;
  return event0_ns_ + static_cast<std::int64_t>(std::floor(static_cast<double>(now_ns - wall0_ns_) * speed_));
}

void PlaybackPacer::release(std::int64_t now_ns, std::vector<Event>& out) {
  if (realTime()) {
    flush(out);
    return;
  }
  const std::int64_t replay_ns = replayTimeNs(now_ns);
  // Stable partition by hand: due events out (in arrival order), the rest kept in order.
  std::size_t kept = 0;
  for (std::size_t i = 0; i < pending_.size(); ++i) {
    if (pending_[i].end_ns <= replay_ns)
      out.push_back(pending_[i]);
    else
      pending_[kept++] = pending_[i];
  }
  pending_.resize(kept);
}

void PlaybackPacer::flush(std::vector<Event>& out) {
  out.insert(out.end(), pending_.begin(), pending_.end());
  pending_.clear();
}

}  // namespace shardscope::ui
