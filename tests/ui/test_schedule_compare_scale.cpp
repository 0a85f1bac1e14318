// SPDX-License-Identifier: GPL-3.0-or-later
// The Schedules tab on one time axis (issue 30, item 4), offscreen: every
// schedule's timeline is drawn against the longest step, so two schedules'
// drawn widths stand in the ratio of their measured steps (the API's rectangle
// and the painted pixels, within two pixels); a schedule the engine refuses for
// the layout shows the engine's reason, in Chinese under the zh_CN interface.
// Each cell draws a steady step, the last of kSteps, not the first (which also
// allocates the buffers): its events' step index, its bubble and its peaks.
// A small layout (gpt-tiny pp 2, 3 micro-batches of 2 × 32 tokens): interleaved
// 1F1B needs the micro-batches a multiple of pp, so it is refused.
#include <QCoreApplication>
#include <QImage>
#include <QLabel>
#include <QtTest>
#include <algorithm>
#include <cmath>

#include "config_panel.h"
#include "i18n.h"
#include "views/pipeline_timeline.h"
#include "views/schedule_compare.h"

using namespace shardscope;
using namespace shardscope::ui;

namespace {

RunConfig smallLayout() {
  RunConfig c = ConfigPanel::defaultConfig();
  c.layout[Axis::dp] = 1;
  c.layout[Axis::pp] = 2;
  c.micro_batches = 3;
  c.batch = 6;
  c.seq = 32;
  return c;
}

// The rightmost painted pixel (not the canvas's background) on the row through y, or -1.
int rightmostPainted(const QImage& image, int y, QRgb background) {
  for (int x = image.width() - 1; x >= 0; --x)
    if (image.pixel(x, y) != background) return x;
  return -1;
}

}  // namespace

