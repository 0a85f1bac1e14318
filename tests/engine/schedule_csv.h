// SPDX-License-Identifier: GPL-3.0-or-later
// A schedule's computations written as torch.distributed.pipelining's CSV, one
// line a rank (one chunk a stage): "0F0,0F1,0B0,...", a backward whose weight
// gradient runs apart (a W of the same micro-batch on the rank) written I. The
// schedule-file tests train from it (test_interleaved_schedule ends each line
// with a comma, as a spreadsheet may; test_tp_pipeline_schedules does not).
#pragma once

#include <QByteArray>
#include <algorithm>

#include "plan/pipeline_schedule.h"

namespace shardscope::testing {

enum class CsvLineEnd { comma, bare };

inline QByteArray as_csv(const PipelineSchedule& schedule, CsvLineEnd end) {
  using Type = PipelineAction::Type;
  QByteArray csv;
  for (const auto& list : compute_only(schedule)) {
    for (const auto& a : list) {
      const bool split =
          a.type == Type::backward && std::any_of(list.begin(), list.end(), [&](const PipelineAction& w) {
            return w.type == Type::weight_gradient && w.micro_batch == a.micro_batch;
          });
      const char* type = a.type == Type::forward ? "F" : a.type == Type::weight_gradient ? "W" : split ? "I" : "B";
      csv += QByteArray::number(a.stage) + type + QByteArray::number(a.micro_batch) + ",";
    }
    if (end == CsvLineEnd::comma)
      csv += "\n";
    else
      csv.back() = '\n';
  }
  return csv;
}

}  // namespace shardscope::testing
