// SPDX-License-Identifier: GPL-3.0-or-later
// Recordings in the GUI, offscreen: a run started from the window with
// recording on writes a .ssrun; opening it in a fresh window shows the same
// loss points, memory bars and pipeline boxes as the live run; the time
// slider scrubs; a damaged file is refused with its name and the views kept;
// the Chrome trace export; the run config survives its JSON round trip.
#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QLabel>
#include <QSlider>
#include <QtTest>

#include <nlohmann/json.hpp>

#include "config_panel.h"
#include "core/error.h"
#include "events/recording.h"
#include "main_window.h"
#include "views/qcustomplot_include.h"
#include "recording_controller.h"
#include "train/metrics_json.h"
#include "views/loss_plot.h"
#include "views/memory_bars.h"
#include "views/pipeline_timeline.h"

using namespace shardscope;
using shardscope::ui::ConfigPanel;
using shardscope::ui::MainWindow;
using shardscope::ui::PipelineTimelineView;

namespace {

struct Shown {
  std::vector<std::pair<double, double>> loss;
  std::vector<MemoryBytes> memory;
  std::int64_t timeline_step = 0;
  std::size_t timeline_boxes = 0;
};

Shown shown(const MainWindow& window) {
  Shown s;
  const QCPGraph* train = window.lossPlot()->plot()->graph(0);
  for (auto it = train->data()->constBegin(); it != train->data()->constEnd(); ++it) s.loss.emplace_back(it->key, it->value);
  for (int r = 0; r < window.memoryBars()->rankCount(); ++r) s.memory.push_back(window.memoryBars()->bytes(r));
  auto* timeline = window.findChild<PipelineTimelineView*>();
  if (timeline != nullptr) {
    s.timeline_step = timeline->lastCompletedStep();
    s.timeline_boxes = timeline->boxes(s.timeline_step).size();
  }
  return s;
}

}  // namespace

class TestRecording : public QObject {
  Q_OBJECT

 private:
  static QString tempPath(const QString& name) { return QDir(QCoreApplication::applicationDirPath()).filePath(name); }
  QString recording_;
  Shown live_;

 private Q_SLOTS:
  void initTestCase() {
    recording_ = tempPath(QStringLiteral("test_recording_gui.ssrun"));
    QFile::remove(recording_);
    MainWindow window;
    RunConfig c = ConfigPanel::defaultConfig();
    c.steps = 4;
    c.batch = 8;
    c.seq = 32;
    c.micro_batches = 4;
    window.configPanel()->setConfig(c);
    window.recorder()->setRecordPath(recording_);
    QTest::mouseClick(window.runButton(), Qt::LeftButton);
    QVERIFY(window.recorder()->recording());
    QVERIFY(!QFile::exists(recording_));  // written beside it until the run ends
    QTRY_VERIFY_WITH_TIMEOUT(!window.controller()->busy(), 120000);
    QVERIFY2(!window.statusText().startsWith(QStringLiteral("Run failed")), qPrintable(window.statusText()));
    QVERIFY(!window.recorder()->recording());
    QCOMPARE(window.recorder()->lastRecordingPath(), recording_);
    QVERIFY2(window.logText().contains(recording_), qPrintable(window.logText()));
    QVERIFY(!QFile::exists(recording_ + QStringLiteral(".part")));
    live_ = shown(window);
    QCOMPARE(static_cast<int>(live_.loss.size()), 4);
    QCOMPARE(static_cast<int>(live_.memory.size()), 4);
    QVERIFY(live_.timeline_step >= 1);
    QVERIFY(live_.timeline_boxes > 0);
  }

