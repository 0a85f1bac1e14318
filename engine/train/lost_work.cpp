// SPDX-License-Identifier: GPL-3.0-or-later
#include "train/lost_work.h"

#include <algorithm>
#include <filesystem>
#include <optional>

#include "core/error.h"
#include "train/checkpoint.h"

namespace shardscope {

std::optional<std::string> latest_checkpoint(const std::string& save_dir) {
  if (save_dir.empty()) return std::nullopt;
  try {
    return find_checkpoint_dir(save_dir, "--save-dir");
  } catch (const ConfigError&) {  // no committed step yet
    return std::nullopt;
  }
}

std::string lost_work_text(const std::string& save_dir, std::int64_t save_every, std::int64_t steps_done) {
  const std::string stopped = "lost work: the run stopped in step " + std::to_string(steps_done + 1);
  const std::string done = std::to_string(steps_done) + " finished step" + (steps_done == 1 ? "" : "s");
  if (save_dir.empty()) return stopped + "; without --save-dir its " + done + " are lost";
  const std::string every = save_every > 0 ? "--save-every " + std::to_string(save_every)
                                           : std::string("no --save-every: saved only at the end");
  const std::optional<std::string> dir = latest_checkpoint(save_dir);
  if (!dir)
    return stopped + "; no checkpoint committed in " + save_dir + " yet (" + every + "): its " + done + " are lost";
  const std::int64_t saved = checkpoint_step_of(std::filesystem::path(*dir).filename().string()).value_or(0);
  const std::int64_t again = std::max<std::int64_t>(0, steps_done - saved);
  return stopped + "; the last checkpoint is step " + std::to_string(saved) + " (" + every + "), so a restart from " +
         *dir + " runs " + std::to_string(again) + " finished step" + (again == 1 ? "" : "s") + " again";
}

}  // namespace shardscope
