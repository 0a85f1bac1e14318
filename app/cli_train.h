// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <string>
#include <vector>

namespace shardscope::cli {

// shardscope-cli train: returns the exit code; throws UsageError / ConfigError on bad input.
int run_train(const std::vector<std::string>& args);

// For `launch -- train ...`, before mpirun starts: the train arguments are
// checked as train checks them, and the layout against `processes` as each
// process would (check_process_layout). Throws UsageError / ConfigError; false
// where the arguments asked for --help (printed).
bool check_train_for_processes(const std::vector<std::string>& args, int processes);

}  // namespace shardscope::cli