  void fileHoldsTheRun() {
    QVERIFY(QFile::exists(recording_));
    RecordingReader reader;
    reader.open(recording_.toStdString());
    std::vector<std::int64_t> steps;
    for (const Event& e : reader.read_all())
      if (e.kind == EventKind::step_metrics) steps.push_back(e.step);
    QCOMPARE(steps, (std::vector<std::int64_t>{1, 2, 3, 4}));
    const RunConfig c = run_config_from_json(nlohmann::json::parse(reader.metadata_json()));
    QCOMPARE(c.steps, std::int64_t{4});
    QCOMPARE(c.layout.dp(), 2);
    QCOMPARE(c.layout.pp(), 2);
  }

  void openShowsTheSameViews() {
    MainWindow window;
    QVERIFY(!window.replaySlider()->isVisibleTo(&window));
    QVERIFY(window.openRecording(recording_));
    QVERIFY(window.replaySlider()->isVisibleTo(&window));
    const Shown replay = shown(window);
    QCOMPARE(replay.loss, live_.loss);
    QCOMPARE(replay.memory.size(), live_.memory.size());
    for (std::size_t r = 0; r < live_.memory.size(); ++r)
      for (MemoryCategory c : kAllMemoryCategories)
        QVERIFY2(replay.memory[r][c] == live_.memory[r][c],
                 qPrintable(QStringLiteral("rank %1 %2: replay %3, live %4")
                                .arg(r)
                                .arg(QString::fromLatin1(memory_category_name(c).data()))
                                .arg(replay.memory[r][c])
                                .arg(live_.memory[r][c])));
    QCOMPARE(replay.timeline_step, live_.timeline_step);
    QCOMPARE(replay.timeline_boxes, live_.timeline_boxes);
    QVERIFY2(window.statusText().contains(recording_), qPrintable(window.statusText()));
  }

  void sliderScrubs() {
    MainWindow window;
    QVERIFY(window.openRecording(recording_));
    QSlider* slider = window.replaySlider();
    QCOMPARE(slider->minimum(), 0);
    QCOMPARE(slider->value(), slider->maximum());
    QCOMPARE(window.replayTimeNs(slider->maximum()), window.recorder()->lastTimeNs());
    QCOMPARE(window.lossPlot()->trainPointCount(), 4);
    slider->setValue(slider->maximum() / 2);
    QVERIFY2(window.lossPlot()->trainPointCount() < 4, qPrintable(QString::number(window.lossPlot()->trainPointCount())));
    slider->setValue(0);
    QCOMPARE(window.lossPlot()->trainPointCount(), 0);
    slider->setValue(slider->maximum());
    QCOMPARE(window.lossPlot()->trainPointCount(), 4);
    QCOMPARE(shown(window).loss, live_.loss);
    QCOMPARE(shown(window).timeline_boxes, live_.timeline_boxes);
  }

  void corruptFileIsRefused() {
    MainWindow window;
    QVERIFY(window.openRecording(recording_));
    const Shown before = shown(window);

    // Not a recording at all.
    const QString text = tempPath(QStringLiteral("test_recording_not_a_run.ssrun"));
    {
      QFile f(text);
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write("this is not a ShardScope recording\n");
    }
    QVERIFY(!window.openRecording(text));
    QVERIFY2(window.statusText().contains(text), qPrintable(window.statusText()));
    QVERIFY2(window.logText().contains(text), qPrintable(window.logText()));

    // A damaged record: an unknown event kind in the second record.
    const QString damaged = tempPath(QStringLiteral("test_recording_damaged.ssrun"));
    QFile::remove(damaged);
    QVERIFY(QFile::copy(recording_, damaged));
    {
      RecordingReader reader;
      reader.open(recording_.toStdString());
      const qint64 offset = kRecordingHeaderSize + static_cast<qint64>(reader.metadata_json().size()) + kRecordSize;
      QFile f(damaged);
      QVERIFY(f.open(QIODevice::ReadWrite));
      QVERIFY(f.seek(offset));
      f.write("\xff", 1);
    }
    QVERIFY(!window.openRecording(damaged));
    QVERIFY2(window.statusText().contains(damaged), qPrintable(window.statusText()));
    QVERIFY2(window.statusText().contains(QStringLiteral("byte ")), qPrintable(window.statusText()));

    // The views and the opened recording are as they were.
    const Shown after = shown(window);
    QCOMPARE(after.loss, before.loss);
    QCOMPARE(after.timeline_boxes, before.timeline_boxes);
    QCOMPARE(after.memory.size(), before.memory.size());
    for (std::size_t r = 0; r < before.memory.size(); ++r)
      for (MemoryCategory c : kAllMemoryCategories) QCOMPARE(after.memory[r][c], before.memory[r][c]);
    QCOMPARE(window.recorder()->openedPath(), recording_);
    QVERIFY(window.replaySlider()->isVisibleTo(&window));
  }

