// SPDX-License-Identifier: GPL-3.0-or-later
// Every file shardscope-cli writes (issue 19): an output never clobbers an
// input (the text, a config file, a file of a model or checkpoint folder) or
// another output; a refused run writes nothing; only a regular file
// (or a new path) is replaced; a write error ends the run with exit 2 and a
// message naming the flag, the file and the OS error, never a crash; Ctrl-C
// keeps complete outputs and kill -9 leaves an exportable temporary.
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QTest>
#include <filesystem>
#include <map>
#include <memory>

#include "cli/cli_runner.h"
#undef emit  // Qt's keyword macro would eat EventSink::emit

#include "events/recording.h"

namespace fs = std::filesystem;

namespace {

// Runs the CLI in `cwd`; `file_size_limit` > 0 sets RLIMIT_FSIZE in the child
// (as `ulimit -f` would), SIGXFSZ left at its default: the CLI must ignore it.
CliResult run_in(const QString& cwd, const QStringList& args, rlim_t file_size_limit = 0, int timeout_ms = 300000) {
  QProcess p;
  p.setWorkingDirectory(cwd);
  if (file_size_limit > 0)
    p.setChildProcessModifier([file_size_limit] {
      const rlimit limit{file_size_limit, file_size_limit};
      ::setrlimit(RLIMIT_FSIZE, &limit);
    });
  p.start(SHARDSCOPE_CLI, args);
  if (!p.waitForFinished(timeout_ms)) {
    p.kill();
    p.waitForFinished();
    return {-1, {}, "timed out"};
  }
  return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -2, QString::fromUtf8(p.readAllStandardOutput()),
          QString::fromUtf8(p.readAllStandardError())};
}

void write_file(const QString& path, const QByteArray& bytes) {
  QFile f(path);
  if (f.open(QIODevice::WriteOnly | QIODevice::Truncate)) f.write(bytes);
}

QByteArray read_file(const QString& path) {
  QFile f(path);
  return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray("<unreadable>");
}

// Every entry under `dir`: its kind and, for a regular file, its bytes; for a link, its target.
std::map<std::string, std::string> snapshot(const QString& dir) {
  std::map<std::string, std::string> entries;
  for (const auto& e : fs::recursive_directory_iterator(dir.toStdString())) {
    const std::string name = fs::relative(e.path(), dir.toStdString()).string();
    const auto status = e.symlink_status();
    if (fs::is_symlink(status))
      entries[name] = "link to " + fs::read_symlink(e.path()).string();
    else if (fs::is_regular_file(status))
      entries[name] = "file " + read_file(QString::fromStdString(e.path().string())).toStdString();
    else
      entries[name] = "kind " + std::to_string(static_cast<int>(status.type()));
  }
  return entries;
}

// A corpus long enough for --seq 32 (10% of it holds a window).
QByteArray corpus() {
  QByteArray text;
  for (int i = 0; text.size() < 6000; ++i)
    text += "Line " + QByteArray::number(i) + ": the quick brown fox jumps over the lazy dog.\n";
  return text;
}

void write_recording(const QString& path) {
  shardscope::RecordingWriter writer(path.toStdString(), R"({"model":"gpt-tiny"})");
  shardscope::Event e;
  e.kind = shardscope::EventKind::compute_span;
  e.start_ns = 1'000'000;
  e.end_ns = 3'000'000;
  writer.emit(e);
  writer.close();
}

const QStringList kShortRun = {"train", "--steps", "1", "--batch", "4", "--seq", "32"};

}  // namespace

class TestOutputFiles : public QObject {
  Q_OBJECT

  QString at(const QString& name) const { return dir_->path() + "/" + name; }
  // @/ in an argument or a message: this test's directory; @DEV@: the device of make_device().
  QString placed(QString text) const { return text.replace("@/", dir_->path() + "/").replace("@DEV@", device_); }
  // A character device to offer as an output: /dev/full, or as root (who could
  // replace /dev/full were the check ever lost) a node of its own with /dev/full's numbers.
  bool make_device();
  void build_fixture();
  void expect_refused(const QStringList& args, int code, const QString& message);

