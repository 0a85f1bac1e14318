// SPDX-License-Identifier: GPL-3.0-or-later
// The main window fits a 1280×720 screen (a projector, a small laptop) with the
// lessons panel open, in English and in Chinese: its minimum size is at most
// 1280×720, and at exactly that size each part gets at least its own minimum.
// The memory legend is drawn whole (no border or text past the plot's edge)
// however small the plot. Also the axis titles in Chinese, and the level of
// a log line. After a short run it saves the window at 1280×720 beside the test
// binary (build/tests/window_1280x720_en.png, window_1280x720_zh.png). At
// 1280×720 the run controls are in sight without scrolling, the settings fold
// by section, the memory bars and log hide, and the wheel over an unfocused
// field changes nothing. Offscreen.
#include <spdlog/logger.h>

#include <QAction>
#include <QComboBox>
#include <QCoreApplication>
#include <QDir>
#include <QDockWidget>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QScreen>
#include <QScrollArea>
#include <QSpinBox>
#include <QTabWidget>
#include <QToolButton>
#include <QtTest>

#include "config_panel.h"
#include "i18n.h"
#include "lessons.h"
#include "main_window.h"
#include "planner/planner_dialog.h"
#include "settings_section.h"
#include "views/memory_bars.h"
#include "views/qcustomplot_include.h"

using namespace shardscope;
using namespace shardscope::ui;

namespace {

QString sizeText(QSize s) { return QStringLiteral("%1x%2").arg(s.width()).arg(s.height()); }

// Everything the legend draws lies inside the plot's viewport: its box (a
// 1-pixel border is drawn one pixel right of and below outerRect) and each
// entry at its full minimum size.
void verifyLegendInside(QCustomPlot* plot, const QString& where) {
  plot->replot(QCustomPlot::rpImmediateRefresh);
  const QCPLegend* legend = plot->legend;
  const QRect box = legend->outerRect();
  const QRect view = plot->viewport();
  const QString what = where + QStringLiteral(": legend ") + sizeText(box.size()) + QStringLiteral(" at ") +
                       QString::number(box.x()) + QLatin1Char(',') + QString::number(box.y()) +
                       QStringLiteral(" in ") + sizeText(view.size());
  QVERIFY2(box.left() >= view.left() && box.top() >= view.top(), qPrintable(what));
  QVERIFY2(box.right() + 1 <= view.right() && box.bottom() + 1 <= view.bottom(), qPrintable(what));
  QVERIFY2(box.width() >= legend->minimumOuterSizeHint().width(), qPrintable(what));
  QVERIFY2(box.height() >= legend->minimumOuterSizeHint().height(), qPrintable(what));
  for (int i = 0; i < legend->itemCount(); ++i) {
    const QCPAbstractLegendItem* item = legend->item(i);
    QVERIFY2(item->outerRect().width() >= item->minimumOuterSizeHint().width(), qPrintable(what));
    QVERIFY2(box.contains(item->outerRect()), qPrintable(what));
  }
}

// A wheel turn over the middle of `widget`, as a mouse sends it.
void turnWheel(QWidget* widget, int angle) {
  const QPointF centre = QRectF(widget->rect()).center();
  QWheelEvent wheel(centre, widget->mapToGlobal(centre), QPoint(), QPoint(0, angle), Qt::NoButton, Qt::NoModifier,
                    Qt::NoScrollPhase, false);
  QApplication::sendEvent(widget, &wheel);
}

// `widget` is shown whole inside the window's own area, and not in a part that scrolls.
void verifyInSight(QWidget* widget, const MainWindow& window) {
  const QRect where(widget->mapTo(&window, QPoint(0, 0)), widget->size());
  const QString what = widget->objectName() + QLatin1Char(' ') + sizeText(where.size()) + QStringLiteral(" at ") +
                       QString::number(where.x()) + QLatin1Char(',') + QString::number(where.y());
  QVERIFY2(widget->isVisible(), qPrintable(what));
  QVERIFY2(window.rect().contains(where), qPrintable(what));
  for (const QWidget* up = widget; up != nullptr; up = up->parentWidget())
    QVERIFY2(qobject_cast<const QScrollArea*>(up) == nullptr, qPrintable(what + QStringLiteral(" scrolls")));
}

}  // namespace

