// SPDX-License-Identifier: GPL-3.0-or-later
// Errors the engine reports to its callers. A ConfigError is the user's input
// (a flag, a file, a preset) and names the field at fault; the CLI maps it to exit code 2.
#pragma once

#include <stdexcept>
#include <string>

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
// device), the category, the bytes asked for and what the rank already held.
class OutOfMemory : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace shardscope
