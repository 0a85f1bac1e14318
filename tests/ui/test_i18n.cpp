// SPDX-License-Identifier: GPL-3.0-or-later
// Chinese and English, offscreen: the language switch re-words the window live
// (buttons, config labels, plot titles) and back; the zh_CN translation is
// complete, keeps every placeholder and is embedded; a Chinese screenshot.
#include <QComboBox>
#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QProcess>
#include <QPushButton>
#include <QRegularExpression>
#include <QTabWidget>
#include <QTranslator>
#include <QXmlStreamReader>
#include <QtTest>

#include "config_panel.h"
#include "i18n.h"
#include "main_window.h"
#include "views/loss_plot.h"
#include "views/memory_bars.h"

using namespace shardscope;
using shardscope::ui::MainWindow;

namespace {

struct TsMessage {
  QString context, source;
  QStringList translations;  // one per numerus form, or one
  bool unfinished = false;
};

std::vector<TsMessage> readTs(const QString& path) {
  QFile file(path);
  if (!file.open(QIODevice::ReadOnly)) return {};
  std::vector<TsMessage> out;
  QXmlStreamReader xml(&file);
  QString context;
  while (!xml.atEnd()) {
    xml.readNext();
    if (!xml.isStartElement()) continue;
    if (xml.name() == QLatin1String("name")) context = xml.readElementText();
    else if (xml.name() == QLatin1String("message")) out.push_back({context, {}, {}, false});
    else if (xml.name() == QLatin1String("source") && !out.empty()) out.back().source = xml.readElementText();
    else if (xml.name() == QLatin1String("translation") && !out.empty()) {
      const auto type = xml.attributes().value(QLatin1String("type"));
      out.back().unfinished = type == QLatin1String("unfinished") || type == QLatin1String("vanished") ||
                              type == QLatin1String("obsolete");
      if (xml.readNext() == QXmlStreamReader::Characters && !xml.text().trimmed().isEmpty())
        out.back().translations << xml.text().toString();
    } else if (xml.name() == QLatin1String("numerusform") && !out.empty()) {
      out.back().translations << xml.readElementText();
    }
  }
  return out;
}

QStringList placeholders(const QString& text) {
  QStringList found;
  static const QRegularExpression re(QStringLiteral("%[1-9n]"));
  for (auto it = re.globalMatch(text); it.hasNext();) found << it.next().captured();
  found.sort();
  found.removeDuplicates();
  return found;
}

}  // namespace

