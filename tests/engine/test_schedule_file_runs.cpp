// SPDX-License-Identifier: GPL-3.0-or-later
// A --schedule-file meets the rest of the program: the flags it sets (--pp,
// --micro-batches, --virtual-stages: taken from the file when not given,
// refused naming the flag and the file when given otherwise), the bytes of a
// bad file echoed escaped, and the recording of a run that carries its schedule.
#include <QFile>
#include <QTemporaryDir>
#include <QTest>
#include <algorithm>
#include <string>
#include <vector>

#include "cli/cli_runner.h"
#include "core/error.h"
#include "core/json_text.h"
#include "events/recording.h"
#include "plan/pipeline_schedule.h"
#include "plan/run_plan.h"
#include "plan/schedule_file.h"
#include "train/metrics_json.h"

using namespace shardscope;

namespace {

const QString kExamples = QStringLiteral(SHARDSCOPE_FIXTURES "/../../resources/examples/schedules/");

// Whether `text` holds a byte no message should: a control character or one that is not ASCII.
bool has_raw_bytes(const std::string& text) {
  return std::any_of(text.begin(), text.end(), [](char c) {
    const auto byte = static_cast<unsigned char>(c);
    return byte < 0x20 || byte >= 0x7F;
  });
}

void write_file(const QString& path, const QByteArray& bytes) {
  QFile f(path);
  QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
  f.write(bytes);
}

}  // namespace

class TestScheduleFileRuns : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void the_file_sets_the_flags_it_schedules();
  void a_flag_that_disagrees_with_the_file_is_refused_naming_both();
  void a_config_file_that_disagrees_with_the_file_is_named_not_a_flag();
  void the_bytes_of_a_bad_file_are_escaped_in_messages();
  void a_schedule_file_is_written_back_as_the_same_rows();
  void a_recording_opens_without_its_schedule_file();
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

// An --accelerate file that sets the pipeline otherwise than the schedule file is named with its
// key, not blamed on a --pp or --micro-batches no one gave; num_processes that the file's stages
// do not divide names the file's rows as the stages.
void TestScheduleFileRuns::a_config_file_that_disagrees_with_the_file_is_named_not_a_flag() {
  QTemporaryDir dir;
  const QString file = kExamples + "1f1b_pp4_m8.csv";
  const auto accelerate = [&](const QString& name, const QByteArray& body) {
    const QString path = dir.filePath(name);
    write_file(path, "compute_environment: LOCAL_MACHINE\nmixed_precision: 'no'\nnum_machines: 1\n" + body);
    return path;
  };
  const QString megatron_pp = accelerate("pp.yaml",
                                         "distributed_type: MEGATRON_LM\nnum_processes: 4\nmegatron_lm_config:\n"
                                         "  megatron_lm_pp_degree: 2\n  megatron_lm_tp_degree: 1\n");
  const QString megatron_m =
      accelerate("m.yaml",
                 "distributed_type: MEGATRON_LM\nnum_processes: 4\nmegatron_lm_config:\n"
                 "  megatron_lm_pp_degree: 4\n  megatron_lm_tp_degree: 1\n  megatron_lm_num_micro_batches: 2\n");
  const QString six = accelerate("six.yaml", "distributed_type: MULTI_GPU\nnum_processes: 6\n");
  const struct {
    QString config, message;
  } cases[] = {
      {megatron_pp, megatron_pp +
                        ": megatron_lm_config.megatron_lm_pp_degree sets --pp 2, which disagrees with "
                        "--schedule-file " +
                        file + ", which has 4 rows (ranks)"},
      {megatron_m, megatron_m +
                       ": megatron_lm_config.megatron_lm_num_micro_batches sets --micro-batches 2, which "
                       "disagrees with --schedule-file " +
                       file + ", which runs 8 micro-batches"},
      {six, six + ": num_processes: 6 is not a multiple of the 4 pipeline stages of --schedule-file " + file +
                " (its rows)"},
  };
  for (const auto& c : cases) {
    const CliResult r = run_cli({"train", "--accelerate", c.config, "--schedule-file", file, "--steps", "1", "--batch",
                                 "8", "--seq", "16", "--threads", "1"});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains(c.message), qPrintable(r.err));
    QVERIFY2(!r.err.contains("--pp is") && !r.err.contains("of --pp"), qPrintable(r.err));
  }
  // Given on the command line, the flag is the setting: the file's value stands aside.
  const CliResult flag = run_cli({"train", "--accelerate", megatron_pp, "--schedule-file", file, "--pp", "4", "--steps",
                                  "1", "--batch", "8", "--seq", "16", "--threads", "1"});
  QVERIFY2(!flag.err.contains("disagrees"), qPrintable(flag.err));
}

