// SPDX-License-Identifier: GPL-3.0-or-later
#include "cli_lessons.h"

#include "cli_args.h"
#include "config/lesson_file.h"
#include "core/did_you_mean.h"
#include "core/error.h"

namespace shardscope::cli {

std::string lesson_names() {
  std::string names;
  for (const EmbeddedLesson& lesson : embedded_lessons()) names += (names.empty() ? "" : ", ") + std::string(lesson.id);
  return names;
}

RunConfig lesson_run_config(std::string_view name) {
  for (const EmbeddedLesson& lesson : embedded_lessons())
    if (lesson.id == name)
      return parse_lesson_file(lesson.json, "--lesson " + std::string(name) + " (tutorials/" + std::string(name) +
                                                "/lesson.json)",
                               panel_default_config())
          .config;
  std::vector<std::string> ids;
  for (const EmbeddedLesson& lesson : embedded_lessons()) ids.emplace_back(lesson.id);
  throw ConfigError("--lesson: no lesson '" + std::string(name) + "'" + did_you_mean(name, ids) + " (the lessons are " +
                    lesson_names() + ")");
}

std::string lesson_argument(const std::vector<std::string>& args) {
  return flag_argument(args, "--lesson");
}

}  // namespace shardscope::cli