class TestWindowFit : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void cleanup() { setLanguage(QStringLiteral("en")); }

  void fitsWithTheLessonsOpen_data() {
    QTest::addColumn<QString>("language");
    QTest::newRow("en") << QStringLiteral("en");
    QTest::newRow("zh_CN") << QStringLiteral("zh_CN");
  }

  void fitsWithTheLessonsOpen() {
    QFETCH(QString, language);
    QVERIFY(setLanguage(language));
    MainWindow window;
    window.lessonsDock()->show();
    window.lessons()->showLesson(0);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    QTest::qWait(50);  // the settings column re-fits its labels (queued)
    const QSize minimum = window.minimumSizeHint().expandedTo(window.minimumSize());
    qInfo("%s: minimum size with the lessons panel open %s", qPrintable(language), qPrintable(sizeText(minimum)));
    QVERIFY2(minimum.width() <= 1280 && minimum.height() <= 720, qPrintable(sizeText(minimum)));

    window.resize(1280, 720);
    QTest::qWait(50);
    QCOMPARE(window.size(), QSize(1280, 720));
    QVERIFY(window.lessonsDock()->isVisible());
    // Nothing squeezed under its own minimum, so no part is cut off.
    auto* settings = window.findChild<QScrollArea*>();
    QVERIFY(settings != nullptr);
    for (QWidget* part : {static_cast<QWidget*>(window.viewTabs()), static_cast<QWidget*>(window.memoryBars()),
                          static_cast<QWidget*>(window.lessonsDock()), static_cast<QWidget*>(settings)}) {
      const QString what = QString::fromLatin1(part->metaObject()->className()) + QLatin1Char(' ') +
                           sizeText(part->size()) + QStringLiteral(" < ") + sizeText(part->minimumSizeHint());
      QVERIFY2(part->width() >= part->minimumSizeHint().width(), qPrintable(what));
      QVERIFY2(part->height() >= part->minimumSizeHint().height(), qPrintable(what));
    }
    QVERIFY2(window.lessonsDock()->width() >= 280, qPrintable(sizeText(window.lessonsDock()->size())));
    verifyLegendInside(window.memoryBars()->plot(), language + QStringLiteral(" window at 1280x720"));
  }

  // Run, Pause, Step, Stop and the speed sit in a toolbar: in sight at
  // 1280×720 with the lessons open, whatever the settings column holds.
  void runControlsInSightAt1280x720() {
    for (const QString& language : {QStringLiteral("en"), QStringLiteral("zh_CN")}) {
      QVERIFY(setLanguage(language));
      MainWindow window;
      window.lessonsDock()->show();
      window.lessons()->showLesson(0);
      window.resize(1280, 720);
      window.show();
      QVERIFY(QTest::qWaitForWindowExposed(&window));
      QTest::qWait(50);
      QCOMPARE(window.size(), QSize(1280, 720));
      for (QWidget* control : {static_cast<QWidget*>(window.runButton()), static_cast<QWidget*>(window.stepButton()),
                               static_cast<QWidget*>(window.stopButton()), window.findChild<QWidget*>("pause"),
                               static_cast<QWidget*>(window.speedBox())})
        verifyInSight(control, window);
    }
  }

  // The window opens within the screen's free area, where its minimum fits.
  void opensFittingTheScreen() {
    MainWindow window;
    const QRect available = window.screen()->availableGeometry();
    const QSize minimum = window.minimumSizeHint();
    qInfo("screen %s, window %s", qPrintable(sizeText(available.size())), qPrintable(sizeText(window.size())));
    if (minimum.width() <= available.width() && minimum.height() <= available.height())
      QVERIFY2(available.contains(window.geometry()), qPrintable(sizeText(window.size())));
    QVERIFY(window.width() >= minimum.width() && window.height() >= minimum.height());
  }

  // Scrolling the settings column passes over fields: the wheel changes none
  // of them unless it has the focus.
  void wheelOverAnUnfocusedFieldChangesNothing() {
    MainWindow window;
    window.resize(1280, 720);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    auto* clock = window.configPanel()->findChild<QComboBox*>(QStringLiteral("clock"));
    auto* steps = window.configPanel()->findChild<QSpinBox*>(QStringLiteral("steps"));
    QVERIFY(clock != nullptr && steps != nullptr);
    QVERIFY(!clock->hasFocus() && !steps->hasFocus());
    const QString clockBefore = clock->currentData().toString();
    const int stepsBefore = steps->value();
    for (int angle : {-120, 120, -120}) {
      turnWheel(clock, angle);
      turnWheel(steps, angle);
    }
    QCOMPARE(clock->currentData().toString(), clockBefore);
    QCOMPARE(steps->value(), stepsBefore);
    QCOMPARE(window.findChild<QComboBox*>(QStringLiteral("language"))->focusPolicy(), Qt::StrongFocus);
    PlannerDialog planner;  // the memory planner's column of fields too
    const int nodes = planner.nodesBox()->value();
    turnWheel(planner.nodesBox(), 120);
    QCOMPARE(planner.nodesBox()->value(), nodes);
    QSpinBox plain;  // the same wheel turns an unguarded box: the event is a real one
    plain.setRange(0, 10);
    turnWheel(&plain, 120);
    QCOMPARE(plain.value(), 1);
  }

  // The settings fold by section; the memory bars and log hide, and the view takes their height.
  void settingsFoldAndTheViewTakesTheHeight() {
    MainWindow window;
    window.resize(1280, 720);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    ConfigPanel* panel = window.configPanel();
    auto* dp = panel->findChild<QSpinBox*>(QStringLiteral("dp"));
    QVERIFY(dp != nullptr && dp->isVisible());
    SettingsSection* layout = panel->section(ConfigPanel::Section::parallel_layout);
    QVERIFY(layout->isAncestorOf(dp));
    QVERIFY(panel->section(ConfigPanel::Section::precision)->isAncestorOf(panel->findChild<QWidget*>("precision")));
    QVERIFY(panel->section(ConfigPanel::Section::clock_and_device)->isAncestorOf(panel->findChild<QWidget*>("clock")));
    QVERIFY(panel->section(ConfigPanel::Section::model_and_data)->isAncestorOf(panel->findChild<QWidget*>("model")));
    layout->header()->click();
    QVERIFY(!layout->isExpanded() && !dp->isVisible());
    layout->header()->click();
    QVERIFY(layout->isExpanded() && dp->isVisible());

    const int tabsHeight = window.viewTabs()->height();
    QVERIFY(window.memoryAndLogAction()->isChecked() && window.memoryBars()->isVisible());
    window.memoryAndLogAction()->trigger();
    QTest::qWait(50);
    QVERIFY(!window.memoryBars()->isVisible() && !window.findChild<QPlainTextEdit*>("log")->isVisible());
    QVERIFY2(window.viewTabs()->height() > tabsHeight + 200,
             qPrintable(QStringLiteral("%1 -> %2").arg(tabsHeight).arg(window.viewTabs()->height())));
    window.memoryAndLogAction()->trigger();
    QVERIFY(window.memoryBars()->isVisible());
  }

  void memoryLegendIsNeverClipped() {
    for (const QString& language : {QStringLiteral("en"), QStringLiteral("zh_CN")}) {
      QVERIFY(setLanguage(language));
      for (QSize size : {QSize(360, 200), QSize(520, 240), QSize(900, 420)}) {
        MemoryBars bars;
        bars.setRankCount(4);
        bars.resize(size);
        bars.show();
        QVERIFY(QTest::qWaitForWindowExposed(&bars));
        verifyLegendInside(bars.plot(), language + QLatin1Char(' ') + sizeText(size));
      }
    }
  }

  void axisTitlesAndLogLevelsInChinese() {
    QVERIFY(setLanguage(QStringLiteral("zh_CN")));
    MainWindow window;
    const QString rank = window.memoryBars()->plot()->xAxis->label();
    QVERIFY2(rank != QStringLiteral("Rank") && rank.contains(QStringLiteral("编号")), qPrintable(rank));
    // A rank is a thread here and a process under mpirun (lesson 7): the axis says both.
    QVERIFY2(rank.contains(QStringLiteral("进程")) && rank.contains(QStringLiteral("线程")), qPrintable(rank));
    window.logger().info("{}", "x");
    window.logger().warn("{}", "y");
    const QString log = window.logText();
    QVERIFY2(log.contains(QStringLiteral(" 信息 x")) && log.contains(QStringLiteral(" 警告 y")), qPrintable(log));
    QVERIFY(setLanguage(QStringLiteral("en")));
    QTRY_COMPARE(window.memoryBars()->plot()->xAxis->label(), QStringLiteral("Rank"));
    window.logger().info("{}", "z");
    QVERIFY2(window.logText().contains(QStringLiteral(" info z")), qPrintable(window.logText()));
  }

  // The pictures to look at: the window at 1280×720 with the lessons open,
  // after a short run of the opening preset (dp 2 × pp 2) with accumulation.
  void screenshotsAt1280x720() {
    for (const QString& language : {QStringLiteral("en"), QStringLiteral("zh_CN")}) {
      QVERIFY(setLanguage(language));
      MainWindow window;
      window.lessonsDock()->show();
      window.lessons()->showLesson(0);
      window.resize(1280, 720);
      window.show();
      QVERIFY(QTest::qWaitForWindowExposed(&window));
      RunConfig c = ConfigPanel::defaultConfig();  // dp 2 x pp 2, 4 micro-batches
      c.steps = 4;
      c.batch = 16;
      c.seq = 32;
      c.accum = 2;  // the pipeline tab shows F0-F7 and says why its formula takes m = 4
      window.configPanel()->setConfig(c);
      window.startRun();
      QTRY_VERIFY_WITH_TIMEOUT(!window.controller()->busy(), 120000);
      QTest::qWait(100);
      QCOMPARE(window.size(), QSize(1280, 720));
      const QString name = language == QLatin1String("en") ? QStringLiteral("window_1280x720_en.png")
                                                          : QStringLiteral("window_1280x720_zh.png");
      const QString path = QDir(QCoreApplication::applicationDirPath()).filePath(name);
      QVERIFY(window.grab().save(path));
      qInfo("screenshot: %s", qPrintable(path));
      for (int tab = 1; tab < window.viewTabs()->count(); ++tab) {  // each view at the size it gets here
        window.viewTabs()->setCurrentIndex(tab);
        QTest::qWait(tab == 2 ? 1500 : 50);  // the ring replays its last step
        QVERIFY(window.grab().save(path.chopped(4) + QStringLiteral("_tab%1.png").arg(tab)));
      }
    }
  }
};

QTEST_MAIN(TestWindowFit)
#include "test_window_fit.moc"
