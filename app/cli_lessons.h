// SPDX-License-Identifier: GPL-3.0-or-later
// The lessons of tutorials/, built into the CLI (app/embed_lessons.cmake), so
// `shardscope-cli train --lesson NAME` runs a lesson's run headless: the same
// lesson.json the GUI's Try it loads, read by the same parse_lesson_file onto
// the same panel defaults, validated the same way.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "config/run_config.h"

namespace shardscope::cli {

struct EmbeddedLesson {
  std::string_view id;    // the folder name, e.g. "pipeline_bubbles"
  std::string_view json;  // its lesson.json
};

std::span<const EmbeddedLesson> embedded_lessons();

// "gradient_accumulation, activation_checkpointing, ...": every embedded lesson's name.
std::string lesson_names();

// The lesson's run. ConfigError naming --lesson and every lesson there is, for a name that is none.
RunConfig lesson_run_config(std::string_view name);

// "--lesson NAME" (or "--lesson=NAME") among a command's arguments: the name, or empty.
std::string lesson_argument(const std::vector<std::string>& args);

}  // namespace shardscope::cli