  void exportsChromeTrace() {
    MainWindow window;
    const QString trace = tempPath(QStringLiteral("test_recording_trace.json"));
    QFile::remove(trace);
    QVERIFY(!window.exportChromeTrace(trace));  // nothing opened or recorded yet
    QVERIFY(!QFile::exists(trace));
    QVERIFY(window.openRecording(recording_));
    QVERIFY(window.exportChromeTrace(trace));
    QVERIFY(!QFile::exists(trace + QStringLiteral(".tmp")));
    QFile f(trace);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const auto json = nlohmann::json::parse(f.readAll().toStdString());
    QVERIFY(json.contains("traceEvents"));
    QVERIFY(json["traceEvents"].size() > 10);
    // An unwritable destination: refused with the path, no crash.
    const QString bad = tempPath(QStringLiteral("no_such_dir/trace.json"));
    QVERIFY(!window.exportChromeTrace(bad));
    QVERIFY2(window.statusText().contains(bad), qPrintable(window.statusText()));
  }

  // A GPU run's memory samples carry the device's figures: the memory view
  // puts a line per rank under the bars. The CPU run recorded above has none.
  void deviceFiguresShowBesideTheLedger() {
    MainWindow cpu;
    QVERIFY(cpu.openRecording(recording_));
    QVERIFY(cpu.memoryBars()->deviceText().isEmpty());
    auto* note = cpu.memoryBars()->findChild<QLabel*>(QStringLiteral("deviceMemoryNote"));
    QVERIFY(note != nullptr);
    QVERIFY(!note->isVisibleTo(cpu.memoryBars()));

    const QString gpu_run = tempPath(QStringLiteral("test_recording_gpu.ssrun"));
    QFile::remove(gpu_run);
    RunConfig c = ConfigPanel::defaultConfig();
    c.layout[Axis::dp] = c.layout[Axis::pp] = 1;  // a cuda run trains one rank for now
    c.device = "cuda";
    constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
    {
      RecordingWriter writer(gpu_run.toStdString(), run_config_to_json(c).dump());
      for (int step = 1; step <= 2; ++step) {
        const int rank = 0;
        Event m;
        m.kind = EventKind::memory_sample;
        m.rank = rank;
        m.step = step;
        m.memory[static_cast<std::size_t>(MemoryCategory::parameters)] = static_cast<std::int64_t>(4.8 * kGiB);
        m.memory[static_cast<std::size_t>(MemoryCategory::activations)] = static_cast<std::int64_t>(5.0 * kGiB);
        m.device = 0;
        m.device_used_bytes = static_cast<std::int64_t>(12.3 * kGiB);
        m.device_total_bytes = static_cast<std::int64_t>(139.8 * kGiB);
        m.device_reserved_bytes = static_cast<std::int64_t>((8.1 + step) * kGiB);  // the latest sample counts
        writer.emit(m);
      }
    }
    MainWindow window;
    QVERIFY2(window.openRecording(gpu_run), qPrintable(window.statusText()));
    const QString text = window.memoryBars()->deviceText();
    QVERIFY2(text.contains(QStringLiteral("GPU 0 (rank 0): 12.3 GiB of 140 GiB in use (cudaMemGetInfo); "
                                          "allocator holds 10.1 GiB; ledger 9.80 GiB")),
             qPrintable(text));
    QCOMPARE(text.count(QStringLiteral("GPU ")), 1);
    QVERIFY(window.findChild<QLabel*>(QStringLiteral("deviceMemoryNote"))->isVisibleTo(window.memoryBars()));
    // A line per rank (CPU-simulated ranks sharing GPU 0 here; the view does
    // not mind); under 1 GiB in MiB, so a small run does not read 0.00 GiB.
    DeviceUsage second{0, static_cast<std::int64_t>(37.5 * 1024 * 1024), static_cast<std::int64_t>(139.8 * kGiB),
                       static_cast<std::int64_t>(2.5 * kGiB)};
    window.memoryBars()->setDeviceUsage(1, second);
    window.memoryBars()->replot();
    QVERIFY2(window.memoryBars()->deviceText().endsWith(
                 QStringLiteral("\nGPU 0 (rank 1): 37.5 MiB of 140 GiB in use (cudaMemGetInfo); allocator holds "
                                "2.50 GiB; ledger 0 B")),
             qPrintable(window.memoryBars()->deviceText()));
    // Opening the CPU run again clears the lines.
    QVERIFY(window.openRecording(recording_));
    QVERIFY2(window.memoryBars()->deviceText().isEmpty(), qPrintable(window.memoryBars()->deviceText()));
  }