 private Q_SLOTS:
  void init() {
    dir_ = std::make_unique<QTemporaryDir>();
    QVERIFY(dir_->isValid());
    write_file(at("c.txt"), corpus());
  }
  void item1_recording_write_error_stops_the_run_cleanly();
  void item3a_metrics_out_never_truncates_the_corpus();
  void item3b_record_never_truncates_the_corpus();
  void item3c_refused_run_writes_nothing();
  void item3d_export_temporary_never_hits_an_existing_file();
  void item3e_export_never_replaces_a_link_or_device();
  void item3f_record_and_metrics_out_may_not_share_a_file();
  void item5_metrics_write_errors_end_the_run();
  void fifo_inputs_are_refused_not_waited_on();
  void interrupted_run_keeps_complete_outputs_data();
  void interrupted_run_keeps_complete_outputs();
  void killed_run_leaves_an_exportable_temporary();
  void failed_rank_keeps_what_was_written();
  void successful_run_replaces_outputs_and_leaves_no_temporaries();
  void bad_outputs_are_refused_data();
  void bad_outputs_are_refused();

 private:
  std::unique_ptr<QTemporaryDir> dir_;
  QString device_;
};

bool TestOutputFiles::make_device() {
  device_ = "/dev/full";
  if (::geteuid() != 0) return true;
  device_ = at("device");
  return ::mknod(device_.toUtf8().constData(), S_IFCHR | 0600, ::makedev(1, 7)) == 0;
}

// Runs `args`; expects the exit code and the message on stderr, and every file
// of the directory as it was: nothing truncated, replaced, or left behind.
void TestOutputFiles::expect_refused(const QStringList& args, int code, const QString& message) {
  const auto before = snapshot(dir_->path());
  const CliResult r = run_in(dir_->path(), args, 0, 30000);  // a refusal is at once; a FIFO opened would block
  QVERIFY2(r.code == code, qPrintable(QString("exit %1, stderr: %2").arg(r.code).arg(r.err)));
  QVERIFY2(r.err.contains(message), qPrintable(args.join(' ') + "\n -> stderr: " + r.err + "\n expected: " + message));
  QVERIFY2(snapshot(dir_->path()) == before, qPrintable("the directory changed: " + args.join(' ')));
}

void TestOutputFiles::item1_recording_write_error_stops_the_run_cleanly() {
  write_file(at("r.ssrun"), "an older recording");
  const auto before = snapshot(dir_->path());
  const CliResult r = run_in(dir_->path(),
                             {"train", "--model", "gpt-tiny", "--steps", "30", "--batch", "8", "--seq", "64", "--dp",
                              "2", "--pp", "2", "--micro-batches", "2", "--eval-every", "0", "--record", "r.ssrun"},
                             64 * 1024);
  QVERIFY2(r.code == 2, qPrintable(QString("exit %1 (-2: a crash), stderr: %2").arg(r.code).arg(r.err)));
  QVERIFY2(r.err.contains("--record: writing 'r.ssrun' failed: File too large; 'r.ssrun' was left as it was; "
                          "the run stopped after step"),
           qPrintable(r.err));
  QVERIFY(!r.err.contains("terminate"));
  QVERIFY2(snapshot(dir_->path()) == before, "the old recording was replaced or a temporary was left");
}

void TestOutputFiles::item3a_metrics_out_never_truncates_the_corpus() {
  expect_refused(kShortRun + QStringList{"--data", "c.txt", "--metrics-out", "c.txt"}, 2,
                 "--metrics-out: will not write 'c.txt': it is the same file as --data 'c.txt', which it would "
                 "destroy; choose another file");
}

void TestOutputFiles::item3b_record_never_truncates_the_corpus() {
  expect_refused(kShortRun + QStringList{"--data", "c.txt", "--record", "c.txt"}, 2,
                 "--record: will not write 'c.txt': it is the same file as --data 'c.txt'");
}

