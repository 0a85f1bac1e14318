// SPDX-License-Identifier: GPL-3.0-or-later
// UI responsiveness while a run animates every view (docs/PERFORMANCE.md,
// "UI responsiveness"). In one process, alternating R times:
//   headless: Trainer::step() in a loop (as shardscope-cli train, no recording);
//   GUI:      the same config from a MainWindow (all views, the tabs cycled
//             every 200 ms so each one paints), real-time playback speed.
// Reported:
//   event-loop latency: a helper thread posts a timestamp to the GUI thread
//     every 5 ms; latency = time until the GUI thread runs it (median, p99);
//   frame interval: time between consecutive paints of the visible view;
//   training slowdown: median step time (the engine's own step_metrics) of
//     the GUI run / of the headless run, per repetition, then the median.
//   headless+events: as headless, the events going into an EventQueue that a
//     plain thread drains (the engine's own cost of emitting them);
//   GUI thread CPU: its CPU time / the GUI run's wall time.
//   QT_QPA_PLATFORM=offscreen bench_ui [--steps 30] [--reps 3] [--model gpt-tiny] [--batch 16] [--seq 64]
//                                      [--cycle-tabs 1|0]
#include <time.h>

#include <QApplication>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QTabWidget>
#include <QTimer>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "config_panel.h"
#include "events/event_queue.h"
#include "main_window.h"
#include "run_controller.h"
#include "train/trainer.h"

using namespace shardscope;
using namespace shardscope::ui;

namespace {

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const auto i = static_cast<std::size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Median step time (ms) of a headless run: the Trainer alone, no event sink.
double headlessRun(const RunConfig& config, int warmup) {
  Trainer trainer(config);
  std::vector<double> ms;
  while (trainer.steps_done() < config.steps) {
    const StepMetrics m = trainer.step();
    if (m.step > warmup) ms.push_back(m.step_time_s * 1e3);
  }
  return percentile(ms, 0.5);
}

// The same, with every event emitted into the engine's EventQueue, drained
// every 16 ms by a plain thread and thrown away: the engine's share of the
// GUI run's cost (the events), without any Qt.
double headlessWithEventsRun(const RunConfig& config, int warmup) {
  EventQueue queue;
  std::atomic<bool> draining{true};
  std::thread drainer([&] {
    std::vector<Event> batch;
    while (draining) {
      batch.clear();
      queue.drain(batch, 200000);
      std::this_thread::sleep_for(std::chrono::milliseconds(16));
    }
  });
  std::vector<double> ms;
  {
    Trainer trainer(config, &queue);
    while (trainer.steps_done() < config.steps) {
      const StepMetrics m = trainer.step();
      if (m.step > warmup) ms.push_back(m.step_time_s * 1e3);
    }
  }
  draining = false;
  drainer.join();
  return percentile(ms, 0.5);
}

// Paints of any widget inside the tab widget's current page: one frame per
// burst (paints within 2 ms of each other are one frame).
class FrameCounter : public QObject {
 public:
  explicit FrameCounter(QTabWidget* tabs) : tabs_(tabs) {}
  std::vector<double> intervals_ms;
  bool active = false;

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override {
    if (active && event->type() == QEvent::Paint && watched->isWidgetType()) {
      QWidget* page = tabs_->currentWidget();
      auto* w = static_cast<QWidget*>(watched);
      if (page != nullptr && (w == page || page->isAncestorOf(w))) {
        const std::int64_t t = now_ns();
        if (last_ > 0 && t - last_ > 2'000'000) intervals_ms.push_back(static_cast<double>(t - last_) / 1e6);
        if (last_ == 0 || t - last_ > 2'000'000) last_ = t;
      }
    }
    return false;
  }

