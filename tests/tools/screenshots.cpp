// SPDX-License-Identifier: GPL-3.0-or-later
// Writes the README's screenshots (docs/screenshots/) from real runs, offscreen
// (no X server needed): the main window and each view tab after a short run
// of the opening preset (the ring, ZeRO-3 and naive views on 4 data-parallel
// ranks), in English, and the main window and live plots in
// Chinese; the memory planner (GPT-3 175B on 1024 × A100-80GB) in both. Not a
// test; run by hand after changing the UI (`planner` as a second argument:
// the planner's pictures only, no runs; `main`: the main window in both
// languages and the Pipeline tab; `pipeline`: the pipeline lesson's;
// `live`: the Live plots tab's; `waits`: the Waits tab's; `tensor`: the Tensor parallel tab's during
// a tp 2 run; `zero3`: the ZeRO-3 run's pictures only;
// `lessons`: every lesson's run beside its text, in both languages (`lesson ID`: that one only); `schedules`: the
// Schedules tab after Compare schedules, in both; `cp` and `experts`: the Context parallel and Experts tabs).
// Every window is 1280×720:
//   QT_QPA_PLATFORM=offscreen build/tests/shardscope_screenshots docs/screenshots
//   [planner|main|pipeline|live|waits|tensor|zero3|lessons|lesson ID|schedules|cp|experts]
#include <QApplication>
#include <QComboBox>
#include <QDir>
#include <QDockWidget>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QPushButton>
#include <QSpinBox>
#include <QTabWidget>
#include <QTimer>
#include <algorithm>
#include <cstdio>
#include <functional>

#include "config_panel.h"
#include "i18n.h"
#include "lessons.h"
#include "main_window.h"
#include "planner/planner_dialog.h"
#include "run_controller.h"
#include "views/hidden_states_view.h"
#include "views/schedule_compare.h"
#include "views/tensor_parallel_view.h"

using namespace shardscope;
using namespace shardscope::ui;

