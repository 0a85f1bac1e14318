// SPDX-License-Identifier: GPL-3.0-or-later
// A rank out of memory, on the CPU: RunConfig::test_device_capacity puts every
// rank on a small pretend device behind the caching allocator. The error names
// the rank, the category, the bytes and what the estimator predicted for that
// rank; a failure inside a step stops every rank promptly.
#include <QElapsedTimer>
#include <QTest>
#undef emit  // Qt's keyword macro would eat EventSink::emit

#include <string>

#include "collecting_sink.h"
#include "core/error.h"
#include "estimate/formula_text.h"
#include "estimate/memory_model.h"
#include "estimate/model_shape.h"
#include "model/model_config.h"
#include "train/trainer.h"

using namespace shardscope;
using shardscope::test::CollectingSink;

namespace {

RunConfig small_run() {
  RunConfig c;
  c.model = "gpt-tiny";
  c.steps = 3;
  c.batch = 8;
  c.seq = 32;
  c.threads = 2;
  c.layout[Axis::dp] = 2;
  return c;
}

MemoryEstimate prediction(const RunConfig& c) {
  return estimate_memory(model_shape_from_config(find_model_preset(c.model), c.model), settings_for_run(c));
}

// What the trainer adds to an out-of-memory error for `rank` and `category`.
std::string predicted_text(const RunConfig& c, int rank, MemoryCategory category) {
  const RankMemory& r = prediction(c).ranks.at(static_cast<std::size_t>(rank));
  return "the estimator predicted " + binary_bytes(r.total()) + " for rank " + std::to_string(rank) + " (" +
         std::string(memory_category_name(category)) + " " + binary_bytes(r.bytes[category]) + ")";
}

bool constructs(RunConfig c, std::int64_t capacity) {
  c.test_device_capacity = capacity;
  try {
    Trainer trainer(c);
    return true;
  } catch (const OutOfMemory&) {
    return false;
  }
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

class TestOutOfMemory : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void construction_names_rank_category_and_prediction();
  void step_failure_names_the_prediction_and_stops_every_rank();
  void memory_samples_carry_the_devices_figures();
};

void TestOutOfMemory::construction_names_rank_category_and_prediction() {
  RunConfig c = small_run();
  c.test_device_capacity = 64 * 1024;  // the first parameter buffer does not fit
  try {
    Trainer trainer(c);
    QFAIL("a trainer was built on a 64 KiB device");
  } catch (const OutOfMemory& e) {
    const std::string m = e.what();
    const std::string category(memory_category_name(e.category()));
    QVERIFY2(contains(m, "rank 0: out of test device memory"), m.c_str());
    QVERIFY2(contains(m, std::to_string(e.bytes()) + " bytes of " + category), m.c_str());
    QVERIFY2(contains(m, predicted_text(c, 0, e.category())), m.c_str());
  }
}

void TestOutOfMemory::step_failure_names_the_prediction_and_stops_every_rank() {
  // The smallest pretend device (to 64 KiB) the model states fit on: the step's
  // activations then cannot fit.
  const RunConfig c = small_run();
  std::int64_t fails = 0, fits = std::int64_t{256} << 20;
  QVERIFY(constructs(c, fits));
  while (fits - fails > 64 * 1024) {
    const std::int64_t mid = (fails + fits) / 2;
    (constructs(c, mid) ? fits : fails) = mid;
  }
  RunConfig tight = c;
  tight.test_device_capacity = fits;
  CollectingSink sink;
  Trainer trainer(tight, &sink);
  QElapsedTimer timer;
  timer.start();
  try {
    trainer.step();
    QFAIL("a step fitted on the smallest device its model states fit on");
  } catch (const RankFailure& e) {
    const std::string m = e.what();
    QVERIFY2(contains(m, "out of test device memory: "), m.c_str());
    QVERIFY2(contains(m, "all 2 ranks stopped"), m.c_str());
    // The rank and category that failed, and the prediction for exactly those.
    const int rank = contains(m, "rank 0 failed") ? 0 : 1;
    QVERIFY2(contains(m, "rank " + std::to_string(rank) + " failed"), m.c_str());
    bool named = false;
    for (MemoryCategory category : kAllMemoryCategories) {
      if (!contains(m, " bytes of " + std::string(memory_category_name(category)) + " asked for")) continue;
      named = true;
      QVERIFY2(contains(m, predicted_text(c, rank, category)), m.c_str());
    }
    QVERIFY2(named, m.c_str());
  }
  QVERIFY2(timer.elapsed() < 5000, qPrintable(QString("stopping took %1 ms").arg(timer.elapsed())));
  bool error_event = false;
  for (const Event& e : sink.events()) error_event |= e.kind == EventKind::error;
  QVERIFY(error_event);
  QVERIFY_THROWS_EXCEPTION(RankFailure, trainer.step());  // a failed run stays stopped
}

void TestOutOfMemory::memory_samples_carry_the_devices_figures() {
  RunConfig c = small_run();
  c.steps = 2;
  CollectingSink host_sink;
  {
    Trainer host(c, &host_sink);  // host memory: no device figures
    host.step();
  }
  for (const Event& e : host_sink.events())
    if (e.kind == EventKind::memory_sample) QCOMPARE(e.device, -1);

  c.test_device_capacity = std::int64_t{256} << 20;
  CollectingSink sink;
  Trainer trainer(c, &sink);
  trainer.step();
  trainer.step();
  int samples = 0;
  std::int64_t reserved_after_first[2] = {-1, -1};
  for (const Event& e : sink.events()) {
    if (e.kind != EventKind::memory_sample) continue;
    ++samples;
    std::int64_t ledger = 0;
    for (std::int64_t bytes : e.memory) ledger += bytes;
    QCOMPARE(e.device, 0);
    QCOMPARE(e.device_total_bytes, c.test_device_capacity);
    QVERIFY(e.device_reserved_bytes >= ledger);              // blocks are rounded up, and cached
    QCOMPARE(e.device_used_bytes, e.device_reserved_bytes);  // the pretend device holds only this rank's blocks
    auto& first = reserved_after_first[e.rank];
    if (first < 0)
      first = e.device_reserved_bytes;
    else
      QCOMPARE(e.device_reserved_bytes, first);  // step 2 reused step 1's blocks
  }
  QCOMPARE(samples, 4);
}

QTEST_GUILESS_MAIN(TestOutOfMemory)
#include "test_out_of_memory.moc"
