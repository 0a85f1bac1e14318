// SPDX-License-Identifier: GPL-3.0-or-later
// An EventSink for tests: keeps every event, from any thread.
#pragma once

#include <mutex>
#include <vector>

#include "events/event.h"

namespace shardscope::test {

class CollectingSink : public EventSink {
 public:
  void emit(const Event& e) override {
    std::lock_guard lock(mutex_);
    events_.push_back(e);
  }
  // Every event so far, in the order emit() was called.
  std::vector<Event> events() {
    std::lock_guard lock(mutex_);
    return events_;
  }
  // The comm events of one sending rank, in the order they were emitted.
  std::vector<Event> of_rank(int rank) {
    std::lock_guard lock(mutex_);
    std::vector<Event> out;
    for (const Event& e : events_)
      if (e.kind == EventKind::comm_span && e.rank == rank) out.push_back(e);
    return out;
  }

 private:
  std::mutex mutex_;
  std::vector<Event> events_;
};

}  // namespace shardscope::test