namespace {

// A common laptop and projector size: every picture shows what a learner there sees.
const QSize kWindowSize(1280, 720);

void settle(int ms) {
  QEventLoop loop;
  QTimer::singleShot(ms, &loop, &QEventLoop::quit);
  loop.exec();
}

bool save(QWidget* widget, const QDir& dir, const QString& name) {
  const QString path = dir.filePath(name);
  const bool ok = widget->grab().save(path);
  std::printf("%s %s\n", ok ? "wrote" : "FAILED", qPrintable(path));
  return ok;
}

// One run of `config` in a fresh window, then a picture of each named tab:
// the whole window when `window_shot`, else the tab's page alone (with the
// memory bars and log hidden, as the toolbar's "Memory and log" does).
struct Shot {
  int tab;
  QString name;
  bool window_shot = false;
  int lesson = -1;  // >= 0: the lessons dock open on this lesson
  bool whole_height = false;  // the memory bars and log hidden (the toolbar's "Memory and log")
};
// `gpu_profile` false: the run keeps this machine's CPU clock (a lesson that quotes its times).
bool shoot(const QString& language, const RunConfig& config, const QDir& dir, const std::vector<Shot>& shots,
           bool gpu_profile = true) {
  setLanguage(language);
  MainWindow window;
  window.resize(kWindowSize);
  window.show();
  window.configPanel()->setConfig(config);
  if (gpu_profile) window.configPanel()->setGpuProfile(QStringLiteral("RTX4090"));
  if (!window.configPanel()->problem().isEmpty()) {
    std::printf("cannot run: %s\n", qPrintable(window.configPanel()->problem()));
    return false;
  }
  QEventLoop loop;
  QObject::connect(window.controller(), &RunController::runFinished, &loop, &QEventLoop::quit);
  window.startRun();
  loop.exec();
  bool ok = true;
  for (const Shot& shot : shots) {
    window.viewTabs()->setCurrentIndex(shot.tab);
    if (shot.lesson >= 0) {
      window.lessonsDock()->show();
      window.lessons()->showLesson(shot.lesson);
    }
    window.memoryAndLogAction()->setChecked(shot.window_shot && !shot.whole_height);  // a tab alone: its whole height
    settle(1500);  // the ring view finishes its animation; plots redraw when shown
    QWidget* what = shot.window_shot ? static_cast<QWidget*>(&window) : window.viewTabs()->currentWidget();
    ok = save(what, dir, shot.name) && ok;
  }
  return ok;
}

// A lesson as its Try it loads it, run twice in one window: first as loaded,
// then with `change` applied (the lesson's knob). The whole window, lessons
// open and view tab `tab` shown (-1: the first), after each run: `first` (may
// be empty) and `second`. The loss plot keeps the first run's curve under the second's.
bool shootLessonPair(const QString& language, const QString& id, const std::function<void(RunConfig&)>& change,
                     const QDir& dir, const QString& first, const QString& second, int tab = -1) {
  setLanguage(language);
  MainWindow window;
  window.resize(kWindowSize);
  window.show();
  window.lessonsDock()->show();
  if (tab >= 0) window.viewTabs()->setCurrentIndex(tab);
  const auto& lessons = window.lessons()->lessons();
  const auto it = std::find_if(lessons.begin(), lessons.end(), [&](const Lesson& l) { return l.id == id; });
  if (it == lessons.end()) return false;
  window.lessons()->showLesson(static_cast<int>(it - lessons.begin()));
  RunConfig config = it->config;
  bool ok = true;
  for (int run = 0; run < 2; ++run) {
    window.configPanel()->setConfig(config);
    QEventLoop loop;
    QObject::connect(window.controller(), &RunController::runFinished, &loop, &QEventLoop::quit);
    window.startRun();
    loop.exec();
    settle(1000);
    const QString name = run == 0 ? first : second;
    if (!name.isEmpty()) ok = save(&window, dir, name) && ok;
    change(config);
  }
  return ok;
}

// The BERT lesson beside the Hidden states tab with all-MiniLM-L6-v2 (skipped,
// said, where scripts/fetch_minilm.sh has not fetched it).
bool shootHiddenStates(const QString& language, const QDir& dir, const QString& name) {
  setLanguage(language);
  MainWindow window;
  window.resize(kWindowSize);
  window.show();
  HiddenStatesView* view = window.hiddenStatesView();
  if (!QDir(view->modelDir()).exists(QStringLiteral("model.safetensors"))) {
    std::printf("skipped %s: all-MiniLM-L6-v2 is not fetched (bash scripts/fetch_minilm.sh)\n", qPrintable(name));
    return true;
  }
  window.lessonsDock()->show();
  const auto& lessons = window.lessons()->lessons();
  const auto it = std::find_if(lessons.begin(), lessons.end(),
                               [](const Lesson& l) { return l.id == QStringLiteral("bert_hidden_states"); });
  if (it != lessons.end()) window.lessons()->showLesson(static_cast<int>(it - lessons.begin()));
  window.viewTabs()->setCurrentWidget(view);
  window.memoryAndLogAction()->setChecked(false);  // the plots take the whole height
  QEventLoop loop;
  QObject::connect(view, &HiddenStatesView::computed, &loop, &QEventLoop::quit);
  QObject::connect(view, &HiddenStatesView::failed, &loop, &QEventLoop::quit);
  view->compute();
  loop.exec();
  settle(500);
  return save(&window, dir, name);
}

// The view tab a lesson is about (the order of MainWindow's tabs: Loss,
// Pipeline, Ring all-reduce, ZeRO, Tensor parallel, Live plots, Waits, Hidden states).
int lessonTab(const QString& id) {
  if (id == QLatin1String("stragglers_and_failures")) return 6;
  if (id.startsWith(QLatin1String("pipeline")) || id == QLatin1String("ddp_buckets")) return 1;
  if (id == QLatin1String("ddp_vs_dataparallel")) return 2;
  if (id == QLatin1String("zero_stages")) return 3;
  if (id == QLatin1String("tensor_parallelism") || id == QLatin1String("sequence_parallelism")) return 4;
  if (id == QLatin1String("fp16_loss_scaling")) return 5;
  return 0;  // the loss curve, with the memory bars under it
}

// Every lesson as Try it loads it (or only the lesson `only`), in English and Chinese: the whole window
// after its run, the lesson open beside its view (lesson_<id>.png, lesson_<id>_zh.png).
bool shootEveryLesson(const QDir& dir, const QString& only = QString()) {
  bool ok = true;
  const auto lessons = load_lessons();
  for (const QString& language : {QStringLiteral("en"), QStringLiteral("zh_CN")}) {
    const QString suffix = language == QStringLiteral("en") ? QStringLiteral(".png") : QStringLiteral("_zh.png");
    for (std::size_t i = 0; i < lessons.size(); ++i) {
      if (lessons[i].id == QLatin1String("bert_hidden_states")) continue;  // shootHiddenStates: a forward pass
      if (!only.isEmpty() && lessons[i].id != only) continue;
      const int tab =
          lessonTab(lessons[i].id);  // a painted view takes the whole height; the loss keeps the memory bars
      // The zero-bubble lesson quotes T_F, T_B and T_W on the CPU's virtual clock: its picture shows those.
      const bool gpu_profile = lessons[i].id != QLatin1String("pipeline_zero_bubble");
      ok = shoot(language, lessons[i].config, dir,
                 {{tab, QStringLiteral("lesson_") + lessons[i].id + suffix, true, static_cast<int>(i), tab != 0}},
                 gpu_profile) &&
           ok;
    }
  }
  return ok;
}

// The planner at 1280×720: GPT-3 175B in fp32 on 128 nodes × 8 A100-80GB with full activation
// checkpointing, ZeRO-0..3, verdict for ZeRO-3, whose bar (GBs beside ZeRO-0's TBs) is also zoomed.
bool shootPlanner(const QString& language, const QDir& dir, const QString& name) {
  setLanguage(language);
  PlannerDialog planner;
  planner.resize(1280, 720);
  planner.show();
  planner.nodesBox()->setValue(128);
  planner.zeroBox()->setValue(3);
  planner.checkpointBox()->setCurrentIndex(2);
  planner.replan();
  planner.waitForPlan();
  settle(100);
  return save(&planner, dir, name);
}

// The pipeline bubbles lesson on the Pipeline tab: GPipe as Try it loads it,
// then 1F1B, in English and Chinese.
bool shootPipelineLessons(const QDir& dir) {
  bool ok = true;
  for (const QString& language : {QStringLiteral("en"), QStringLiteral("zh_CN")}) {
    const QString suffix = language == QStringLiteral("en") ? QStringLiteral(".png") : QStringLiteral("_zh.png");
    ok = shootLessonPair(language, QStringLiteral("pipeline_bubbles"),
                         [](RunConfig& run) { run.schedule = PipelineScheduleKind::one_f_one_b; }, dir,
                         QStringLiteral("lesson_pipeline_bubbles_gpipe") + suffix,
                         QStringLiteral("lesson_pipeline_bubbles_1f1b") + suffix, 1) &&
         ok;
  }
  return ok;
}

// After that run: the main window and its Pipeline tab in English, the main window in Chinese.
bool shootMainWindows(const RunConfig& run, const QDir& dir) {
  bool ok = shoot(QStringLiteral("en"), run, dir,
                  {{0, QStringLiteral("main_window.png"), true}, {1, QStringLiteral("pipeline_timeline.png")}});
  return shoot(QStringLiteral("zh_CN"), run, dir, {{0, QStringLiteral("main_window_zh.png"), true}}) && ok;
}

// The Live plots tab after an fp16 run, in English (alone and in the window) and in Chinese.
bool shootLivePlots(const RunConfig& fp16, const QDir& dir) {
  bool ok = shoot(QStringLiteral("en"), fp16, dir,
                  {{5, QStringLiteral("live_plots.png")}, {5, QStringLiteral("main_window_live_plots.png"), true}});
  return shoot(QStringLiteral("zh_CN"), fp16, dir, {{5, QStringLiteral("live_plots_zh.png")}}) && ok;
}

// The Schedules tab after "Compare schedules": gpt-tiny pp 4 × m 8 under every schedule (issue 30).
bool shootSchedules(const QDir& dir) {
  bool ok = true;
  for (const QString& language : {QStringLiteral("en"), QStringLiteral("zh_CN")}) {
    setLanguage(language);
    MainWindow window;
    window.resize(kWindowSize);
    window.show();
    RunConfig c = window.configPanel()->config();
    c.layout[Axis::pp] = 4;
    c.micro_batches = 8;
    c.batch = 32;
    window.configPanel()->setConfig(c);
    window.viewTabs()->setCurrentWidget(window.scheduleComparison());
    window.memoryAndLogAction()->setChecked(false);
    QEventLoop loop;
    QObject::connect(window.scheduleComparison(), &ScheduleCompareView::comparisonFinished, &loop, &QEventLoop::quit);
    window.scheduleComparison()->compareButton()->click();
    loop.exec();
    settle(500);
    ok = save(&window, dir,
              language == QStringLiteral("en") ? QStringLiteral("schedule_compare.png")
                                               : QStringLiteral("schedule_compare_zh.png")) &&
         ok;
  }
  return ok;
}

// The Waits tab: rank 3 computing 3x as long on dp 4 (English, Chinese), and
// rank 2 failing in step 4 (its ✕; its error says how fast every rank stopped).
bool shootWaits(const RunConfig& base, const QDir& dir) {
  RunConfig straggler = base;
  straggler.layout[Axis::dp] = 4;
  straggler.layout[Axis::pp] = 1;
  straggler.micro_batches = 1;
  straggler.bucket_mb = 1.0;
  straggler.steps = 8;
  straggler.slow_rank = 3;
  straggler.slow_factor = 3.0;
  bool ok = shoot(QStringLiteral("en"), straggler, dir, {{6, QStringLiteral("waits_straggler.png")}});
  ok = shoot(QStringLiteral("zh_CN"), straggler, dir, {{6, QStringLiteral("waits_straggler_zh.png")}}) && ok;
  RunConfig failing = straggler;
  failing.slow_rank = -1;
  failing.fail_rank = 2;
  failing.fail_step = 4;
  return shoot(QStringLiteral("en"), failing, dir, {{6, QStringLiteral("waits_failure.png"), true}}) && ok;
}

// The Tensor parallel tab during a tp 2 run (dp 2 × tp 2, gpt-tiny), in the
// whole window, in English and Chinese: taken while the run trains, once the
// shown layer has seen a few steps of collectives, then the run is stopped.
bool shootTensorParallel(const RunConfig& base, const QDir& dir) {
  RunConfig run = base;
  run.layout[Axis::dp] = 2;
  run.layout[Axis::pp] = 1;
  run.layout[Axis::tp] = 2;
  run.micro_batches = 1;
  run.steps = 400;
  bool ok = true;
  for (const QString& language : {QStringLiteral("en"), QStringLiteral("zh_CN")}) {
    setLanguage(language);
    MainWindow window;
    window.resize(kWindowSize);
    window.show();
    window.configPanel()->setConfig(run);
    window.viewTabs()->setCurrentIndex(4);
    window.memoryAndLogAction()->setChecked(false);  // the tab at its whole height
    auto* view = qobject_cast<TensorParallelView*>(window.viewTabs()->currentWidget());
    if (view == nullptr || !window.configPanel()->problem().isEmpty()) return false;
    view->setLayer(1);
    QEventLoop finished;
    QObject::connect(window.controller(), &RunController::runFinished, &finished, &QEventLoop::quit);
    window.startRun();
    QElapsedTimer waited;
    waited.start();
    while (view->model().collectives(1) < 5 * 8 + 3 && waited.elapsed() < 60000) settle(20);
    ok = save(&window, dir,
              language == QStringLiteral("en") ? QStringLiteral("tensor_parallel.png")
                                               : QStringLiteral("tensor_parallel_zh.png")) &&
         ok;
    window.controller()->stop();
    finished.exec();
  }
  return ok;
}

// The Context parallel tab after a gpt-tiny cp 4 run (zig-zag in both
// languages, contiguous in English), and the Experts tab after a
// gpt-tiny-moe dp 4 × ep 4 run, in the whole window with the memory bars and
// log hidden (the toolbar's "Memory and log"), as the Tensor parallel tab's.
bool shootContextAndExperts(const RunConfig& base, const QDir& dir, bool context) {
  RunConfig run = base;
  run.layout[Axis::dp] = context ? 1 : 4;
  run.layout[Axis::pp] = 1;
  run.micro_batches = 1;
  run.steps = context ? 3 : 20;
  if (context) {
    run.layout[Axis::cp] = 4;
  } else {
    run.model = "gpt-tiny-moe";
    run.expert_parallel = 4;
  }
  const int tab = context ? 7 : 8;
  const QString name = context ? QStringLiteral("context_parallel") : QStringLiteral("experts");
  bool ok = shoot(QStringLiteral("en"), run, dir, {{tab, name + QStringLiteral(".png"), true, -1, true}});
  ok = shoot(QStringLiteral("zh_CN"), run, dir, {{tab, name + QStringLiteral("_zh.png"), true, -1, true}}) && ok;
  if (!context) return ok;
  run.cp_split = "contiguous";
  return shoot(QStringLiteral("en"), run, dir,
               {{tab, QStringLiteral("context_parallel_contiguous.png"), true, -1, true}}) &&
         ok;
}

}  // namespace

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  const QDir dir(argc > 1 ? QString::fromLocal8Bit(argv[1]) : QStringLiteral("docs/screenshots"));
  RunConfig c = ConfigPanel::defaultConfig();  // gpt-tiny, dp 2 x pp 2, 1F1B, 4 micro-batches
  c.steps = 30;
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  const QString only = argc > 2 ? QString::fromLocal8Bit(argv[2]) : QString();
  RunConfig zero3 = c;  // ZeRO-2/3 refuse pipelines: 4 data-parallel ranks
  zero3.layout[Axis::dp] = 4;
  zero3.layout[Axis::pp] = 1;
  zero3.micro_batches = 1;
  zero3.zero_stage = 3;
  const std::vector<Shot> zero3_shots{{3, QStringLiteral("zero3_sharding.png")},
                                      {2, QStringLiteral("ring_zero3.png")}};  // the ring: per-unit gathers
  RunConfig fp16 = c;  // a first loss scale of 2^24 overflows: the plots show the back-off
  fp16.precision = Precision::fp16;
  fp16.initial_scale_power = 24;
  fp16.steps = 40;
  if (only == QStringLiteral("zero3")) return shoot(QStringLiteral("en"), zero3, dir, zero3_shots) ? 0 : 1;
  const bool planner_only = only == QStringLiteral("planner");
  // The opening preset: its 0.5 MB DDP buckets (the default) hold each stage's
  // gradients in five, the first all-reduced while the last micro-batch's
  // backward still runs, so the Pipeline tab's DDP lane shows them queued on the
  // communication stream, overlapping backward (PyTorch's 25 MB: one bucket).
  const RunConfig main_run = c;
  if (only == QStringLiteral("main")) return shootMainWindows(main_run, dir) ? 0 : 1;
  if (only == QStringLiteral("pipeline")) return shootPipelineLessons(dir) ? 0 : 1;
  if (only == QStringLiteral("live")) return shootLivePlots(fp16, dir) ? 0 : 1;
  if (only == QStringLiteral("waits")) return shootWaits(c, dir) ? 0 : 1;
  if (only == QStringLiteral("tensor")) return shootTensorParallel(c, dir) ? 0 : 1;
  if (only == QStringLiteral("schedules")) return shootSchedules(dir) ? 0 : 1;
  if (only == QStringLiteral("lesson") && argc > 3)  // one lesson: `lesson ID`
    return shootEveryLesson(dir, QString::fromLocal8Bit(argv[3])) ? 0 : 1;
  if (only == QStringLiteral("cp")) return shootContextAndExperts(c, dir, true) ? 0 : 1;
  if (only == QStringLiteral("experts")) return shootContextAndExperts(c, dir, false) ? 0 : 1;
  if (only == QStringLiteral("lessons")) {
    bool ok = shootEveryLesson(dir);
    ok = shootHiddenStates(QStringLiteral("en"), dir, QStringLiteral("lesson_bert_hidden_states.png")) && ok;
    return shootHiddenStates(QStringLiteral("zh_CN"), dir, QStringLiteral("lesson_bert_hidden_states_zh.png")) && ok
               ? 0
               : 1;
  }
  bool planned = shootPlanner(QStringLiteral("en"), dir, QStringLiteral("planner_gpt3_1024xA100.png"));
  planned = shootPlanner(QStringLiteral("zh_CN"), dir, QStringLiteral("planner_gpt3_1024xA100_zh.png")) && planned;
  if (planner_only) return planned ? 0 : 1;
  bool ok = shootMainWindows(main_run, dir);
  ok = shootPipelineLessons(dir) && ok;
  ok = shootLivePlots(fp16, dir) && ok;
  ok = shootWaits(c, dir) && ok;
  ok = shootTensorParallel(c, dir) && ok;
  ok = shootSchedules(dir) && ok;
  ok = shootContextAndExperts(c, dir, true) && ok;
  ok = shootContextAndExperts(c, dir, false) && ok;
  RunConfig ring = c;  // four ranks around the ring
  ring.layout[Axis::dp] = 4;
  ring.layout[Axis::pp] = 1;
  ring.micro_batches = 1;
  ok = shoot(QStringLiteral("en"), ring, dir, {{2, QStringLiteral("ring_allreduce.png")}}) && ok;
  ok = shoot(QStringLiteral("en"), zero3, dir, zero3_shots) && ok;
  RunConfig naive = c;
  naive.layout[Axis::dp] = 4;
  naive.layout[Axis::pp] = 1;
  naive.micro_batches = 1;
  naive.dp_mode = DataParallelMode::naive;
  ok = shoot(QStringLiteral("en"), naive, dir, {{2, QStringLiteral("ring_naive_data_parallel.png")}}) && ok;
  // The DDP lesson as "Try it" loads it: 4 ranks in naive DataParallel, the star into rank 0.
  const auto lessons = load_lessons();
  const auto ddp = std::find_if(lessons.begin(), lessons.end(),
                                [](const Lesson& l) { return l.id == QStringLiteral("ddp_vs_dataparallel"); });
  const int ddp_index = static_cast<int>(ddp - lessons.begin());
  ok = shoot(QStringLiteral("en"), ddp->config, dir, {{2, QStringLiteral("lesson_ddp.png"), true, ddp_index, true}}) &&
       ok;
  ok = shoot(QStringLiteral("zh_CN"), ddp->config, dir,
             {{2, QStringLiteral("lesson_ddp_zh.png"), true, ddp_index, true}}) &&
       ok;
  // Accumulation: 4 steps of 8, then 1 of 32, overlaid. Checkpointing: full, then none.
  for (const QString& language : {QStringLiteral("en"), QStringLiteral("zh_CN")}) {
    const QString suffix = language == QStringLiteral("en") ? QStringLiteral(".png") : QStringLiteral("_zh.png");
    ok = shootLessonPair(language, QStringLiteral("gradient_accumulation"), [](RunConfig& run) { run.accum = 1; }, dir,
                         QString(), QStringLiteral("lesson_accumulation") + suffix) &&
         ok;
    ok = shootLessonPair(language, QStringLiteral("activation_checkpointing"), [](RunConfig& run) { run.checkpoint = false; },
                         dir, QStringLiteral("lesson_checkpointing_full") + suffix,
                         QStringLiteral("lesson_checkpointing_none") + suffix) &&
         ok;
  }
  ok = shootEveryLesson(dir) && ok;
  ok = shootHiddenStates(QStringLiteral("en"), dir, QStringLiteral("lesson_bert_hidden_states.png")) && ok;
  ok = shootHiddenStates(QStringLiteral("zh_CN"), dir, QStringLiteral("lesson_bert_hidden_states_zh.png")) && ok;
  return ok && planned ? 0 : 1;
}
