// SPDX-License-Identifier: GPL-3.0-or-later
// Comparing two runs, offscreen: "Pin this run" keeps the run's loss curve and
// memory peaks through the next runs (drawn beside them, labelled), unpinning
// clears them; a lesson that compares two runs offers "Pin, then try ...",
// which pins the run on screen and loads the second. Screenshots of the
// comparison at 1280×720 go to the build folder (compare_loss.png, compare_memory.png).
#include <QAction>
#include <QCoreApplication>
#include <QDir>
#include <QPushButton>
#include <QTabWidget>
#include <QtTest>

#include "config_panel.h"
#include "lessons.h"
#include "main_window.h"
#include "views/loss_plot.h"
#include "views/memory_bars.h"

using namespace shardscope;
using namespace shardscope::ui;

namespace {

RunConfig accumulationRun(int accum) {
  RunConfig c = ConfigPanel::defaultConfig();
  c.model = "gpt-tiny";
  c.steps = 4;
  c.batch = 16;
  c.seq = 32;
  c.layout = {};
  c.micro_batches = 1;
  c.accum = accum;
  c.eval_every = 0;
  return c;
}

bool runToEnd(MainWindow& window, const RunConfig& c) {
  window.configPanel()->setConfig(c);
  if (!window.configPanel()->problem().isEmpty()) return false;
  window.runButton()->click();
  return QTest::qWaitFor([&] { return !window.controller()->busy(); }, 60000);
}

}  // namespace

class TestCompareRuns : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void pinnedRunSurvivesTheNextRuns() {
    MainWindow window;
    window.resize(1280, 720);
    window.show();
    QVERIFY(!window.pinAction()->isChecked());
    QVERIFY(runToEnd(window, accumulationRun(4)));
    const std::vector<std::pair<double, double>> first = window.lossPlot()->trainPoints();
    const MemoryBytes first_memory = window.memoryBars()->bytes(0);
    QCOMPARE(static_cast<int>(first.size()), 4);
    window.pinAction()->trigger();
    QVERIFY(window.pinAction()->isChecked());
    QVERIFY(window.lossPlot()->pinned());
    QVERIFY(window.memoryBars()->pinned());

    QVERIFY(runToEnd(window, accumulationRun(1)));
    QCOMPARE(window.lossPlot()->previousPointCount(), 4);  // the pinned curve, beside the new one
    QVERIFY(window.lossPlot()->previousName().contains(QStringLiteral("Pinned run")));
    QVERIFY(window.lossPlot()->previousName().contains(QStringLiteral("4 accumulation steps")));
    QCOMPARE(window.lossPlot()->trainPointCount(), 4);
    // Bars side by side: the pinned run's peaks and this run's, labelled in the title.
    for (MemoryCategory cat : kAllMemoryCategories)
      QCOMPARE(window.memoryBars()->pinnedBytes(0)[cat], first_memory[cat]);
    QVERIFY(window.memoryBars()->bytes(0).total() > 0);
    QVERIFY(window.memoryBars()->bytes(0)[MemoryCategory::activations] >
            first_memory[MemoryCategory::activations]);  // a 4× larger micro-batch
    QVERIFY(window.memoryBars()->title().contains(QStringLiteral("pinned run")));
    QVERIFY(window.memoryBars()->pinNote().contains(QStringLiteral("4 accumulation steps")));
    saveScreenshots(window);

    QVERIFY(runToEnd(window, accumulationRun(2)));  // a third run: the pin stays
    QCOMPARE(window.lossPlot()->previousPointCount(), 4);
    QCOMPARE(window.memoryBars()->pinnedBytes(0).total(), first_memory.total());

    window.pinAction()->trigger();  // unpin
    QVERIFY(!window.lossPlot()->pinned());
    QCOMPARE(window.lossPlot()->previousPointCount(), 0);
    QVERIFY(!window.memoryBars()->pinned());
    QCOMPARE(window.memoryBars()->pinnedBytes(0).total(), std::int64_t{0});
  }

  void comparingLessonsPinTheFirstRun() {
    MainWindow window;
    window.show();
    LessonsPanel* lessons = window.lessons();
    for (const char* id :
         {"gradient_accumulation", "activation_checkpointing", "ddp_vs_dataparallel", "pipeline_bubbles", "zero_stages",
          "tensor_parallelism", "sequence_parallelism", "context_parallelism", "mixture_of_experts"}) {
      int index = -1;
      for (std::size_t i = 0; i < lessons->lessons().size(); ++i)
        if (lessons->lessons()[i].id == QLatin1String(id)) index = static_cast<int>(i);
      QVERIFY2(index >= 0, id);
      QVERIFY2(lessons->lessons()[static_cast<std::size_t>(index)].compare.has_value(), id);
    }
    int accumulation = 0;
    while (lessons->lessons()[static_cast<std::size_t>(accumulation)].id != QLatin1String("gradient_accumulation"))
      ++accumulation;
    lessons->showLesson(accumulation);
    QVERIFY(!lessons->compareButton()->isHidden());
    QVERIFY(lessons->compareButton()->text().contains(QStringLiteral("--accum 1")));
    RunConfig short_run = lessons->lessons()[static_cast<std::size_t>(accumulation)].config;
    short_run.steps = 2;
    short_run.seq = 16;
    QVERIFY(runToEnd(window, short_run));
    lessons->compareButton()->click();
    QVERIFY(window.lossPlot()->pinned());
    QVERIFY(window.pinAction()->isChecked());
    QCOMPARE(window.configPanel()->config().accum, 1);
  }

 private:
  static void saveScreenshots(MainWindow& window) {
    const QDir dir(QCoreApplication::applicationDirPath());
    window.viewTabs()->setCurrentWidget(window.lossPlot());
    QCoreApplication::processEvents();
    window.lossPlot()->replot();
    window.grab().save(dir.filePath(QStringLiteral("compare_loss.png")));
    window.memoryBars()->replot();
    window.memoryBars()->grab().save(dir.filePath(QStringLiteral("compare_memory.png")));
  }
};

QTEST_MAIN(TestCompareRuns)
#include "test_compare_runs.moc"
