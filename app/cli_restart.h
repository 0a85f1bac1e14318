// SPDX-License-Identifier: GPL-3.0-or-later
// launch --max-restarts N (torchrun's elastic restarts, for one job): runs the
// job; when it fails (a rank died, froze or threw), starts it again from the
// latest committed checkpoint of its --save-dir, at most N times, printing each
// restart with its cause. A checkpoint torn by the failure is never used: only
// a committed step has a manifest (train/checkpoint.h).
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace shardscope::cli {

// The job `command` (train ...) as the argv that starts it (mpirun ...).
using JobArgv = std::function<std::vector<std::string>(const std::vector<std::string>& command)>;

// Runs `argv(command)`, restarting as above. Does not restart a job refused
// for its input (exit code 2: the same input fails again) or one the user
// stopped (SIGINT, SIGTERM: forwarded to the job). Returns the last run's exit
// code (128 + the signal when a signal ended it).
int run_with_restarts(const JobArgv& argv, std::vector<std::string> command, int max_restarts);

// The command with --resume set to `dir` (any --resume it had replaced).
std::vector<std::string> with_resume(std::vector<std::string> command, const std::string& dir);

}  // namespace shardscope::cli