void TestOutputFiles::item3c_refused_run_writes_nothing() {
  write_file(at("existing.ssrun"), "keep me");
  expect_refused(kShortRun + QStringList{"--data", "missing.txt", "--record", "existing.ssrun"}, 2,
                 "--data: cannot open 'missing.txt'");
  expect_refused(kShortRun + QStringList{"--data", "missing.txt", "--record", "new.ssrun"}, 2, "missing.txt");
  QVERIFY(!QFile::exists(at("new.ssrun")));  // no stub
}

void TestOutputFiles::item3d_export_temporary_never_hits_an_existing_file() {
  write_recording(at("x.tmp"));
  write_file(at("y.tmp"), "precious, and named like a temporary");
  write_file(at("x.part"), "also precious");
  const QByteArray recording = read_file(at("x.tmp"));
  CliResult r = run_in(dir_->path(), {"export", "--chrome-trace", "x", "x.tmp"});
  QVERIFY2(r.code == 0, qPrintable(r.err));
  QCOMPARE(read_file(at("x.tmp")), recording);
  QVERIFY(QJsonDocument::fromJson(read_file(at("x"))).object().contains("traceEvents"));
  r = run_in(dir_->path(), {"export", "--chrome-trace", "y", "x.tmp"});
  QVERIFY2(r.code == 0, qPrintable(r.err));
  QCOMPARE(read_file(at("y.tmp")), QByteArray("precious, and named like a temporary"));
  QCOMPARE(read_file(at("x.part")), QByteArray("also precious"));
  QCOMPARE(QDir(dir_->path()).entryList(QDir::Files, QDir::Name),
           (QStringList{"c.txt", "x", "x.part", "x.tmp", "y", "y.tmp"}));
}

void TestOutputFiles::item3e_export_never_replaces_a_link_or_device() {
  write_recording(at("run.ssrun"));
  write_file(at("target.json"), "the link's target");
  QVERIFY(QFile::link(at("target.json"), at("link.json")));
  QCOMPARE(::mkfifo(at("node").toUtf8().constData(), 0600), 0);
  expect_refused({"export", "--chrome-trace", "link.json", "run.ssrun"}, 2,
                 "--chrome-trace: cannot replace 'link.json': it is a symbolic link");
  expect_refused({"export", "--chrome-trace", "node", "run.ssrun"}, 2,
                 "--chrome-trace: cannot replace 'node': it is a FIFO (named pipe); only a regular file is replaced");
  if (!make_device()) QSKIP("no device node could be made here (mknod refused)");
  expect_refused({"export", "--chrome-trace", device_, "run.ssrun"}, 2,
                 placed("--chrome-trace: cannot replace '@DEV@': it is a character device"));
  struct stat st {};
  QCOMPARE(::stat(device_.toUtf8().constData(), &st), 0);
  QVERIFY(S_ISCHR(st.st_mode));
}

void TestOutputFiles::item3f_record_and_metrics_out_may_not_share_a_file() {
  expect_refused(kShortRun + QStringList{"--data", "c.txt", "--record", "f", "--metrics-out", "f"}, 2,
                 "--metrics-out: will not write 'f': it is the same file as --record; give each output its own file");
}

void TestOutputFiles::item5_metrics_write_errors_end_the_run() {
  if (make_device())
    expect_refused(kShortRun + QStringList{"--metrics-out", device_}, 2,
                   placed("--metrics-out: cannot replace '@DEV@': it is a character device"));
  write_file(at("m.jsonl"), "older metrics\n");
  const auto before = snapshot(dir_->path());
  const CliResult r =
      run_in(dir_->path(), {"train", "--steps", "60", "--batch", "4", "--seq", "32", "--metrics-out", "m.jsonl"}, 4096);
  QVERIFY2(r.code == 2, qPrintable(QString("exit %1, stderr: %2").arg(r.code).arg(r.err)));
  QVERIFY2(r.err.contains("--metrics-out: writing 'm.jsonl' failed: File too large; 'm.jsonl' was left as it was; "
                          "the run stopped after step"),
           qPrintable(r.err));
  QVERIFY2(!r.out.contains("step     60/60"), qPrintable(r.out));
  QVERIFY(snapshot(dir_->path()) == before);
}

