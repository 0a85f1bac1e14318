// SPDX-License-Identifier: GPL-3.0-or-later
// A lesson's lesson.json (tutorials/<id>/lesson.json): its title in English and
// Chinese and the run it starts, as keys of the run-config schema applied to
// the panel's default run. The GUI's lesson list and the lesson fuzz target
// read it through this one function.
//   {"title": {"en": "...", "zh_CN": "..."}, "chapter": 4, "playback_speed": 0.25,
//    "config": {"pp": 4, "micro_batches": 8}}
// "chapter" is the seed chapter it teaches (1 to 11, ../shared/seed/SUMMARY.md):
// the lesson list is in chapter order.
// "playback_speed" paces the lesson: the views replay each step at that
// fraction of real time (one of kLessonPlaybackSpeeds; 1 when absent).
#pragma once

#include <string>
#include <string_view>

#include "config/run_config.h"

namespace shardscope {

// The speeds of the window's playback control, fastest first.
inline constexpr double kLessonPlaybackSpeeds[] = {1.0, 0.5, 0.25, 0.1};
inline constexpr int kSeedChapters = 11;

struct LessonFile {
  std::string title_en, title_zh;
  int chapter = 0;
  double playback_speed = 1.0;
  RunConfig config;  // `base` with the lesson's keys applied, validated
};

// The run the GUI's config panel opens with, which a lesson's keys change:
// gpt-tiny, batch 16 x 64 tokens, dp 2 x pp 2 with 4 micro-batches (1F1B),
// 200 steps, held-out loss every 25.
RunConfig panel_default_config();

// Throws ConfigError starting with `where` (the file's name): JSON errors with
// their line and column, a missing title, a chapter missing or outside 1 to 11, an unknown key, a value out of range
// a playback speed the window does not offer, or a run that does not validate (keys named as in the file: "pp").
LessonFile parse_lesson_file(std::string_view text, const std::string& where, const RunConfig& base);

}  // namespace shardscope
