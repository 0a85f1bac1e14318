// SPDX-License-Identifier: GPL-3.0-or-later
// Lessons print what they quote (issue 28, item 4): every number in a lesson's
// text, English and Chinese, appears in the output of its run (`train --lesson
// NAME`, one run per lesson for both languages), within the rounding the text
// uses: "84 MiB" is met by "83.96 MiB" printed as "84.0 MiB", "3.3 MiB" by
// "3.3 MiB", "15.6%" by "15.6%". A number with a unit needs the same unit in the
// output; one without matches any printed number. A number the text gives as
// approximate ("about 46%", "约 46%") may be off by a quarter of itself: a
// measured share of the virtual clock, which differs from machine to machine.
// Not checked: code spans and link targets, single digits without a unit (they
// count layers, ranks and steps, and any output has them), and the numbers the
// lesson's lesson.json lists under "figures.cited" with their source (a
// published figure, another model's, a constant): the lesson says where they
// come from rather than the test skipping them silently.
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QRegularExpression>
#include <QTest>
#include <cmath>

namespace {

const QDir kTutorials(QStringLiteral(QT_TESTCASE_SOURCEDIR "/../tutorials"));

QString readText(const QString& path) {
  QFile f(path);
  return f.open(QIODevice::ReadOnly) ? QString::fromUtf8(f.readAll()) : QString();
}

struct Number {
  QString text;  // as written: "3.3", "859,392"
  QString unit;  // "MiB", "%", ... or empty
  bool approximate = false;
  QString range_end;  // "32–34%": text "32", range_end "34" (any printed value in between, rounded)
};

const QString kUnits = QStringLiteral(R"((?:\s?(MiB|MB|GiB|GB|TB|kB|KiB|B|%|ms|s)(?![A-Za-z]))?)");

// The numbers of a lesson's Markdown, as the test reads them (see the top of this file).
QList<Number> textNumbers(QString markdown) {
  markdown.replace(QRegularExpression(QStringLiteral("`[^`]*`")), QStringLiteral(" "));
  markdown.replace(QRegularExpression(QStringLiteral(R"(\]\([^)]*\))")), QStringLiteral("]"));
  static const QRegularExpression number(
      QStringLiteral(
          R"((about |约 ?|大约 ?|~|≈ ?)?(?<![A-Za-z0-9_.\-^/])(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(?![A-Za-z0-9_^]|\.\d))"
          R"((?:\s?[–~～]\s?(\d+(?:\.\d+)?))?)") +
      kUnits);
  QList<Number> out;
  for (auto it = number.globalMatch(markdown); it.hasNext();) {
    const QRegularExpressionMatch m = it.next();
    const QString text = m.captured(2) + m.captured(3);
    if (text.size() == 1 && m.captured(4).isEmpty() && m.captured(5).isEmpty()) continue;  // a count: 4 layers
    out.push_back({text, m.captured(5), !m.captured(1).isEmpty(), m.captured(4)});
  }
  return out;
}

struct Printed {
  double value;
  QString unit;
};

QList<Printed> outputNumbers(const QString& output) {
  static const QRegularExpression number(QStringLiteral(R"((\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?)") + kUnits);
  QList<Printed> out;
  for (auto it = number.globalMatch(output); it.hasNext();) {
    const QRegularExpressionMatch m = it.next();
    QString digits = m.captured(1) + m.captured(2);
    out.push_back({digits.remove(QLatin1Char(',')).toDouble(), m.captured(3)});
  }
  return out;
}

bool printed(const Number& n, const QList<Printed>& output) {
  const double quoted = QString(n.text).remove(QLatin1Char(',')).toDouble();
  const qsizetype dot = n.text.indexOf(QLatin1Char('.'));
  const double decimals = dot < 0 ? 0.0 : static_cast<double>(n.text.size() - dot - 1);
  const double scale = std::pow(10.0, decimals);
  for (const Printed& p : output) {
    if (!n.unit.isEmpty() && p.unit != n.unit) continue;
    if (!n.range_end.isEmpty()) {
      const double rounded = std::round(p.value * scale) / scale;
      if (rounded >= quoted - 1e-9 && rounded <= n.range_end.toDouble() + 1e-9) return true;
      continue;
    }
    if (n.approximate ? std::abs(p.value - quoted) <= 0.25 * quoted
                      : std::abs(std::round(p.value * scale) / scale - quoted) < 0.5 / scale / 100)
      return true;
  }
  return false;
}

QStringList lessonIds() {
  QStringList ids;
  for (const QString& id : kTutorials.entryList(QDir::Dirs | QDir::NoDotAndDotDot, QDir::Name))
    if (QFile::exists(kTutorials.filePath(id + QStringLiteral("/lesson.json")))) ids << id;
  return ids;
}

}  // namespace

