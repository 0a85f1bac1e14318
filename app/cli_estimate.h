// SPDX-License-Identifier: GPL-3.0-or-later
// shardscope-cli estimate: per-rank memory by ledger category with the formula
// behind each number, the fit on a GPU, and the time model of a step.
#pragma once

#include <string>
#include <vector>

namespace shardscope::cli {

int run_estimate(const std::vector<std::string>& args);

}  // namespace shardscope::cli
