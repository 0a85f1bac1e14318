// SPDX-License-Identifier: GPL-3.0-or-later
#include "estimate/host_memory_fit.h"

#include <sys/resource.h>
#include <unistd.h>

#include <fstream>

#include "core/error.h"
#include "estimate/formula_text.h"

namespace shardscope {

namespace {
void keep_smaller(HostMemoryLimit& limit, std::int64_t bytes, const char* source) {
  if (bytes > 0 && (limit.bytes == 0 || bytes < limit.bytes)) limit = HostMemoryLimit{bytes, source};
}

// cgroup v2's memory.max: a number of bytes, or "max" (no limit).
std::int64_t cgroup_memory_max() {
  std::ifstream in("/sys/fs/cgroup/memory.max");
  long long bytes = 0;
  return in >> bytes ? static_cast<std::int64_t>(bytes) : 0;
}
}  // namespace

HostMemoryLimit host_memory_limit() {
  HostMemoryLimit limit;
  const long pages = sysconf(_SC_PHYS_PAGES), page_size = sysconf(_SC_PAGE_SIZE);
  if (pages > 0 && page_size > 0) keep_smaller(limit, std::int64_t{pages} * page_size, "physical memory");
  rlimit address_space{};
  if (getrlimit(RLIMIT_AS, &address_space) == 0 && address_space.rlim_cur != RLIM_INFINITY)
    keep_smaller(limit, static_cast<std::int64_t>(address_space.rlim_cur), "the address-space limit, ulimit -v");
  keep_smaller(limit, cgroup_memory_max(), "the cgroup's memory.max");
  return limit;
}

void check_fits_host_memory(std::int64_t predicted_bytes, int ranks, const HostMemoryLimit& limit) {
  if (limit.bytes <= 0 || predicted_bytes <= limit.bytes) return;
  throw ConfigError("the run does not fit in this machine's memory: the estimator predicts " +
                    binary_bytes(predicted_bytes) + " for its " + std::to_string(ranks) +
                    (ranks == 1 ? " rank" : " ranks together") + ", more than " + binary_bytes(limit.bytes) + " (" +
                    limit.source +
                    "); try a smaller --batch or --seq, more --accum, --checkpoint full, or a "
                    "smaller model (shardscope-cli estimate shows where the memory goes)");
}

}  // namespace shardscope