void TestOutputFiles::fifo_inputs_are_refused_not_waited_on() {
  QCOMPARE(::mkfifo(at("fifo").toUtf8().constData(), 0600), 0);
  QElapsedTimer timer;
  timer.start();
  expect_refused(kShortRun + QStringList{"--data", "fifo", "--metrics-out", "m.jsonl"}, 2,
                 "--data: cannot read 'fifo': it is a FIFO (named pipe), not a regular file");
  expect_refused({"export", "--chrome-trace", "t.json", "fifo"}, 2,
                 "RUN.ssrun: cannot read 'fifo': it is a FIFO (named pipe), not a regular file");
  QVERIFY(timer.elapsed() < 60000);
}

void TestOutputFiles::interrupted_run_keeps_complete_outputs_data() {
  QTest::addColumn<int>("signal");
  QTest::newRow("Ctrl-C") << SIGINT;
  QTest::newRow("SIGTERM") << SIGTERM;
}

// Ctrl-C or SIGTERM between steps: exit 128 + the signal, every finished step in
// the metrics, a recording that reads to its end, no temporary left.
void TestOutputFiles::interrupted_run_keeps_complete_outputs() {
  QFETCH(int, signal);
  QProcess p;
  p.setWorkingDirectory(dir_->path());
  p.start(SHARDSCOPE_CLI, {"train", "--steps", "100000", "--batch", "4", "--seq", "32", "--log-every", "1",
                           "--metrics-out", "m.jsonl", "--record", "r.ssrun"});
  QByteArray out;
  QTRY_VERIFY_WITH_TIMEOUT((out += p.readAllStandardOutput()).contains("step      3/"), 120000);
  ::kill(static_cast<pid_t>(p.processId()), signal);
  QVERIFY(p.waitForFinished(60000));
  out += p.readAllStandardOutput();
  QCOMPARE(p.exitStatus(), QProcess::NormalExit);
  QCOMPARE(p.exitCode(), 128 + signal);
  const QRegularExpressionMatch done = QRegularExpression("done: (\\d+) steps").match(QString::fromUtf8(out));
  QVERIFY2(done.hasMatch(), out.constData());
  const QList<QByteArray> lines = read_file(at("m.jsonl")).trimmed().split('\n');
  QCOMPARE(lines.size(), done.captured(1).toInt());
  for (int i = 0; i < lines.size(); ++i) QCOMPARE(QJsonDocument::fromJson(lines[i]).object()["step"].toInt(), i + 1);
  shardscope::RecordingReader reader;
  reader.open(at("r.ssrun").toStdString());
  QVERIFY(!reader.read_all().empty());
  QCOMPARE(reader.trailing_bytes(), std::uint64_t{0});
  QCOMPARE(QDir(dir_->path()).entryList(QDir::Files, QDir::Name), (QStringList{"c.txt", "m.jsonl", "r.ssrun"}));
}