// A NUL, a control byte (BEL) and invalid UTF-8 (0xff) reach a message as
// \x00, \x07 and \xff: in a schedule file's cell, in the excerpt nlohmann
// quotes ("last read: ..."), and in bounded_excerpt, which both use.
void TestScheduleFileRuns::the_bytes_of_a_bad_file_are_escaped_in_messages() {
  const char cell_bytes[] = "0F0,0F\x00\x07\xff\n1F0,1B0\n";
  const std::string bad_cell(cell_bytes, sizeof cell_bytes - 1);
  try {
    parse_schedule_csv(bad_cell, "s.csv");
    QFAIL("a cell of control bytes was read as an action");
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    QVERIFY2(what.find("rank 0, action 1 '0F\\x00\\x07\\xff' is not an action") != std::string::npos, e.what());
    QVERIFY2(!has_raw_bytes(what), e.what());
  }
  QTemporaryDir dir;
  const QString csv = dir.filePath("bad.csv"), json = dir.filePath("bad.json");
  write_file(csv, QByteArray::fromStdString(bad_cell));
  const char json_bytes[] = "[[{\"phase\": \"F\", \"micro_batch\": \xff\x07\x00}]]";
  write_file(json, QByteArray(json_bytes, sizeof json_bytes - 1));
  const CliResult cell = run_cli({"schedule", "--schedule-file", csv});
  QCOMPARE(cell.code, 2);
  QVERIFY2(cell.err.contains(QStringLiteral("'0F\\x00\\x07\\xff' is not an action")), qPrintable(cell.err));
  const CliResult not_json = run_cli({"schedule", "--schedule-file", json});
  QCOMPARE(not_json.code, 2);
  QVERIFY2(not_json.err.contains(QStringLiteral("not JSON: line 1, column 33")) &&
               not_json.err.contains(QStringLiteral("\"micro_batch\": \\xff'")),
           qPrintable(not_json.err));
  QVERIFY2(!has_raw_bytes(not_json.err.toStdString().substr(0, not_json.err.toStdString().find('\n'))),
           qPrintable(not_json.err));
  JsonTextError error;
  QVERIFY(!parse_json_text(std::string("{\"a\": \xff}", 8), error));
  QVERIFY2(error.reason.find("last read: '\"a\": \\xff'") != std::string::npos && !has_raw_bytes(error.reason),
           error.reason.c_str());
  // Printable UTF-8 stays as it is; a cut never splits a character or an escape.
  QCOMPARE(bounded_excerpt("a\x07"
                           "b\xff\xe4\xb8\xad"),
           std::string("a\\x07b\\xff\xe4\xb8\xad"));
  QCOMPARE(bounded_excerpt(std::string(5, '\x01'), 10), std::string("\\x01\\x01..."));
  QCOMPARE(bounded_excerpt("\xc2\x85\xed\xa0\x80", 60), std::string("\\xc2\\x85\\xed\\xa0\\x80"));
  QCOMPARE(bounded_excerpt("abcdef", 3), std::string("abc..."));
}

// schedule_csv_rows writes a file back as CSV rows that parse to the same
// schedule: round-robin chunks, split backwards (I and W) and a V.
void TestScheduleFileRuns::a_schedule_file_is_written_back_as_the_same_rows() {
  for (const char* name :
       {"1f1b_pp4_m8.csv", "zb_h1_pp4_m8.csv", "interleaved_1f1b_pp4_m8_v2.csv", "zb_v_pp4_m8.csv"}) {
    const ScheduleFile file = load_schedule_file((kExamples + name).toStdString());
    std::string csv;
    for (const std::string& row : schedule_csv_rows(file)) csv += row + "\n";
    const ScheduleFile again = parse_schedule_csv(csv, name);
    QVERIFY2(again.schedule == file.schedule, name);
    QVERIFY2(again.placement == file.placement && again.virtual_stages == file.virtual_stages, name);
  }
}

// A recording of a --schedule-file run carries the schedule's rows: opened
// after the file is gone, its plan has the schedule that ran. A recording
// without them (made before they were written) still opens, reading the file.
void TestScheduleFileRuns::a_recording_opens_without_its_schedule_file() {
  QTemporaryDir dir;
  const QString schedule = dir.filePath("mine.csv"), record = dir.filePath("run.ssrun");
  QVERIFY(QFile::copy(kExamples + "zb_h1_pp4_m8.csv", schedule));
  const CliResult train = run_cli({"train", "--schedule-file", schedule, "--steps", "1", "--batch", "8", "--seq", "16",
                                   "--threads", "1", "--record", record});
  QVERIFY2(train.code == 0, qPrintable(train.err));
  const ScheduleFile ran = load_schedule_file(schedule.toStdString());
  RecordingReader reader;
  reader.open(record.toStdString());
  nlohmann::json metadata = nlohmann::json::parse(reader.metadata_json());
  QVERIFY(metadata.contains("schedule_file_rows"));
  QVERIFY(QFile::remove(schedule));
  const RunPlanPtr plan = run_plan_from_metadata(metadata);
  QVERIFY(plan->pipeline_schedule() == ran.schedule);
  QCOMPARE(plan->config().schedule_file, schedule.toStdString());
  nlohmann::json old = metadata;  // as an older program wrote it
  old.erase("schedule_file_rows");
  QVERIFY_THROWS_EXCEPTION(ConfigError, run_plan_from_metadata(old));  // the file is gone
  write_file(schedule, QByteArray::fromStdString([&] {
               std::string csv;
               for (const std::string& row : schedule_csv_rows(ran)) csv += row + "\n";
               return csv;
             }()));
  QVERIFY(run_plan_from_metadata(old)->pipeline_schedule() == ran.schedule);
  nlohmann::json damaged = metadata;
  damaged["schedule_file_rows"] = 3;
  try {
    run_plan_from_metadata(damaged);
    QFAIL("rows that are not a list were taken");
  } catch (const ConfigError& e) {
    QVERIFY2(std::string(e.what()).find("key \"schedule_file_rows\"") != std::string::npos, e.what());
  }
}

QTEST_GUILESS_MAIN(TestScheduleFileRuns)
#include "test_schedule_file_runs.moc"
