// SPDX-License-Identifier: GPL-3.0-or-later
// One pool job made of unequal, independent tasks (the parts of a layer's dX
// and dW, a LayerNorm's row blocks and channel blocks): each thread takes the
// next task until none is left, so the threads stay equally busy and the
// job needs one wake-up instead of one per kind of work. Each task is fixed
// by the shapes alone, so which thread runs it never changes the bits.
#pragma once

#include <algorithm>
#include <atomic>

#include "core/thread_pool.h"

namespace shardscope {

template <class Task>
void run_tasks(ThreadPool& pool, int count, const Task& task) {
  if (count <= 0) return;
  std::atomic<int> next{0};
  pool.parallel_for(std::min(count, pool.threads()), 1, [&](std::int64_t, std::int64_t) {
    for (int i = next.fetch_add(1); i < count; i = next.fetch_add(1)) task(i);
  });
}

}  // namespace shardscope
