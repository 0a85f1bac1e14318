// SPDX-License-Identifier: GPL-3.0-or-later
// Errors the engine reports to its callers. A ConfigError is the user's input
// (a flag, a file, a preset) and names the field at fault; the CLI maps it to exit code 2.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include "core/memory_ledger.h"

namespace shardscope {

// Bad input from the user: the message names the field, file or offset.
class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A file that cannot be read or has the wrong format.
class FormatError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// An allocation that did not fit: what() names the memory (host or a
// device), the category, the bytes asked for and what the rank already held;
// category() and bytes() say the same for code (the trainer adds what the
// estimator predicted for that category).
class OutOfMemory : public std::runtime_error {
 public:
  OutOfMemory(const std::string& what, MemoryCategory category, std::int64_t bytes)
      : std::runtime_error(what), category_(category), bytes_(bytes) {}
  MemoryCategory category() const { return category_; }
  std::int64_t bytes() const { return bytes_; }

 private:
  MemoryCategory category_;
  std::int64_t bytes_;
};

}  // namespace shardscope
