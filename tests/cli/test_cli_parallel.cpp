// SPDX-License-Identifier: GPL-3.0-or-later
// The parallel runtime from the command line: a dp x pp run recorded to a
// .ssrun file and exported to a Chrome trace with a track per rank and stage;
// the schedule command; a failing rank ending the run with exit code 1.
#include <QElapsedTimer>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QRegularExpression>
#include <QSet>
#include <QTemporaryDir>
#include <QTest>
#include <map>

#include "cli/cli_runner.h"

class TestCliParallel : public QObject {
  Q_OBJECT

  using Result = CliResult;
  static Result run(const QStringList& args) { return run_cli(args); }

 private Q_SLOTS:
  void recorded_dp_pp_run_exports_a_trace();
  void schedule_prints_textbook_1f1b();
  void prints_data_parallel_bytes_beside_the_formula();
  void failing_rank_stops_the_run();
  void bad_layouts_exit_2();
  void header_names_context_and_expert_parallelism();

 private:
  QTemporaryDir dir_;
};

void TestCliParallel::recorded_dp_pp_run_exports_a_trace() {
  const QString record = dir_.path() + "/run.ssrun", trace = dir_.path() + "/trace.json";
  Result r = run({"train", "--steps", "3", "--batch", "8", "--seq", "32", "--dp", "2", "--pp", "2",
                  "--micro-batches", "2", "--schedule", "gpipe", "--record", record, "--threads", "2"});
  QVERIFY2(r.code == 0, qPrintable(r.err));
  QVERIFY2(r.out.contains("4 ranks (dp 2 ddp ZeRO-0 x pp 2 gpipe)"), qPrintable(r.out));
  QVERIFY(r.out.contains("micro-batch 2"));  // 8 / (dp 2 x m 2 x accum 1)
  // The model's parameters, and each stage's apart (a stage's count is not the model's).
  QVERIFY2(r.out.contains("model gpt-tiny (gpt): 859392 parameters"), qPrintable(r.out));
  QVERIFY2(r.out.contains("pipeline: stage 0 embeddings + layers 0-1 = 462592 parameters; stage 1 layers 2-3 + "
                          "head (and a copy of the tied embeddings) = 430080"),
           qPrintable(r.out));
  r = run({"export", "--chrome-trace", trace, record});
  QVERIFY2(r.code == 0, qPrintable(r.err));
  QFile f(trace);
  QVERIFY(f.open(QIODevice::ReadOnly));
  const QJsonObject doc = QJsonDocument::fromJson(f.readAll()).object();
  QSet<QString> processes;
  int sends = 0, forwards = 0;
  for (const auto& v : doc["traceEvents"].toArray()) {
    const QJsonObject e = v.toObject();
    if (e["ph"] == "M" && e["name"] == "process_name") processes.insert(e["args"].toObject()["name"].toString());
    if (e["ph"] == "X" && e["name"].toString().contains("send")) ++sends;
    if (e["ph"] == "X" && e["name"].toString().startsWith("forward")) ++forwards;
  }
  for (const char* name : {"rank 0 (stage 0)", "rank 1 (stage 0)", "rank 2 (stage 1)", "rank 3 (stage 1)"})
    QVERIFY2(processes.contains(name), qPrintable(QStringList(processes.values()).join(", ")));
  QVERIFY(sends > 0);      // activations and gradients between the stages
  QVERIFY(forwards >= 3 * 4 * 2);  // 3 steps x 4 ranks x 2 micro-batches
}

void TestCliParallel::schedule_prints_textbook_1f1b() {
  const Result r = run({"schedule", "--pp", "4", "--micro-batches", "8", "--schedule", "1f1b"});
  QCOMPARE(r.code, 0);
  QVERIFY(r.out.contains("stage 0: F0 F1 F2 F3 B0 F4 B1 F5 B2 F6 B3 F7 B4 B5 B6 B7"));
  QVERIFY(r.out.contains("stage 3: F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 F6 B6 F7 B7"));
  QVERIFY(r.out.contains("bubble 27.3% (GPipe formula (p-1)/(m+p-1) = 27.3%)"));
  QVERIFY(r.out.contains("held at once per stage: 4 3 2 1"));
}