class TestScheduleCompareScale : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void initTestCase() { QVERIFY(setLanguage(QStringLiteral("en"))); }

  void timelinesShareOneTimeAxis() {
    ScheduleCompareView view;
    view.resize(1280, 640);
    view.show();
    view.compare(smallLayout());
    QTRY_VERIFY_WITH_TIMEOUT(view.finished(), 120000);
    const ScheduleCompareView::Cell* longest = nullptr;
    const ScheduleCompareView::Cell* shortest = nullptr;
    for (const auto& cell : view.cells()) {
      if (!cell.done) continue;
      QVERIFY2(cell.step_ns > 0, qPrintable(cell.key));
      if (longest == nullptr || cell.step_ns > longest->step_ns) longest = &cell;
      if (shortest == nullptr || cell.step_ns < shortest->step_ns) shortest = &cell;
    }
    QVERIFY(longest != nullptr && shortest != nullptr && longest != shortest);
    QCOMPARE(view.timeSpan(), longest->step_ns);
    QCoreApplication::processEvents();
    const QRectF wide = longest->timeline->stepRect(), narrow = shortest->timeline->stepRect();
    const double ratio = static_cast<double>(shortest->step_ns) / static_cast<double>(longest->step_ns);
    qInfo("%s %.3f ms drawn %.1f px, %s %.3f ms drawn %.1f px (ratio %.3f)", qPrintable(longest->key),
          static_cast<double>(longest->step_ns) / 1e6, wide.width(), qPrintable(shortest->key),
          static_cast<double>(shortest->step_ns) / 1e6, narrow.width(), ratio);
    QVERIFY(wide.width() > 100);
    QVERIFY2(std::abs(narrow.width() - ratio * wide.width()) <= 2.0, qPrintable(QString::number(narrow.width())));
    // The pixels agree: each step's rows end where its rectangle ends.
    for (const ScheduleCompareView::Cell* cell : {longest, shortest}) {
      QWidget* canvas = cell->timeline->canvas();
      const QImage image = canvas->grab().toImage();
      const QRectF r = cell->timeline->stepRect();
      const int y = static_cast<int>(r.top() + r.height() / (2 * cell->timeline->stages()));  // stage 0's middle
      const int right = rightmostPainted(image, y, canvas->palette().base().color().rgb());
      QVERIFY2(std::abs(right + 1 - r.right()) <= 2.0,
               qPrintable(cell->key + QStringLiteral(": painted to %1, step ends at %2").arg(right).arg(r.right())));
    }
  }

  // The step drawn is the last trained, never the first: the boxes drawn carry its step index, the
  // first step's boxes are there but not drawn, and the length and bubble are the drawn step's.
  void eachCellDrawsTheLastStep() {
    ScheduleCompareView view;
    view.compare(smallLayout());
    QTRY_VERIFY_WITH_TIMEOUT(view.finished(), 120000);
    int drawn = 0;
    for (const auto& cell : view.cells()) {
      if (!cell.done) continue;
      ++drawn;
      QCOMPARE(cell.config.steps, ScheduleCompareView::kSteps);
      QVERIFY(ScheduleCompareView::kSteps >= 2);
      QCOMPARE(cell.step, static_cast<std::int64_t>(ScheduleCompareView::kSteps));
      QCOMPARE(cell.timeline->shownStep(), cell.step);
      QVERIFY2(!cell.timeline->boxes(cell.step).empty(), qPrintable(cell.key));
      QVERIFY2(!cell.timeline->boxes(1).empty(), qPrintable(cell.key));  // trained, not drawn
      const auto [first, last] = cell.timeline->stepExtent(cell.step);
      QCOMPARE(cell.step_ns, last - first);
      const auto [first1, last1] = cell.timeline->stepExtent(1);
      QVERIFY(first > last1);  // the drawn step starts after the first one ended
      const ScheduleSummary summary = cell.timeline->summary(cell.step);
      QVERIFY(summary.bubble.has_value());
      QCOMPARE(cell.idle, summary.bubble->idle);
      QCOMPARE(static_cast<int>(cell.peak_activations.size()), 2);
      for (std::int64_t bytes : cell.peak_activations) QVERIFY(bytes > 0);
      qInfo("%s: drawn step %lld of %d, %.3f ms (first step %.3f ms), idle %.1f%%", qPrintable(cell.key),
            static_cast<long long>(cell.step), ScheduleCompareView::kSteps, static_cast<double>(cell.step_ns) / 1e6,
            static_cast<double>(last1 - first1) / 1e6, 100 * cell.idle);
    }
    QVERIFY(drawn >= 2);
  }

  void refusalShowsInTheInterfaceLanguage() {
    ScheduleCompareView view;
    view.compare(smallLayout());
    QTRY_VERIFY_WITH_TIMEOUT(view.finished(), 120000);
    const auto it = std::find_if(view.cells().begin(), view.cells().end(),
                                 [](const auto& c) { return c.key == QStringLiteral("interleaved-1f1b"); });
    QVERIFY(it != view.cells().end());
    QVERIFY(!it->done);
    QVERIFY2(it->summary->text().contains(QStringLiteral("multiple of --pp")), qPrintable(it->summary->text()));
    QVERIFY(setLanguage(QStringLiteral("zh_CN")));
    QCoreApplication::processEvents();
    const QString zh = it->summary->text();
    QVERIFY2(zh.startsWith(QStringLiteral("此布局下未运行")) && zh.contains(QStringLiteral("的倍数")) &&
                 zh.contains(QStringLiteral("流水线")) && !zh.contains(QStringLiteral("needs")),
             qPrintable(zh));
    QCOMPARE(view.refusalText(*it), it->refused_zh);
    QVERIFY(setLanguage(QStringLiteral("en")));
    QCoreApplication::processEvents();
    QVERIFY(it->summary->text().contains(QStringLiteral("multiple of --pp")));
  }
};

QTEST_MAIN(TestScheduleCompareScale)
#include "test_schedule_compare_scale.moc"
