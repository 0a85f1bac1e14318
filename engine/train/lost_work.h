// SPDX-License-Identifier: GPL-3.0-or-later
// What a failure costs: a run that stops in step done + 1 restarts from the
// latest checkpoint committed under its save directory, so the finished steps
// since that checkpoint run again; the checkpoint interval bounds them (at
// most every - 1). One sentence for the CLI and the GUI.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace shardscope {

// The newest committed step directory under a --save-dir (what a restart
// resumes from), or none: no save directory, or nothing committed yet.
std::optional<std::string> latest_checkpoint(const std::string& save_dir);

// "lost work: the run stopped in step 8; the last checkpoint is step 5
// (--save-every 5), so a restart from DIR/step-000005 runs 2 finished steps again",
// or why every finished step is lost (no --save-dir, nothing committed yet).
std::string lost_work_text(const std::string& save_dir, std::int64_t save_every, std::int64_t steps_done);

}  // namespace shardscope