  void runConfigJsonRoundTrip() {
    RunConfig c;
    c.model = "gpt-small";
    c.steps = 77;
    c.batch = 24;
    c.seq = 48;
    c.lr = 3e-4f;
    c.min_lr_ratio = 0.25f;
    c.warmup = 7;
    c.weight_decay = 0.05f;
    c.grad_clip = 0.5f;
    c.seed = 42;
    c.data = "/tmp/some corpus.txt";
    c.eval_every = 5;
    c.eval_batches = 3;
    c.layout[Axis::dp] = 3;
    c.layout[Axis::pp] = 2;
    c.micro_batches = 2;
    c.schedule = PipelineScheduleKind::gpipe;
    c.dp_mode = DataParallelMode::naive;
    c.zero_stage = 2;
    c.accum = 2;
    c.checkpoint = true;
    c.bucket_mb = 12.5;
    const nlohmann::json j = run_config_to_json(c);
    const RunConfig back = run_config_from_json(j);
    QVERIFY2(run_config_to_json(back) == j, (run_config_to_json(back).dump() + "\n != \n" + j.dump()).c_str());
    QCOMPARE(back.data, c.data);
    QVERIFY(back.checkpoint);
    QVERIFY(back.dp_mode == DataParallelMode::naive);
    // The default corpus is stored as a placeholder and comes back empty.
    QCOMPARE(run_config_from_json(run_config_to_json(RunConfig{})).data, std::string());
    QVERIFY(run_config_to_json(run_config_from_json(run_config_to_json(RunConfig{}))) == run_config_to_json(RunConfig{}));

    // Malformed: the message names the key.
    auto expectKey = [&](nlohmann::json bad, const std::string& key) {
      try {
        run_config_from_json(bad);
        QFAIL(("accepted bad " + key).c_str());
      } catch (const ConfigError& e) {
        QVERIFY2(std::string(e.what()).find("\"" + key + "\"") != std::string::npos, e.what());
      }
    };
    nlohmann::json missing = j;
    missing.erase("dp");
    expectKey(missing, "dp");
    nlohmann::json wrongType = j;
    wrongType["steps"] = "many";
    expectKey(wrongType, "steps");
    nlohmann::json badSchedule = j;
    badSchedule["schedule"] = "zigzag";
    expectKey(badSchedule, "schedule");
    nlohmann::json badMode = j;
    badMode["dp_mode"] = "fsdp";
    expectKey(badMode, "dp_mode");
    QVERIFY_THROWS_EXCEPTION(ConfigError, run_config_from_json(nlohmann::json::array()));
  }
};

QTEST_MAIN(TestRecording)
#include "test_recording.moc"