// kill -9 mid-run: the recording's temporary (printed as the run starts) stays, and it exports.
void TestOutputFiles::killed_run_leaves_an_exportable_temporary() {
  QProcess p;
  p.setWorkingDirectory(dir_->path());
  p.start(SHARDSCOPE_CLI,
          {"train", "--steps", "100000", "--batch", "4", "--seq", "32", "--log-every", "1", "--record", "k.ssrun"});
  QByteArray out;
  QTRY_VERIFY_WITH_TIMEOUT((out += p.readAllStandardOutput()).contains("step      3/"), 120000);
  p.kill();  // SIGKILL
  QVERIFY(p.waitForFinished(60000));
  const QRegularExpressionMatch m =
      QRegularExpression("recording: writing (\\S+) \\(renamed to k.ssrun when the run ends\\)")
          .match(QString::fromUtf8(out));
  QVERIFY2(m.hasMatch(), out.constData());
  const QString temp = m.captured(1);
  QVERIFY2(temp.startsWith("k.ssrun.") && temp.endsWith(".part"), qPrintable(temp));
  QVERIFY(QFile::exists(at(temp)));
  QVERIFY(!QFile::exists(at("k.ssrun")));
  const CliResult r = run_in(dir_->path(), {"export", "--chrome-trace", "k.json", temp});
  QVERIFY2(r.code == 0, qPrintable(r.err));
  QVERIFY(QJsonDocument::fromJson(read_file(at("k.json"))).object().contains("traceEvents"));
}

// A rank that throws: exit 1, and the metrics and recording so far are kept.
void TestOutputFiles::failed_rank_keeps_what_was_written() {
  const CliResult r =
      run_in(dir_->path(), {"train", "--steps", "5", "--batch", "8", "--seq", "32", "--dp", "2", "--inject-failure",
                            "1:3", "--metrics-out", "m.jsonl", "--record", "r.ssrun"});
  QVERIFY2(r.code == 1, qPrintable(r.err));
  QCOMPARE(read_file(at("m.jsonl")).count('\n'), 2);
  shardscope::RecordingReader reader;
  reader.open(at("r.ssrun").toStdString());
  bool error_recorded = false;
  for (const auto& e : reader.read_all()) error_recorded |= e.kind == shardscope::EventKind::error;
  QVERIFY(error_recorded);
  QCOMPARE(QDir(dir_->path()).entryList(QDir::Files, QDir::Name), (QStringList{"c.txt", "m.jsonl", "r.ssrun"}));
}

void TestOutputFiles::successful_run_replaces_outputs_and_leaves_no_temporaries() {
  write_file(at("m.jsonl"), "old\n");
  write_file(at("r.ssrun"), "old");
  const CliResult r = run_in(dir_->path(), kShortRun + QStringList{"--steps", "2", "--data", "c.txt", "--metrics-out",
                                                                   "m.jsonl", "--record", "r.ssrun"});
  QVERIFY2(r.code == 0, qPrintable(r.err));
  QCOMPARE(read_file(at("m.jsonl")).count('\n'), 2);
  shardscope::RecordingReader reader;
  reader.open(at("r.ssrun").toStdString());
  QVERIFY(!reader.read_all().empty());
  QCOMPARE(QDir(dir_->path()).entryList(QDir::Files, QDir::Name), (QStringList{"c.txt", "m.jsonl", "r.ssrun"}));
}

// The table's files: the corpus and its links, a recording and its links, a
// directory, a FIFO, dangling and other links, files that must survive.
void TestOutputFiles::build_fixture() {
  const auto link = [&](const char* target, const char* name) { QVERIFY(QFile::link(at(target), at(name))); };
  write_file(at("other.txt"), "an unrelated file");
  write_file(at("empty.txt"), "");
  write_file(at("small.txt"), "too small to train on");
  write_file(at("existing.ssrun"), "keep me");
  write_file(at("existing.jsonl"), "keep me too\n");
  write_recording(at("in.ssrun"));
  QVERIFY(::link(at("c.txt").toUtf8().constData(), at("hard.txt").toUtf8().constData()) == 0);
  QVERIFY(::link(at("in.ssrun").toUtf8().constData(), at("in_hard.ssrun").toUtf8().constData()) == 0);
  link("c.txt", "soft.txt");
  link("other.txt", "soft_other.txt");
  link("in.ssrun", "in_soft.ssrun");
  QVERIFY(QFile::link(at("nowhere.txt"), at("dangling")));
  QVERIFY(QDir(dir_->path()).mkdir("dir"));
  QVERIFY(QDir(dir_->path()).mkdir("ro"));
  QCOMPARE(::chmod(at("ro").toUtf8().constData(), 0555), 0);
  QCOMPARE(::mkfifo(at("fifo").toUtf8().constData(), 0600), 0);
  // Inputs that are folders or config files: a Hugging Face model, a checkpoint (what the output check reads of it).
  QVERIFY(QDir(dir_->path()).mkpath("model") && QDir(dir_->path()).mkpath("ckpt/step-000001"));
  for (const char* file : {"config.json", "model.safetensors"})
    QVERIFY(QFile::copy(QString(SHARDSCOPE_FIXTURES) + "/hf/gpt2_tiny/" + file, at("model/") + file));
  write_file(at("ckpt/step-000001/manifest.json"), "{}");
  write_file(at("ckpt/step-000001/rank-0.safetensors"), "a rank's state");
  write_file(at("ds.json"), "{\"train_batch_size\": 4}");
  write_file(at("acc.yaml"), "distributed_type: NO\n");
}