class TestLessonFigures : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  // The reading itself, on sentences of the lessons' kind.
  void numbersAreReadAsTheTextWritesThem() {
    const QList<Number> n = textNumbers(QStringLiteral(
        "gpt-tiny (Ψ = 859,392, 3.3 MiB) on 4 ranks: about 46% with `--bucket-mb 25`, fp16, ZeRO-3, 1F1B, 15.6%."));
    QCOMPARE(n.size(), 4);
    QCOMPARE(n[0].text, QStringLiteral("859,392"));
    QCOMPARE(n[1].text + n[1].unit, QStringLiteral("3.3MiB"));
    QVERIFY(n[2].approximate && n[2].unit == QStringLiteral("%"));
    QCOMPARE(n[3].text, QStringLiteral("15.6"));
    const QList<Printed> out = outputNumbers(QStringLiteral("activations 83.96 MiB, 47.7% overlapped, 859392"));
    QVERIFY(printed({QStringLiteral("84"), QStringLiteral("MiB"), false, {}}, out));
    QVERIFY(!printed({QStringLiteral("84"), QStringLiteral("MB"), false, {}}, out));
    QVERIFY(!printed({QStringLiteral("84.1"), QStringLiteral("MiB"), false, {}}, out));
    QVERIFY(printed({QStringLiteral("46"), QStringLiteral("%"), true, {}}, out));
    QVERIFY(!printed({QStringLiteral("46"), QStringLiteral("%"), false, {}}, out));
    QVERIFY(printed({QStringLiteral("859,392"), QString(), false, {}}, out));
    const QList<Number> range = textNumbers(QStringLiteral("idle 32–34% in all"));
    QVERIFY(range.size() == 1 && range[0].range_end == QStringLiteral("34") && range[0].unit == QStringLiteral("%"));
    QVERIFY(printed(range[0], outputNumbers(QStringLiteral("idle in all 34.4%"))));
    QVERIFY(!printed(range[0], outputNumbers(QStringLiteral("idle in all 34.6%"))));
  }

  void everyQuotedNumberIsPrinted_data() {
    QTest::addColumn<QString>("id");
    for (const QString& id : lessonIds()) QTest::newRow(qPrintable(id)) << id;
  }
  void everyQuotedNumberIsPrinted() {
    QFETCH(QString, id);
    const QJsonObject lesson =
        QJsonDocument::fromJson(readText(kTutorials.filePath(id + QStringLiteral("/lesson.json"))).toUtf8()).object();
    const QJsonObject cited = lesson[QStringLiteral("figures")].toObject()[QStringLiteral("cited")].toObject();
    for (auto it = cited.begin(); it != cited.end(); ++it)  // a citation says where the number comes from
      QVERIFY2(it.value().toString().size() >= 10, qPrintable(id + QStringLiteral(": cited ") + it.key()));
    QElapsedTimer timer;
    timer.start();
    QProcess p;
    p.setProcessChannelMode(QProcess::MergedChannels);
    p.start(QStringLiteral(SHARDSCOPE_CLI), {QStringLiteral("train"), QStringLiteral("--lesson"), id});
    QVERIFY(p.waitForFinished(300000));
    const QString output = QString::fromUtf8(p.readAll());
    QVERIFY2(p.exitCode() == 0, qPrintable(output.right(2000)));
    const QList<Printed> numbers = outputNumbers(output);
    QStringList missing;
    for (const QString& language : {QStringLiteral("en"), QStringLiteral("zh_CN")}) {
      const QString path = kTutorials.filePath(id + QLatin1Char('/') + language + QStringLiteral(".md"));
      for (const Number& n : textNumbers(readText(path)))
        if (!cited.contains(n.text) && !printed(n, numbers))
          missing << language + QStringLiteral(": ") + (n.approximate ? QStringLiteral("about ") : QString()) + n.text +
                         (n.range_end.isEmpty() ? QString() : QStringLiteral("–") + n.range_end) + n.unit;
    }
    qInfo("%s: run and check in %.1f s", qPrintable(id), static_cast<double>(timer.elapsed()) / 1000.0);
    QVERIFY2(missing.isEmpty(), qPrintable(id + QStringLiteral(" quotes numbers its run does not print: ") +
                                           missing.join(QStringLiteral(", ")) + QStringLiteral("\n") + output));
  }
};

QTEST_GUILESS_MAIN(TestLessonFigures)
#include "test_lesson_figures.moc"