 private:
  QTabWidget* tabs_;
  std::int64_t last_ = 0;
};

double threadCpuMs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

bool g_cycle_tabs = true;

struct GuiResult {
  double step_ms = 0;
  double gui_cpu_share = 0;  // GUI thread CPU time / wall time of the run
  std::vector<double> latency_ms;
  std::vector<double> frame_ms;
};

GuiResult guiRun(const RunConfig& config, int warmup) {
  GuiResult result;
  MainWindow window;
  window.resize(1400, 900);
  window.show();
  window.configPanel()->setConfig(config);
  QTabWidget* tabs = window.viewTabs();
  FrameCounter frames(tabs);
  qApp->installEventFilter(&frames);
  QTimer cycle;
  cycle.setInterval(200);
  QObject::connect(&cycle, &QTimer::timeout,
                   [tabs] { tabs->setCurrentIndex((tabs->currentIndex() + 1) % tabs->count()); });

  std::vector<double> step_ms;
  const double tokens = static_cast<double>(config.batch) * config.seq;
  QObject::connect(window.controller(), &RunController::eventsDrained, [&](const std::vector<Event>& events) {
    for (const Event& e : events)
      if (e.kind == EventKind::step_metrics && e.step > warmup && e.tokens_per_s > 0)
        step_ms.push_back(tokens / static_cast<double>(e.tokens_per_s) * 1e3);
  });

  std::atomic<bool> probing{true};
  QObject receiver;
  std::thread prober([&] {
    while (probing) {
      const std::int64_t posted = now_ns();
      QMetaObject::invokeMethod(
          &receiver, [&result, posted] { result.latency_ms.push_back(static_cast<double>(now_ns() - posted) / 1e6); },
          Qt::QueuedConnection);
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  });
  frames.active = true;
  if (g_cycle_tabs) cycle.start();
  const double cpu0 = threadCpuMs();
  QElapsedTimer wall;
  wall.start();
  QEventLoop loop;  // a real event loop, as the app's: it sleeps until something happens
  QObject::connect(window.controller(), &RunController::runFinished, &loop, &QEventLoop::quit);
  window.startRun();
  loop.exec();
  result.gui_cpu_share = (threadCpuMs() - cpu0) / static_cast<double>(std::max<qint64>(1, wall.elapsed()));
  probing = false;
  prober.join();
  cycle.stop();
  frames.active = false;
  QCoreApplication::processEvents();  // the last probes
  qApp->removeEventFilter(&frames);
  result.frame_ms = frames.intervals_ms;
  result.step_ms = percentile(step_ms, 0.5);
  return result;
}

}  // namespace

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  RunConfig config = ConfigPanel::defaultConfig();
  int steps = 30, reps = 3;
  const int warmup = 2;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i], v = argv[i + 1];
    if (a == "--steps")
      steps = std::stoi(v);
    else if (a == "--reps")
      reps = std::stoi(v);
    else if (a == "--model")
      config.model = v;
    else if (a == "--batch")
      config.batch = std::stoi(v);
    else if (a == "--seq")
      config.seq = std::stoi(v);
    else if (a == "--cycle-tabs")
      g_cycle_tabs = v != "0";
    else {
      std::fprintf(stderr, "unknown argument %s\n", a.c_str());
      return 2;
    }
  }
  config.steps = steps + warmup;
  std::printf("config: %s, batch %d x seq %d, dp %d x pp %d, %d micro-batches, %lld steps (+%d warm-up), %d reps\n",
              config.model.c_str(), config.batch, config.seq, config.layout.dp(), config.layout.pp(),
              config.micro_batches, static_cast<long long>(steps), warmup, reps);
  std::vector<double> ratios, event_ratios, latency, frame;
  for (int r = 0; r < reps; ++r) {
    const double headless = headlessRun(config, warmup);
    const double with_events = headlessWithEventsRun(config, warmup);
    const GuiResult gui = guiRun(config, warmup);
    ratios.push_back(gui.step_ms / headless);
    event_ratios.push_back(with_events / headless);
    latency.insert(latency.end(), gui.latency_ms.begin(), gui.latency_ms.end());
    frame.insert(frame.end(), gui.frame_ms.begin(), gui.frame_ms.end());
    std::printf(
        "rep %d: step median headless %.1f ms, headless+events %.1f ms, GUI %.1f ms (x%.3f); latency median %.2f p99 "
        "%.2f ms (%zu "
        "probes); frame interval median %.1f p99 %.1f ms (%zu frames); GUI thread CPU %.0f%%\n",
        r + 1, headless, with_events, gui.step_ms, gui.step_ms / headless, percentile(gui.latency_ms, 0.5),
        percentile(gui.latency_ms, 0.99), gui.latency_ms.size(), percentile(gui.frame_ms, 0.5),
        percentile(gui.frame_ms, 0.99), gui.frame_ms.size(), gui.gui_cpu_share * 100);
  }
  std::printf("event-loop latency: median %.2f ms, p99 %.2f ms (target p99 < 50 ms)\n", percentile(latency, 0.5),
              percentile(latency, 0.99));
  std::printf("frame interval: median %.1f ms, p99 %.1f ms\n", percentile(frame, 0.5), percentile(frame, 0.99));
  std::printf("headless with events / headless: median x%.3f\n", percentile(event_ratios, 0.5));
  std::printf("training slowdown GUI / headless: median x%.3f (%+.1f%%; target < +10%%)\n", percentile(ratios, 0.5),
              (percentile(ratios, 0.5) - 1) * 100);
  return 0;
}