void TestOutputFiles::bad_outputs_are_refused_data() {
  QTest::addColumn<QStringList>("args");  // after `train` flags or as they are
  QTest::addColumn<QString>("message");
  const auto train = [](QStringList more) {
    return QStringList{"train", "--steps", "1", "--batch", "4", "--seq", "32", "--data", "@/c.txt"} + more;
  };
  const auto refused = [](const char* flag, const char* path, const char* why) {
    return QString("%1: cannot replace '%2': it is %3").arg(flag, path, why);
  };
  const QString same_data = "it is the same file as --data '@/c.txt', which it would destroy";
  // Outputs that are the training text under another name.
  QTest::newRow("metrics = data") << train({"--metrics-out", "@/c.txt"}) << same_data;
  QTest::newRow("record = data") << train({"--record", "@/c.txt"}) << same_data;
  QTest::newRow("metrics = hard link of data") << train({"--metrics-out", "@/hard.txt"}) << same_data;
  QTest::newRow("record = hard link of data") << train({"--record", "@/hard.txt"}) << same_data;
  QTest::newRow("metrics = symlink to data") << train({"--metrics-out", "@/soft.txt"}) << same_data;
  QTest::newRow("record = symlink to data") << train({"--record", "@/soft.txt"}) << same_data;
  QTest::newRow("metrics = ./data") << train({"--metrics-out", "./c.txt"}) << "--metrics-out: will not write './c.txt'";
  QTest::newRow("record = dir/../data") << train({"--record", "@/dir/../c.txt"}) << same_data;
  QTest::newRow("relative data, absolute metrics")
      << QStringList{"train", "--steps", "1", "--data", "c.txt", "--metrics-out", "@/c.txt"}
      << "it is the same file as --data 'c.txt'";
  // Outputs that are files of the other inputs: the model, the checkpoint, the config files.
  QTest::newRow("metrics = --init-from weights")
      << train({"--init-from", "@/model", "--metrics-out", "@/model/model.safetensors"})
      << "it is the same file as --init-from '@/model/model.safetensors'";
  QTest::newRow("record = --init-from config") << train({"--init-from", "@/model", "--record", "@/model/config.json"})
                                               << "it is the same file as --init-from '@/model/config.json'";
  QTest::newRow("metrics = --resume manifest")
      << train({"--resume", "@/ckpt/step-000001", "--metrics-out", "@/ckpt/step-000001/manifest.json"})
      << "it is the same file as --resume '@/ckpt/step-000001/manifest.json'";
  QTest::newRow("record = rank file of --resume root")
      << train({"--resume", "@/ckpt", "--record", "@/ckpt/step-000001/rank-0.safetensors"})
      << "it is the same file as --resume '@/ckpt/step-000001/rank-0.safetensors'";
  QTest::newRow("metrics = --deepspeed") << train({"--deepspeed", "@/ds.json", "--metrics-out", "@/ds.json"})
                                         << "it is the same file as --deepspeed '@/ds.json'";
  QTest::newRow("record = --accelerate") << train({"--accelerate", "@/acc.yaml", "--record", "@/acc.yaml"})
                                         << "it is the same file as --accelerate '@/acc.yaml'";
  QTest::newRow("hidden-states out = model config")
      << QStringList{"hidden-states", "--model", "@/model", "--text", "x", "--out", "@/model/config.json"}
      << "--out: will not write '@/model/config.json': it is the same file as --model";
  // Two outputs, one file.
  const QString same_record = "--metrics-out: will not write '@/%1': it is the same file as --record";
  QTest::newRow("record = metrics") << train({"--record", "@/f", "--metrics-out", "@/f"}) << same_record.arg("f");
  QTest::newRow("record = ../metrics") << train({"--record", "@/f", "--metrics-out", "@/dir/../f"})
                                       << "--metrics-out: will not write '@/dir/../f': it is the same file as --record";
  QTest::newRow("record = metrics, existing")
      << train({"--record", "@/existing.ssrun", "--metrics-out", "@/existing.ssrun"})
      << same_record.arg("existing.ssrun");
  QTest::newRow("record = hard link of metrics")
      << train({"--record", "@/in.ssrun", "--metrics-out", "@/in_hard.ssrun"}) << same_record.arg("in_hard.ssrun");
  // What is not a regular file.
  QTest::newRow("metrics = directory") << train({"--metrics-out", "@/dir"})
                                       << refused("--metrics-out", "@/dir", "a directory");
  QTest::newRow("record = directory") << train({"--record", "@/dir"}) << refused("--record", "@/dir", "a directory");
  QTest::newRow("metrics = FIFO") << train({"--metrics-out", "@/fifo"}) << refused("--metrics-out", "@/fifo", "a FIFO");
  QTest::newRow("record = FIFO") << train({"--record", "@/fifo"}) << refused("--record", "@/fifo", "a FIFO");
  QTest::newRow("metrics = device") << train({"--metrics-out", "@DEV@"})
                                    << refused("--metrics-out", "@DEV@", "a character device");
  QTest::newRow("record = device") << train({"--record", "@DEV@"})
                                   << refused("--record", "@DEV@", "a character device");
  QTest::newRow("metrics = dangling link")
      << train({"--metrics-out", "@/dangling"})
      << refused("--metrics-out", "@/dangling", "a symbolic link (to '@/nowhere.txt')");
  QTest::newRow("record = link to another file")
      << train({"--record", "@/soft_other.txt"}) << refused("--record", "@/soft_other.txt", "a symbolic link");
  QTest::newRow("metrics in a missing directory")
      << train({"--metrics-out", "@/nodir/m.jsonl"})
      << "--metrics-out: cannot write '@/nodir/m.jsonl': the directory '@/nodir' does not exist";
  QTest::newRow("record in a missing directory")
      << train({"--record", "@/nodir/r.ssrun"}) << "the directory '@/nodir' does not exist";
  QTest::newRow("metrics under a file") << train({"--metrics-out", "@/other.txt/m.jsonl"})
                                        << "--metrics-out: cannot write '@/other.txt/m.jsonl': Not a directory";
  QTest::newRow("metrics as a directory name") << train({"--metrics-out", "@/nodir/"}) << "'@/nodir' does not exist";
  QTest::newRow("record in a read-only directory")
      << train({"--record", "@/ro/r.ssrun"})
      << "--record: cannot write '@/ro/r.ssrun': the directory '@/ro' is not writable";
  // A run refused for its data writes no output (nor truncates one).
  QTest::newRow("missing data, existing record")
      << QStringList{"train", "--data", "@/missing.txt", "--record", "@/existing.ssrun"} << "--data: cannot open";
  QTest::newRow("missing data, new metrics")
      << QStringList{"train", "--data", "@/missing.txt", "--metrics-out", "@/new.jsonl"} << "--data: cannot open";
  QTest::newRow("FIFO data, existing metrics")
      << QStringList{"train", "--data", "@/fifo", "--metrics-out", "@/existing.jsonl"} << "it is a FIFO (named pipe)";
  QTest::newRow("directory data, new record") << QStringList{"train", "--data", "@/dir", "--record", "@/new.ssrun"}
                                              << "--data: cannot read '@/dir': it is a directory";
  QTest::newRow("empty data, existing record")
      << QStringList{"train", "--data", "@/empty.txt", "--record", "@/existing.ssrun"} << "is empty";
  QTest::newRow("small data, both outputs")
      << QStringList{"train",         "--seq",           "32", "--data", "@/small.txt", "--record", "@/new.ssrun",
                     "--metrics-out", "@/existing.jsonl"}
      << "need at least";
  QTest::newRow("seq too long, existing record")
      << QStringList{"train", "--seq", "999", "--record", "@/existing.ssrun"} << "--seq 999 exceeds";
  // export: the trace is never the recording, a link, a directory or a device; the input is a file.
  const QStringList exported = {"@/in.ssrun"};
  const QString same_recording = "it is the same file as the recording '@/in.ssrun'";
  QTest::newRow("trace = recording") << QStringList{"export", "--chrome-trace", "@/in.ssrun"} + exported
                                     << same_recording;
  QTest::newRow("trace = hard link of recording")
      << QStringList{"export", "--chrome-trace", "@/in_hard.ssrun"} + exported << same_recording;
  QTest::newRow("trace = symlink to recording")
      << QStringList{"export", "--chrome-trace", "@/in_soft.ssrun"} + exported << same_recording;
  QTest::newRow("trace = ./recording") << QStringList{"export", "--chrome-trace", "./in.ssrun", "in.ssrun"}
                                       << "--chrome-trace: will not write './in.ssrun'";
  QTest::newRow("trace = directory") << QStringList{"export", "--chrome-trace", "@/dir"} + exported
                                     << refused("--chrome-trace", "@/dir", "a directory");
  QTest::newRow("trace = FIFO") << QStringList{"export", "--chrome-trace", "@/fifo"} + exported
                                << refused("--chrome-trace", "@/fifo", "a FIFO");
  QTest::newRow("trace = dangling link") << QStringList{"export", "--chrome-trace", "@/dangling"} + exported
                                         << refused("--chrome-trace", "@/dangling", "a symbolic link");
  QTest::newRow("trace = link to the corpus") << QStringList{"export", "--chrome-trace", "@/soft.txt"} + exported
                                              << refused("--chrome-trace", "@/soft.txt", "a symbolic link");
  QTest::newRow("trace in a missing directory") << QStringList{"export", "--chrome-trace", "@/nodir/t.json"} + exported
                                                << "--chrome-trace: cannot write '@/nodir/t.json': the directory";
  QTest::newRow("trace in a read-only directory")
      << QStringList{"export", "--chrome-trace", "@/ro/t.json"} + exported << "the directory '@/ro' is not writable";
  QTest::newRow("input is a FIFO") << QStringList{"export", "--chrome-trace", "@/t.json", "@/fifo"}
                                   << "RUN.ssrun: cannot read '@/fifo': it is a FIFO";
  QTest::newRow("input is a directory") << QStringList{"export", "--chrome-trace", "@/t.json", "@/dir"}
                                        << "RUN.ssrun: cannot read '@/dir': it is a directory";
}

void TestOutputFiles::bad_outputs_are_refused() {
  QFETCH(QStringList, args);
  QFETCH(QString, message);
  if (QString(QTest::currentDataTag()).contains("read-only") && ::geteuid() == 0)
    QSKIP("root writes into a read-only directory");
  build_fixture();
  if (args.contains("@DEV@") && !make_device()) QSKIP("no device node could be made here (mknod refused)");
  for (QString& arg : args) arg = placed(arg);
  expect_refused(args, 2, placed(message));
  ::chmod(at("ro").toUtf8().constData(), 0755);  // so that the directory can be removed
}

QTEST_GUILESS_MAIN(TestOutputFiles)
#include "test_output_files.moc"
