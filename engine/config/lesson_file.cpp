// SPDX-License-Identifier: GPL-3.0-or-later
#include "config/lesson_file.h"

#include <nlohmann/json.hpp>

#include "config/run_schema.h"
#include "core/error.h"
#include "core/json_text.h"

namespace shardscope {

namespace {

std::string title_text(const nlohmann::json& title, const char* language, const std::string& where) {
  const auto text = title.find(language);
  if (text == title.end() || !text->is_string())
    throw ConfigError(where + ": \"title\" needs \"en\" and \"zh_CN\" strings");
  return text->get<std::string>();
}

RunConfig lesson_config(const nlohmann::json& keys, const std::string& where, RunConfig config) {
  if (!keys.is_object()) throw ConfigError(where + ": \"config\" must be an object");
  const auto key_name = [](std::string_view key) {
    std::string quoted(1, '"');  // not "\"" + key: GCC 12's -Wrestrict misfires on that (PR 105651)
    return quoted.append(key).append(1, '"');
  };
  try {
    for (const auto& [key, value] : keys.items()) {
      const RunField* field = find_run_field(key);
      if (field == nullptr || field->saved == Saved::never)
        throw ConfigError(where + ": unknown config key \"" + bounded_excerpt(key) + "\"");
      set_field(config, *field, value);
    }
    validate_run_config(config);
  } catch (const FieldError& e) {
    throw ConfigError(where + ": " + e.text(key_name));
  }
  return config;
}

int chapter(const nlohmann::json& root, const std::string& where) {
  const auto value = root.find("chapter");
  if (value != root.end() && value->is_number_integer() && value->get<std::int64_t>() >= 1 &&
      value->get<std::int64_t>() <= kSeedChapters)
    return value->get<int>();
  throw ConfigError(where + ": \"chapter\" must be the seed chapter the lesson teaches, 1 to " +
                    std::to_string(kSeedChapters) +
                    (value == root.end() ? std::string(" (missing)") : " (got " + json_value_summary(*value) + ")"));
}

double playback_speed(const nlohmann::json& root, const std::string& where) {
  const auto speed = root.find("playback_speed");
  if (speed == root.end()) return 1.0;
  if (speed->is_number())
    for (const double offered : kLessonPlaybackSpeeds)
      if (speed->get<double>() == offered) return offered;
  throw ConfigError(where + ": \"playback_speed\" must be 1, 0.5, 0.25 or 0.1 (got " + json_value_summary(*speed) +
                    ")");
}

}  // namespace

RunConfig panel_default_config() {
  RunConfig c;
  c.model = "gpt-tiny";
  c.steps = 200;
  c.batch = 16;
  c.seq = 64;
  c.layout[Axis::dp] = 2;
  c.layout[Axis::pp] = 2;
  c.dp_mode = DataParallelMode::ddp;
  c.schedule = PipelineScheduleKind::one_f_one_b;
  c.micro_batches = 4;
  c.accum = 1;
  c.eval_every = 25;  // the loss plot shows the held-out loss beside the training loss
  return c;
}

LessonFile parse_lesson_file(std::string_view text, const std::string& where, const RunConfig& base) {
  JsonTextError error;
  const std::optional<nlohmann::json> root = parse_json_text(text, error);
  if (!root) throw ConfigError(where + ": " + error.where_and_why());
  if (!root->is_object()) throw ConfigError(where + ": expected a JSON object");
  const auto title = root->find("title");
  if (title == root->end() || !title->is_object())
    throw ConfigError(where + ": \"title\" needs \"en\" and \"zh_CN\" strings");
  LessonFile lesson;
  lesson.title_en = title_text(*title, "en", where);
  lesson.title_zh = title_text(*title, "zh_CN", where);
  lesson.chapter = chapter(*root, where);
  lesson.playback_speed = playback_speed(*root, where);
  const auto keys = root->find("config");
  lesson.config = lesson_config(keys == root->end() ? nlohmann::json::object() : *keys, where, base);
  return lesson;
}

}  // namespace shardscope
