// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "config/run_import.h"
#include "plan/schedule_file.h"

namespace shardscope::cli {

// A --schedule-file is the schedule: its rows are --pp, its micro-batches
// --micro-batches and (chunks placed round-robin) its chunks per rank
// --virtual-stages. A flag not on the command line (`args`) takes the file's
// value; one given that differs is refused (UsageError naming the flag and the
// file with its value).
struct ScheduleShape {
  int& stages;
  int& micro_batches;
  int& virtual_stages;
};
void take_shape_from_schedule_file(const ScheduleFile& file, const std::string& path,
                                   const std::vector<std::string>& args, ScheduleShape shape);
// A config file (--accelerate, --deepspeed) that set one of those where the command line did not
// must agree with the file too: refused (UsageError) naming the config file, its key (each
// RunImport's `origin`: run-config key, "file: its key"; the last file to set it) and the
// schedule file's value.
void check_imported_shape(const ScheduleFile& file, const std::string& path, const std::vector<std::string>& args,
                          const std::vector<RunImport>& imports, const RunConfig& config);
// train's --schedule-file, read once (the plan is made from this read) and its
// shape taken into `config`; nothing without one.
std::optional<ScheduleFile> read_schedule_file_of(RunConfig& config, const std::vector<std::string>& args);

// shardscope-cli schedule: prints a pipeline schedule's per-stage action lists and its bubble.
int run_schedule(const std::vector<std::string>& args);

}  // namespace shardscope::cli
