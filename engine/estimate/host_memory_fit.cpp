// SPDX-License-Identifier: GPL-3.0-or-later
#include "estimate/host_memory_fit.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>

#include "core/byte_text.h"
#include "core/error.h"

namespace shardscope {

namespace {
void keep_smaller(HostMemoryLimit& limit, std::int64_t bytes, const std::string& source) {
  if (bytes > 0 && (limit.bytes == 0 || bytes < limit.bytes)) limit = HostMemoryLimit{bytes, source};
}

// cgroup v2's memory.max: a number of bytes, or "max" (no limit).
std::int64_t cgroup_memory_max() {
  std::ifstream in("/sys/fs/cgroup/memory.max");
  long long bytes = 0;
  return in >> bytes ? static_cast<std::int64_t>(bytes) : 0;
}
// VmSize: the address space this process has mapped so far (code, libraries, thread stacks).
std::int64_t mapped_bytes() {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.starts_with("VmSize:")) return std::atoll(line.c_str() + 7) * 1024;  // "VmSize:  663452 kB"
  return 0;
}
}  // namespace

HostMemoryLimit host_memory_limit(int blas_threads) {
  HostMemoryLimit limit;
  const long pages = sysconf(_SC_PHYS_PAGES), page_size = sysconf(_SC_PAGE_SIZE);
  if (pages > 0 && page_size > 0) keep_smaller(limit, std::int64_t{pages} * page_size, "physical memory");
  rlimit address_space{};
  if (getrlimit(RLIMIT_AS, &address_space) == 0 && address_space.rlim_cur != RLIM_INFINITY) {
    // The address space counts more than the ledger: what is mapped already, and OpenBLAS's buffer
    // (BUFFER_SIZE, 32 << 22 bytes on x86-64) for every thread that runs a matrix product. OpenBLAS retries
    // forever when it cannot map that buffer, so a run without room for it must be refused here.
    const auto cap = static_cast<std::int64_t>(address_space.rlim_cur);
    std::string source = "the address-space limit, ulimit -v";
    std::int64_t room = cap;
    if (blas_threads > 0) {
      const std::int64_t mapped = mapped_bytes(), buffers = std::int64_t{blas_threads} * kOpenBlasBufferBytes;
      room = std::max<std::int64_t>(1, cap - mapped - buffers);
      source.append(" ").append(binary_bytes(cap)).append(", less ").append(binary_bytes(mapped));
      source.append(" mapped and ").append(binary_bytes(buffers)).append(" for OpenBLAS's buffers");
    }
    keep_smaller(limit, room, source);
  }
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
