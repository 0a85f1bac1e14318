// SPDX-License-Identifier: GPL-3.0-or-later
// The memory the operating system charges this process (Linux: /proc/self/status),
// shown beside the ledger: the ledger counts what the engine's buffers hold, the
// resident set what the process really occupies (code, thread stacks, the data
// set, the allocator's own overhead on top).
#pragma once

#include <cstdint>
#include <optional>

namespace shardscope {

struct ProcessMemory {
  std::int64_t resident_bytes = 0;       // VmRSS: resident now
  std::int64_t peak_resident_bytes = 0;  // VmHWM: the highest resident set so far
};

// nullopt where /proc/self/status cannot be read or lacks the fields.
std::optional<ProcessMemory> process_memory();

}  // namespace shardscope
