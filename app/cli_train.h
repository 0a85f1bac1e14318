// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <string>
#include <vector>

namespace shardscope::cli {

// shardscope-cli train: returns the exit code; throws UsageError / ConfigError on bad input.
int run_train(const std::vector<std::string>& args);

}  // namespace shardscope::cli