class TestI18n : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void cleanup() { ui::setLanguage(QStringLiteral("en")); }

  void languageCodes() {
    QCOMPARE(ui::normalizeLanguage(QStringLiteral("zh_CN")), QStringLiteral("zh_CN"));
    QCOMPARE(ui::normalizeLanguage(QStringLiteral("zh_TW")), QStringLiteral("zh_CN"));
    QCOMPARE(ui::normalizeLanguage(QStringLiteral("en_US")), QStringLiteral("en"));
    QCOMPARE(ui::normalizeLanguage(QStringLiteral("de")), QStringLiteral("en"));
    qputenv("SHARDSCOPE_LANG", "zh");
    QCOMPARE(ui::defaultLanguage(), QStringLiteral("zh_CN"));
    qputenv("SHARDSCOPE_LANG", "en");
    QCOMPARE(ui::defaultLanguage(), QStringLiteral("en"));
    qunsetenv("SHARDSCOPE_LANG");
    QVERIFY(ui::offersLanguage(QStringLiteral("zh_TW")) && ui::offersLanguage(QStringLiteral(" EN_us")));
    QVERIFY(!ui::offersLanguage(QStringLiteral("xx")) && !ui::offersLanguage(QStringLiteral("")));
    // The app refuses a --lang it does not have, before it opens a window.
    QProcess app;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
    app.setProcessEnvironment(env);
    app.start(QStringLiteral(SHARDSCOPE_APP), {QStringLiteral("--lang"), QStringLiteral("xx")});
    QVERIFY(app.waitForFinished(30000));
    QCOMPARE(app.exitCode(), 2);
    QVERIFY2(app.readAllStandardError().contains("--lang xx: no such interface language (it has en and zh_CN)"),
             "no error naming --lang");
  }

  // The app's own command-line errors are bad input: exit 2 with the reason, as shardscope-cli's
  // (QCommandLineParser::process() would exit 1); --help and --version still exit 0.
  void commandLineErrorsExit2() {
    const auto run = [](const QStringList& args) {
      QProcess app;
      QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
      env.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
      app.setProcessEnvironment(env);
      app.start(QStringLiteral(SHARDSCOPE_APP), args);
      if (!app.waitForFinished(30000)) app.kill();
      return std::pair{app.exitStatus() == QProcess::NormalExit ? app.exitCode() : -1,
                       QString::fromUtf8(app.readAllStandardError() + app.readAllStandardOutput())};
    };
    const QList<std::pair<QStringList, QString>> refused = {
        {{QStringLiteral("--no-such-option")}, QStringLiteral("Unknown option 'no-such-option'")},
        {{QStringLiteral("--lang")}, QStringLiteral("Missing value after '--lang'")},
        {{QStringLiteral("run.ssrun")}, QStringLiteral("'run.ssrun': the app takes no file or command")},
    };
    for (const auto& [args, reason] : refused) {
      const auto [code, err] = run(args);
      QVERIFY2(code == 2, qPrintable(args.join(' ') + ": exit " + QString::number(code) + ": " + err));
      QVERIFY2(err.contains(reason), qPrintable(args.join(' ') + ": " + err));
    }
    for (const QString& flag : {QStringLiteral("--help"), QStringLiteral("--version")}) {
      const auto [code, out] = run({flag});
      QVERIFY2(code == 0 && out.contains(flag == "--help" ? "--lang <code>" : "0.1.0"), qPrintable(flag + ": " + out));
    }
  }

  void switchChangesVisibleStrings() {
    MainWindow window;
    window.show();
    QCOMPARE(window.runButton()->text(), QStringLiteral("Run"));
    QCOMPARE(window.configPanel()->labelText(QStringLiteral("model")), QStringLiteral("Model"));
    QCOMPARE(window.lossPlot()->title(), QStringLiteral("Loss"));
    QCOMPARE(window.viewTabs()->tabText(0), QStringLiteral("Loss"));

    // As the user does it: choose 中文 in the switch.
    QComboBox* box = window.languageBox();
    const int zh = box->findData(QStringLiteral("zh_CN"));
    QVERIFY(zh >= 0);
    QCOMPARE(box->itemText(zh), QStringLiteral("中文"));
    box->setCurrentIndex(zh);
    Q_EMIT box->activated(zh);
    QCOMPARE(ui::currentLanguage(), QStringLiteral("zh_CN"));
    QTRY_COMPARE(window.runButton()->text(), QStringLiteral("运行"));
    QCOMPARE(window.stopButton()->text(), QStringLiteral("停止"));
    QCOMPARE(window.configPanel()->labelText(QStringLiteral("model")), QStringLiteral("模型"));
    QCOMPARE(window.configPanel()->labelText(QStringLiteral("micro_batches")), QStringLiteral("微批次数"));
    QCOMPARE(window.lossPlot()->title(), QStringLiteral("损失"));
    QVERIFY2(window.memoryBars()->title().contains(QStringLiteral("内存")), qPrintable(window.memoryBars()->title()));
    QCOMPARE(window.viewTabs()->tabText(0), QStringLiteral("损失"));
    QCOMPARE(window.viewTabs()->tabText(1), QStringLiteral("流水线"));
    QCOMPARE(ui::MemoryBars::categoryLabel(MemoryCategory::optimizer_states), QStringLiteral("优化器状态"));
    QVERIFY2(window.statusText().contains(QStringLiteral("就绪")), qPrintable(window.statusText()));

    // And back.
    const int en = box->findData(QStringLiteral("en"));
    box->setCurrentIndex(en);
    Q_EMIT box->activated(en);
    QTRY_COMPARE(window.runButton()->text(), QStringLiteral("Run"));
    QCOMPARE(window.configPanel()->labelText(QStringLiteral("model")), QStringLiteral("Model"));
    QCOMPARE(window.lossPlot()->title(), QStringLiteral("Loss"));
    QCOMPARE(window.viewTabs()->tabText(1), QStringLiteral("Pipeline"));
    QVERIFY(window.memoryBars()->title().startsWith(QStringLiteral("Memory per rank")));
    QVERIFY(window.statusText().startsWith(QStringLiteral("Ready")));
  }

  void windowOpensInChineseWhenSetFirst() {
    QVERIFY(ui::setLanguage(QStringLiteral("zh_CN")));
    MainWindow window;
    QCOMPARE(window.runButton()->text(), QStringLiteral("运行"));
    QCOMPARE(window.languageBox()->currentData().toString(), QStringLiteral("zh_CN"));
  }

  void chineseTranslationIsComplete() {
    const auto messages = readTs(QStringLiteral(SHARDSCOPE_TRANSLATIONS "/shardscope_zh_CN.ts"));
    QVERIFY(messages.size() > 50);
    for (const TsMessage& m : messages) {
      const QString where = m.context + QStringLiteral(": ") + m.source;
      QVERIFY2(!m.unfinished, qPrintable(QStringLiteral("unfinished: ") + where));
      QVERIFY2(!m.translations.isEmpty(), qPrintable(QStringLiteral("empty: ") + where));
      for (const QString& t : m.translations)
        QVERIFY2(placeholders(t) == placeholders(m.source), qPrintable(QStringLiteral("placeholders: ") + where));
    }
    // The same translation is embedded in the binary.
    QTranslator embedded;
    QVERIFY(embedded.load(QStringLiteral(":/i18n/shardscope_zh_CN.qm")));
    QCOMPARE(embedded.translate("shardscope::ui::MainWindow", "Run"), QStringLiteral("运行"));
    QTranslator english;
    QVERIFY(english.load(QStringLiteral(":/i18n/shardscope_en.qm")));
  }

  void chineseScreenshotAfterShortRun() {
    QVERIFY(ui::setLanguage(QStringLiteral("zh_CN")));
    MainWindow window;
    window.show();
    RunConfig c = ui::ConfigPanel::defaultConfig();
    c.steps = 4;
    c.batch = 8;
    c.seq = 32;
    window.configPanel()->setConfig(c);
    window.startRun();
    QTRY_VERIFY_WITH_TIMEOUT(!window.controller()->busy(), 120000);
    QCOMPARE(window.lossPlot()->trainPointCount(), 4);
    QVERIFY2(window.statusText().contains(QStringLiteral("已完成")), qPrintable(window.statusText()));
    const QString shot = QDir(QCoreApplication::applicationDirPath()).filePath(QStringLiteral("ui_main_window_zh.png"));
    QVERIFY(window.grab().save(shot));
    qInfo("screenshot: %s", qPrintable(shot));
    for (int tab = 1; tab < window.viewTabs()->count(); ++tab) {  // the painted views, in Chinese
      window.viewTabs()->setCurrentIndex(tab);
      QTest::qWait(50);
      QVERIFY(window.viewTabs()->currentWidget()->grab().save(
          QDir(QCoreApplication::applicationDirPath()).filePath(QStringLiteral("ui_view%1_zh.png").arg(tab))));
    }
    // Back to English from Chinese: the wider labels still fit the left column.
    QVERIFY(ui::setLanguage(QStringLiteral("en")));
    QTRY_COMPARE(window.runButton()->text(), QStringLiteral("Run"));
    window.viewTabs()->setCurrentIndex(0);
    QTest::qWait(50);  // the settings column re-fits after the children re-worded
    QVERIFY(window.statusText().startsWith(QStringLiteral("Finished: 4 steps")));
    QCOMPARE(window.configPanel()->labelText(QStringLiteral("checkpoint")), QStringLiteral("Activation checkpointing"));
    QVERIFY(window.grab().save(QDir(QCoreApplication::applicationDirPath()).filePath(QStringLiteral("ui_main_window_en_after_zh.png"))));
  }
};

QTEST_MAIN(TestI18n)
#include "test_i18n.moc"
