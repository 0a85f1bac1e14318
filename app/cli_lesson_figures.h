// SPDX-License-Identifier: GPL-3.0-or-later
// The figures a lesson's text quotes, printed after its run (`train --lesson
// NAME`), each beside its formula: the estimator's bytes of the run (equal to the
// engine's ledger for the runs it trains: tests/engine/test_estimate_ledger.cpp)
// and of the runs the text compares it with, which lesson.json lists as
//   "figures": {"compare": [{"checkpoint": "none"}, ...],
//               "trained": [{"schedule": "zb-h2"}, ...],
//               "cited": {"65504": "the largest fp16 value (IEEE 754)", ...}}
// "compare": config keys over this run, one run each; "trained": the same, but
// each trained for a few steps, its measured schedule summary printed (what no
// estimate gives: a schedule's bubble on the virtual clock); "cited": numbers the text
// quotes that no run of the lesson prints (a published figure, another model's),
// each with its source: tests/cli/test_lesson_figures.cpp checks that every
// other number of the text (English and Chinese) is in the run's output.
#pragma once

#include <string_view>

#include "config/run_config.h"

namespace shardscope::cli {

// Before the run: ConfigError naming the lesson file for a "compare" key that is no config key.
void check_lesson_figures(std::string_view lesson, const RunConfig& run);
// After it: the figures; a compared run that the other flags make invalid is named with the reason.
void print_lesson_figures(std::string_view lesson, const RunConfig& run);

}  // namespace shardscope::cli
