// SPDX-License-Identifier: GPL-3.0-or-later
// `shardscope-cli train --lesson NAME`: every lesson of tutorials/ runs
// headless to its last step (exit 0), with the run its lesson.json gives; other
// flags change it; an unknown name is refused listing the lessons. The time
// each lesson's run takes is printed (the lessons promise under 60 s on 2
// cores; timed, not asserted: a loaded machine is slower).
#include <QDir>
#include <QElapsedTimer>
#include <QProcess>
#include <QRegularExpression>
#include <QTest>

namespace {

struct Result {
  int code;
  QString out;
};

Result run_cli(const QStringList& args) {
  QProcess p;
  p.setProcessChannelMode(QProcess::MergedChannels);
  p.start(QStringLiteral(SHARDSCOPE_CLI), args);
  if (!p.waitForFinished(300000)) {  // a hang, not slowness
    p.kill();
    p.waitForFinished();
    return {-1, QString::fromUtf8(p.readAll())};
  }
  return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -2, QString::fromUtf8(p.readAll())};
}

QStringList lesson_folders() {
  const QDir tutorials(QStringLiteral(QT_TESTCASE_SOURCEDIR "/../tutorials"));
  QStringList ids;
  for (const QString& id : tutorials.entryList(QDir::Dirs | QDir::NoDotAndDotDot, QDir::Name))
    if (QFile::exists(tutorials.filePath(id + QStringLiteral("/lesson.json")))) ids << id;
  return ids;
}

}  // namespace

class TestLessonRuns : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void everyLessonIsBuiltIn() {
    const Result help = run_cli({"train", "--help"});
    QCOMPARE(help.code, 0);
    const QStringList ids = lesson_folders();
    QVERIFY(ids.size() >= 10);
    for (const QString& id : ids) QVERIFY2(help.out.contains(id), qPrintable(id));
  }

  void everyLessonRunsToItsEnd_data() {
    QTest::addColumn<QString>("id");
    for (const QString& id : lesson_folders()) QTest::newRow(qPrintable(id)) << id;
  }
  void everyLessonRunsToItsEnd() {
    QFETCH(QString, id);
    QElapsedTimer timer;
    timer.start();
    const Result r = run_cli({"train", "--lesson", id, "--log-every", "1000"});
    QVERIFY2(r.code == 0, qPrintable(r.out.right(2000)));
    const QRegularExpressionMatch done = QRegularExpression(QStringLiteral("done: (\\d+) steps")).match(r.out);
    QVERIFY2(done.hasMatch() && done.captured(1).toInt() > 0, qPrintable(r.out.right(2000)));
    qInfo("%s: %d steps in %.1f s", qPrintable(id), done.captured(1).toInt(), timer.elapsed() / 1000.0);
  }

  // The lesson's run, then the other flags on top of it, in any order.
  void flagsChangeTheLessonsRun() {
    for (const QStringList& args : {QStringList{"train", "--steps", "2", "--lesson", "pipeline_bubbles"},
                                    QStringList{"train", "--lesson=pipeline_bubbles", "--steps", "2"}}) {
      const Result r = run_cli(args);
      QVERIFY2(r.code == 0, qPrintable(r.out.right(2000)));
      QVERIFY2(r.out.contains(QStringLiteral("done: 2 steps")), qPrintable(r.out.right(2000)));
      QVERIFY2(r.out.contains(QStringLiteral("pp 4 gpipe")), qPrintable(r.out.left(2000)));  // from lesson.json
      QVERIFY2(r.out.contains(QStringLiteral("bubble measured")), qPrintable(r.out.right(2000)));
    }
  }

  void unknownLessonIsRefusedListingTheLessons() {
    const Result r = run_cli({"train", "--lesson", "no_such_lesson", "--steps", "1"});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.out.contains(QStringLiteral("--lesson: no lesson 'no_such_lesson'")), qPrintable(r.out));
    QVERIFY2(r.out.contains(QStringLiteral("gradient_accumulation")), qPrintable(r.out));
  }
};

QTEST_GUILESS_MAIN(TestLessonRuns)
#include "test_lesson_runs.moc"