// The closing lines say what each data-parallel rank sent in a step, equal to
// the formula: DDP, ZeRO-1 and ZeRO-2 2(N−1)/N·4Ψ, ZeRO-3 more than 1.5× that,
// naive DataParallel's rank 0 (N−1)(4 + 4)Ψ both ways.
void TestCliParallel::prints_data_parallel_bytes_beside_the_formula() {
  const QRegularExpression line(
      R"(data-parallel bytes (sent per rank|through rank 0) per step: (?:sent [0-9,]+ \+ received [0-9,]+ = )?)"
      R"(([0-9,]+)(?: bytes)? \(step 2; formula ([^=\n]*) = ([0-9,]+) with )");
  std::map<QString, double> sent;
  for (const char* layout : {"ddp", "naive", "1", "2", "3"}) {
    QStringList args{"train", "--steps", "2", "--batch", "8", "--seq", "32", "--dp", "4", "--threads", "2"};
    args << (QString(layout) == "naive" ? QStringList{"--dp-mode", "naive"}
             : QString(layout) == "ddp" ? QStringList{"--bucket-mb", "100"}  // one bucket of Ψ, a multiple of 4
                                        : QStringList{"--zero", layout});
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("SHARDSCOPE_PLAN_COUNTS", "1");
    const Result r = run_cli(args, env);
    QVERIFY2(r.code == 0, qPrintable(r.err));
    // Issue 27: the run is validated once and planned once (plan/run_plan.h); the
    // trainer, the byte lines and the memory prediction share them.
    QVERIFY2(r.err.contains("plan counts: 1 validations, 1 sharding plans"), qPrintable(r.err));
    const QRegularExpressionMatch m = line.match(r.out);
    QVERIFY2(m.hasMatch(), qPrintable(r.out.right(1500)));
    const QString measured = m.captured(2).remove(','), formula = m.captured(4).remove(',');
    QCOMPARE(measured, formula);
    sent[layout] = measured.toDouble();
  }
  QCOMPARE(sent["1"], sent["ddp"]);  // ZeRO-1 and ZeRO-2 send what DDP sends
  QCOMPARE(sent["2"], sent["ddp"]);
  QVERIFY(sent["3"] > 1.5 * sent["ddp"] && sent["3"] < 2 * sent["ddp"]);  // 1.5× plus the tied embeddings
  QCOMPARE(sent["naive"], 4 * sent["ddp"]);  // (N−1)(4 + 4)Ψ = 24Ψ against DDP's 2(N−1)/N·4Ψ = 6Ψ
}

void TestCliParallel::failing_rank_stops_the_run() {
  QElapsedTimer timer;
  timer.start();
  const Result r = run({"train", "--steps", "5", "--batch", "8", "--seq", "32", "--dp", "4", "--inject-failure",
                        "3:2", "--threads", "2"});
  QCOMPARE(r.code, 1);
  QVERIFY2(r.err.contains("rank 3 failed: injected failure"), qPrintable(r.err));
  QVERIFY2(r.err.contains("all 4 ranks stopped"), qPrintable(r.err));
  QVERIFY(timer.elapsed() < 60000);
}

void TestCliParallel::bad_layouts_exit_2() {
  const struct {
    QStringList args;
    QString message;
  } cases[] = {
      {{"train", "--dp", "3"}, "--batch 16 does not split into --dp 3"},
      {{"train", "--pp", "5"}, "--pp 5 is more pipeline stages than gpt-tiny has layers (4)"},
      {{"train", "--dp", "2", "--pp", "2", "--ranks", "3"}, "--ranks 3 does not equal --dp 2 x --pp 2 = 4"},
      {{"train", "--dp", "2", "--cp", "2", "--tp", "2", "--ranks", "4"},
       "--ranks 4 does not equal --dp 2 x --pp 1 x --cp 2 x --tp 2 = 8 (every rank sits on the dp x pp x cp x tp "
       "grid)"},
      {{"train", "--schedule", "zigzag"}, "--schedule"},
      {{"train", "--dp-mode", "fsdp"}, "--dp-mode: 'fsdp' is not one of naive, ddp"},
      {{"train", "--zero", "3", "--pp", "2", "--dp", "2"}, "is refused"},
      {{"train", "--checkpoint", "half"}, "--checkpoint: 'half' is not one of none, full"},
  };
  for (const auto& c : cases) {
    const Result r = run(c.args);
    QVERIFY2(r.code == 2, qPrintable(c.args.join(' ') + " gave " + QString::number(r.code)));
    QVERIFY2(r.err.contains(c.message), qPrintable("stderr was: " + r.err));
  }
}

QTEST_GUILESS_MAIN(TestCliParallel)
#include "test_cli_parallel.moc"

// The run's header names every axis it runs on: cp beside dp and pp, and ep (which borrows dp ranks).
void TestCliParallel::header_names_context_and_expert_parallelism() {
  Result r = run({"train", "--steps", "1", "--batch", "4", "--seq", "16", "--cp", "2", "--eval-every", "0"});
  QVERIFY2(r.code == 0, qPrintable(r.err));
  QVERIFY2(r.out.contains("2 ranks (dp 1 ddp ZeRO-0 x pp 1 1f1b x cp 2 zigzag)"), qPrintable(r.out));
  r = run({"train", "--model", "gpt-tiny-moe", "--steps", "1", "--batch", "4", "--seq", "16", "--dp", "2", "--ep", "2",
           "--eval-every", "0"});
  QVERIFY2(r.code == 0, qPrintable(r.err));
  QVERIFY2(r.out.contains("2 ranks (dp 2 ddp ZeRO-0 x pp 1 1f1b, experts over ep 2)"), qPrintable(r.out));
  // estimate --ep: each rank holds the dense parameters and 2 of the 4 experts of each layer.
  r = run(
      {"estimate", "--model", "gpt-tiny-moe", "--dp", "2", "--ep", "2", "--seq", "64", "--activations", "shardscope"});
  QVERIFY2(r.code == 0, qPrintable(r.err));
  QVERIFY2(r.out.contains("experts over ep 2"), qPrintable(r.out));
  QVERIFY2(r.out.contains("4Ψ = 4 × 1,388,288"), qPrintable(r.out));
  QVERIFY2(r.out.contains("all-to-all"), qPrintable(r.out));
  r = run({"estimate", "--model", "gpt-tiny-moe", "--dp", "2", "--ep", "2", "--zero", "2"});
  QCOMPARE(r.code, 2);
  QVERIFY2(r.err.contains("--ep 2 is modelled with DDP or ZeRO-1"), qPrintable(r.err));
}
