// SPDX-License-Identifier: GPL-3.0-or-later
// A --schedule-file meets the rest of the program: the flags it sets (--pp,
// --micro-batches, --virtual-stages: taken from the file when not given,
// refused naming the flag and the file when given otherwise), the bytes of a
// bad file echoed escaped, and the recording of a run that carries its schedule.
#include <QFile>
#include <QTemporaryDir>
#include <QTest>
#include <string>

#include "cli/cli_runner.h"
#include "core/error.h"
#include "plan/pipeline_schedule.h"
#include "plan/schedule_file.h"

using namespace shardscope;

namespace {

const QString kExamples = QStringLiteral(SHARDSCOPE_FIXTURES "/../../resources/examples/schedules/");

}  // namespace

class TestScheduleFileRuns : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void the_file_sets_the_flags_it_schedules();
  void a_flag_that_disagrees_with_the_file_is_refused_naming_both();
};

// Left out, --pp, --micro-batches and --virtual-stages are the file's: train
// runs the 4 stages and 8 micro-batches of 1f1b_pp4_m8.csv (it used to
// refuse, blaming a --pp 1 no one gave), and schedule prints them.
void TestScheduleFileRuns::the_file_sets_the_flags_it_schedules() {
  const CliResult train = run_cli({"train", "--schedule-file", kExamples + "1f1b_pp4_m8.csv", "--steps", "1", "--batch",
                                   "8", "--seq", "16", "--threads", "1"});
  QVERIFY2(train.code == 0, qPrintable(train.err));
  QVERIFY2(train.out.contains("x pp 4 ") && train.out.contains("8 micro-batches"), qPrintable(train.out));
  const CliResult chunks = run_cli({"train", "--schedule-file", kExamples + "interleaved_1f1b_pp4_m8_v2.csv", "--model",
                                    SHARDSCOPE_FIXTURES "/gpt_tiny_8_layers/config.json", "--steps", "1", "--batch",
                                    "8", "--seq", "16", "--threads", "1"});  // 8 layers: 4 stages x 2 chunks
  QVERIFY2(chunks.code == 0, qPrintable(chunks.err));
  QVERIFY2(chunks.out.contains("x pp 4 ") && chunks.out.contains("8 micro-batches"), qPrintable(chunks.out));
  const CliResult agreeing =
      run_cli({"schedule", "--schedule-file", kExamples + "1f1b_pp4_m8.csv", "--pp", "4", "--micro-batches", "8"});
  QVERIFY2(agreeing.code == 0 && agreeing.out.contains("p=4, m=8, v=1"), qPrintable(agreeing.err));
}

// Given and different, a flag is refused, naming it and the file with the file's value, in both commands.
void TestScheduleFileRuns::a_flag_that_disagrees_with_the_file_is_refused_naming_both() {
  const QString file = kExamples + "1f1b_pp4_m8.csv", chunked = kExamples + "interleaved_1f1b_pp4_m8_v2.csv";
  const struct {
    QStringList args;
    QString message;
  } cases[] = {
      {{"schedule", "--schedule-file", file, "--pp", "2"},
       "--pp 2 disagrees with --schedule-file " + file + ", which has 4 rows (ranks)"},
      {{"schedule", "--micro-batches", "3", "--schedule-file", file},
       "--micro-batches 3 disagrees with --schedule-file " + file + ", which runs 8 micro-batches"},
      {{"train", "--schedule-file", file, "--pp=2", "--steps", "1"},
       "--pp 2 disagrees with --schedule-file " + file + ", which has 4 rows (ranks)"},
      {{"train", "--schedule-file", file, "--micro-batches", "4", "--steps", "1"},
       "--micro-batches 4 disagrees with --schedule-file " + file + ", which runs 8 micro-batches"},
      {{"train", "--schedule-file", chunked, "--virtual-stages", "4", "--steps", "1"},
       "--virtual-stages 4 disagrees with --schedule-file " + chunked + ", which puts 2 model chunks on each rank"},
  };
  for (const auto& c : cases) {
    const CliResult r = run_cli(c.args);
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains(c.message) && r.err.contains("leave"), qPrintable(r.err));
  }
}

QTEST_GUILESS_MAIN(TestScheduleFileRuns)
#include "test_schedule_file_runs.moc"
