// SPDX-License-Identifier: GPL-3.0-or-later
#include "clock/link_model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "core/thread_pool.h"

namespace shardscope {

std::int64_t LinkModel::wire_ns(std::int64_t bytes) const {
  return static_cast<std::int64_t>(std::llround(static_cast<double>(bytes) / bytes_per_s * 1e9));
}

std::int64_t LinkModel::transfer_ns(std::int64_t bytes) const {
  return std::max<std::int64_t>(1, static_cast<std::int64_t>(std::llround(latency_s * 1e9)) + wire_ns(bytes));
}

std::string LinkModel::describe() const {
  char text[128];
  std::snprintf(text, sizeof text, "%s: %.1f GB/s%s, %.1f us per transfer", std::string(link_kind_name(kind)).c_str(),
                bytes_per_s / 1e9, kind == LinkKind::host ? " (measured memory copy)" : "", latency_s * 1e6);
  return text;
}

LinkModel make_link_model(LinkKind kind) {
  switch (kind) {
    case LinkKind::pcie4:
      return {kind, 31.5e9, 5.7e-6};
    case LinkKind::nvlink:
      return {kind, 450e9, 3.4e-6};
    case LinkKind::infiniband:
      return {kind, 50e9, 9.6e-6};
    case LinkKind::host:
      break;
  }
  return {LinkKind::host, measured_host_copy_bandwidth(), 1e-6};
}

double measured_host_copy_bandwidth() {
  static const double bandwidth = [] {
    constexpr std::size_t kBytes = 32u << 20;
    std::vector<char> src(kBytes, 1), dst(kBytes, 0);  // touched: no page faults in the timed copies
    // Timed by this thread's CPU time, as the ranks' compute is (clock/device_clock.h):
    // on the wall clock a copy preempted by other programs read several times slower,
    // and so did every transfer of a run started on a busy machine.
    double best = 1e300;
    for (int i = 0; i < 4; ++i) {
      src[static_cast<std::size_t>(i)] = static_cast<char>(i);
      const std::int64_t t0 = thread_cpu_ns();
      std::memcpy(dst.data(), src.data(), kBytes);
      best = std::min(best, static_cast<double>(thread_cpu_ns() - t0) * 1e-9);
    }
    volatile char sink = dst[3];  // the copies are used
    (void)sink;
    return static_cast<double>(kBytes) / std::max(best, 1e-9);
  }();
  return bandwidth;
}

}  // namespace shardscope
