// SPDX-License-Identifier: GPL-3.0-or-later
// Does a run on the CPU fit in this machine's memory? Ranks on the CPU share
// the host's memory, so what must fit is the estimator's prediction summed
// over every rank (as the GUI's "Fits / Does not fit" line does for ranks
// sharing one GPU). A run predicted not to fit is refused before anything is
// allocated: better a message naming both numbers than an out-of-memory kill
// gigabytes later.
#pragma once

#include <cstdint>
#include <string>

namespace shardscope {

struct HostMemoryLimit {
  std::int64_t bytes = 0;  // 0: unknown (nothing is refused)
  std::string source;      // which limit it is, e.g. "physical memory"
};

// OpenBLAS's working buffer, mapped once per thread that calls it (x86-64 builds).
inline constexpr std::int64_t kOpenBlasBufferBytes = std::int64_t{32} << 22;

// The smallest of: physical memory (sysconf(_SC_PHYS_PAGES) x page size), the
// address-space limit (RLIMIT_AS, `ulimit -v`, less the address space already
// mapped and a kOpenBlasBufferBytes buffer for each of `blas_threads`) and the
// cgroup's memory.max (containers), whichever are set.
HostMemoryLimit host_memory_limit(int blas_threads = 0);

// Throws ConfigError naming the prediction, the limit and what to change when
// predicted_bytes (all `ranks` together) exceed limit.bytes.
void check_fits_host_memory(std::int64_t predicted_bytes, int ranks, const HostMemoryLimit& limit);

}  // namespace shardscope
