// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <string>
#include <vector>

namespace shardscope::cli {

// shardscope-cli schedule: prints a pipeline schedule's per-stage action lists and its bubble.
int run_schedule(const std::vector<std::string>& args);

}  // namespace shardscope::cli
