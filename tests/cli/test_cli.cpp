// SPDX-License-Identifier: GPL-3.0-or-later
// shardscope-cli as a user runs it: bad input gets a clear message and exit
// code 2, never a crash; a short run writes the documented JSONL schema.
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>

class TestCli : public QObject {
  Q_OBJECT

  struct Result {
    int code;
    QString out, err;
  };
  static Result run(const QStringList& args) {
    QProcess p;
    p.start(SHARDSCOPE_CLI, args);
    if (!p.waitForFinished(300000)) return {-1, {}, "timed out"};
    return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -2, QString::fromUtf8(p.readAllStandardOutput()),
            QString::fromUtf8(p.readAllStandardError())};
  }

 private Q_SLOTS:
  void bad_input_exits_2_with_a_message_data();
  void bad_input_exits_2_with_a_message();
  void help_documents_every_flag();
  void short_run_writes_metrics_jsonl();

 private:
  QTemporaryDir dir_;
};

void TestCli::bad_input_exits_2_with_a_message_data() {
  QTest::addColumn<QStringList>("args");
  QTest::addColumn<QString>("message");
  QTest::newRow("unknown preset") << QStringList{"train", "--model", "gpt-huge"} << "unknown model preset 'gpt-huge'";
  QTest::newRow("missing data") << QStringList{"train", "--data", "/no/such/file.txt"} << "cannot open '/no/such/file.txt'";
  QTest::newRow("empty data") << QStringList{"train", "--data", "@EMPTY@"} << "is empty";
  QTest::newRow("non-numeric steps") << QStringList{"train", "--steps", "ten"} << "--steps: 'ten' is not an integer";
  QTest::newRow("trailing junk") << QStringList{"train", "--batch", "8x"} << "--batch: '8x' is not an integer";
  QTest::newRow("zero steps") << QStringList{"train", "--steps", "0"} << "--steps: 0 is out of range";
  QTest::newRow("negative batch") << QStringList{"train", "--batch", "-4"} << "--batch: -4 is out of range";
  QTest::newRow("nan lr") << QStringList{"train", "--lr", "nan"} << "--lr: nan is not a finite number";
  QTest::newRow("negative lr") << QStringList{"train", "--lr", "-0.1"} << "--lr must be in (0, 10)";
  QTest::newRow("seq too long") << QStringList{"train", "--seq", "257"}
                                << "--seq 257 exceeds the maximum sequence length of gpt-tiny (256)";
  QTest::newRow("unknown flag") << QStringList{"train", "--stepz", "3"} << "unknown flag '--stepz'";
  QTest::newRow("missing value") << QStringList{"train", "--steps"} << "--steps needs a value";
  QTest::newRow("unknown command") << QStringList{"trian"} << "unknown command 'trian'";
  QTest::newRow("unwritable metrics") << QStringList{"train", "--steps", "1", "--metrics-out", "/no/dir/m.jsonl"}
                                      << "--metrics-out: cannot write";
}

void TestCli::bad_input_exits_2_with_a_message() {
  QFETCH(QStringList, args);
  QFETCH(QString, message);
  const QString empty = dir_.path() + "/empty.txt";
  QFile(empty).open(QIODevice::WriteOnly);
  args.replaceInStrings("@EMPTY@", empty);
  const Result r = run(args);
  QCOMPARE(r.code, 2);
  QVERIFY2(r.err.contains(message), qPrintable("stderr was: " + r.err));
}

void TestCli::help_documents_every_flag() {
  const Result r = run({"train", "--help"});
  QCOMPARE(r.code, 0);
  for (const char* flag : {"--model", "--steps", "--batch", "--seq", "--lr", "--seed", "--data", "--eval-every",
                           "--metrics-out", "--threads", "--warmup", "--weight-decay", "--grad-clip"})
    QVERIFY2(r.out.contains(flag), flag);
  QVERIFY(r.out.contains("gpt2-124m"));  // the presets are listed
}

void TestCli::short_run_writes_metrics_jsonl() {
  const QString metrics = dir_.path() + "/m.jsonl";
  const Result r = run({"train", "--model", "gpt-tiny", "--steps", "4", "--batch", "4", "--seq", "32",
                        "--eval-every", "2", "--metrics-out", metrics});
  QVERIFY2(r.code == 0, qPrintable(r.err));
  QVERIFY(r.out.contains("step      4/4"));
  QFile f(metrics);
  QVERIFY(f.open(QIODevice::ReadOnly));
  const QList<QByteArray> lines = f.readAll().trimmed().split('\n');
  QCOMPARE(lines.size(), 4);
  for (int i = 0; i < lines.size(); ++i) {
    const QJsonObject o = QJsonDocument::fromJson(lines[i]).object();
    QCOMPARE(o["step"].toInt(), i + 1);
    for (const char* key : {"loss", "lr", "grad_norm", "tokens_per_s", "step_time_s"})
      QVERIFY2(o[key].isDouble() && o[key].toDouble() >= 0.0, key);
    QCOMPARE(o["eval_loss"].isDouble(), (i + 1) % 2 == 0);
    const QJsonObject memory = o["memory"].toObject();
    for (const char* category :
         {"parameters", "gradients", "optimizer_states", "activations", "communication", "workspace"})
      QVERIFY2(memory.contains(category), category);
    QCOMPARE(memory["parameters"].toDouble(), 4.0 * 859392);  // gpt-tiny: 859,392 parameters
    QCOMPARE(memory["optimizer_states"].toDouble(), 8.0 * 859392);
  }
}

QTEST_GUILESS_MAIN(TestCli)
#include "test_cli.moc"
