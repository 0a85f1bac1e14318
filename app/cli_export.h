// SPDX-License-Identifier: GPL-3.0-or-later
// shardscope-cli export: turn a run recording (.ssrun) into a file other
// tools open (so far: a Chrome/Perfetto trace).
#pragma once

#include <string>
#include <vector>

namespace shardscope::cli {

// Throws UsageError, ConfigError or FormatError (exit code 2 in main).
int run_export(const std::vector<std::string>& args);

}  // namespace shardscope::cli
