// SPDX-License-Identifier: GPL-3.0-or-later
// One real Trainer step against the estimator (ledger_check.h), for a preset or a
// model's config.json: shared by test_estimate_ledger and test_estimate_ledger_zero_bubble.
#pragma once

#include <QString>
#include <QTest>
#include <string>

#include "engine/ledger_check.h"
#include "estimate/memory_model.h"
#include "io/hf_model.h"
#include "train/trainer.h"

namespace shardscope::testing {
// One optimizer step of the real Trainer; every rank's ledger peak, category by
// category, must equal the prediction. A failure names the side that moved.
inline void check_ledger(const ModelShape& shape, const EstimateSettings& s) {
  const std::string gap = engine_gap(shape, s);
  if (!gap.empty()) QSKIP(qPrintable(QString::fromStdString("the engine cannot run this yet: " + gap)));
  const MemoryEstimate predicted = estimate_memory(shape, s);
  QVERIFY(predicted.engine_exact);
  RunConfig run = to_run_config(shape, s);
  run.threads = 2;
  Trainer trainer(run);
  trainer.step();
  const QString mismatch = ledger_mismatch(predicted, trainer);
  QVERIFY2(mismatch.isEmpty(), qPrintable(mismatch));
}

inline void check_ledger(const QString& model, const EstimateSettings& s) {
  check_ledger(model_shape_from_config(find_model_preset(qPrintable(model)), qPrintable(model)), s);
}

// A model the engine trains from its config.json (`train --model DIR/config.json`),
// named by that path as a run names it.
inline ModelShape config_file_shape(const std::string& dir) {
  return model_shape_from_config(read_hf_model_config(dir), dir + "/config.json");
}
}  // namespace shardscope::testing
