// SPDX-License-Identifier: GPL-3.0-or-later
#include "run_controller.h"

#include <QCoreApplication>
#include <chrono>
#include <exception>
#include <optional>

#include "core/error.h"
#include "core/json_text.h"
#include "process_job.h"
#include "train/checkpoint.h"
#include "train/lost_work.h"
#include "train/metrics_json.h"
#include "train/trainer.h"

namespace shardscope::ui {

namespace {
constexpr int kPollMs = 16;                   // ~60 Hz
constexpr std::size_t kMaxEventsPerPoll = 200000;
}  // namespace

RunController::RunController(QObject* parent) : QObject(parent), queue_(std::make_unique<EventQueue>()) {
  timer_.setInterval(kPollMs);
  connect(&timer_, &QTimer::timeout, this, &RunController::poll);
}

RunController::~RunController() {
  job_.reset();
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

std::vector<MemoryBytes> RunController::finalMemory() const {
  std::lock_guard lock(result_mutex_);
  return final_memory_;
}

void RunController::start(RunPlanPtr run) {
  launch(std::move(run), false);
}
void RunController::startPaused(RunPlanPtr run) {
  launch(std::move(run), true);
}

// Everything of the previous run has been drained (poll ends a run only on an
// empty queue), so a fresh queue starts the new run's counters at zero.
void RunController::resetRun() {
  if (thread_.joinable()) thread_.join();  // a finished worker: returns at once
  queue_ = std::make_unique<EventQueue>();
  stop_ = false;
  paused_ = false;
  step_budget_ = 0;
  finished_ = false;
  steps_done_ = 0;
  steps_replayed_ = 0;
  pacer_ = PlaybackPacer{};
  pacer_.setSpeed(speed_.load());
  {
    std::lock_guard lock(result_mutex_);
    final_memory_.clear();
    last_checkpoint_.clear();
    ok_ = true;
    message_.clear();
  }
}

void RunController::launch(RunPlanPtr run, bool paused) {
  if (busy()) return;
  resetRun();
  paused_ = paused;
  thread_ = std::thread([this, run = std::move(run)] { worker(run); });
  setState(paused ? State::paused : State::running);
  timer_.start();
}

QString RunController::cliPath() const {
  return cli_path_.isEmpty() ? QCoreApplication::applicationDirPath() + QStringLiteral("/shardscope-cli") : cli_path_;
}

int RunController::jobPort() const { return job_ ? job_->port() : 0; }

// The listening side of a process job; `error` says why not.
void RunController::beginJob(int port, QString& error) {
  resetRun();
  try {
    job_ = std::make_unique<ProcessJob>(port, queue_.get());
  } catch (const std::exception& e) {
    error = QString::fromStdString(e.what());
  }
}

void RunController::startProcesses(const RunConfig& config) {
  if (busy()) return;
  QString error;
  beginJob(0, error);
  if (!error.isEmpty()) {
    Q_EMIT runFinished(false, error);
    return;
  }
  connect(job_.get(), &ProcessJob::launcherLine, this, &RunController::failureNoted);
  job_->start(cliPath(), config, max_restarts_);
  setState(State::running);
  timer_.start();
}

bool RunController::attach(int port, QString& error) {
  if (busy()) return false;
  beginJob(port, error);
  if (!error.isEmpty()) return false;
  awaiting_config_ = true;
  job_plan_ = nullptr;
  setState(State::running);
  timer_.start();
  return true;
}

// The attached job's config reaches the window before any of its events.
bool RunController::announceJobConfig() {
  const std::string metadata = job_->metadataJson();
  if (metadata.empty()) return false;
  awaiting_config_ = false;
  try {
    JsonTextError error;  // the stream's port takes any local connection: its JSON is bounded as a file's
    const std::optional<nlohmann::json> config = parse_json_text(metadata, error);
    if (!config) throw FormatError("its metadata is not valid JSON: " + error.where_and_why());
    job_plan_ = run_plan_from_metadata(*config);  // a --schedule-file's rows as the job read them
    Q_EMIT jobConfigReceived(job_plan_->config());
  } catch (const std::exception& e) {
    std::lock_guard lock(result_mutex_);
    ok_ = false;
    message_ = tr("the job's run config: %1").arg(QString::fromUtf8(e.what())).toStdString();
    job_->stop();
  }
  return true;
}

void RunController::pause() {
  if (job_) return;  // processes run on; Stop ends them
  if (state_ != State::running) return;
  paused_ = true;
  setState(State::paused);
}

void RunController::resume() {
  if (state_ != State::paused) return;
  paused_ = false;
  setState(State::running);
}

void RunController::stepOnce() {
  if (state_ != State::paused) return;
  step_budget_.fetch_add(1);
}

void RunController::stop() {
  if (!busy() || state_ == State::stopping) return;
  stop_ = true;
  if (job_) job_->stop();
  setState(State::stopping);
}

void RunController::shutdown() {
  job_.reset();  // ends a job this window started
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  timer_.stop();
  batch_.clear();
  queue_->drain(batch_, kMaxEventsPerPoll);  // discarded: nobody is watching any more
  batch_.clear();
  pacer_ = PlaybackPacer{};
  setState(State::idle);
}

void RunController::setPlaybackSpeed(double speed) {
  speed_ = speed;
  pacer_.setSpeed(speed);
}

// Writes the step directory and says where, in the log (the engine's own words, as the CLI prints them).
void RunController::saveCheckpoint(Trainer& trainer, const std::string& root) {
  const std::string dir = trainer.save_checkpoint(root);
  {
    std::lock_guard lock(result_mutex_);
    last_checkpoint_ = dir;
  }
  Event saved;
  saved.kind = EventKind::log;
  saved.level = LogLevel::info;
  saved.step = trainer.steps_done();
  saved.set_text("checkpoint: step " + std::to_string(trainer.steps_done()) + " saved to " + dir);
  queue_->emit(saved);
}

std::string RunController::lastCheckpoint() const {
  std::lock_guard lock(result_mutex_);
  return last_checkpoint_;
}

// One attempt: the step loop, a save every save_every steps and at the end.
void RunController::trainSteps(const RunPlanPtr& run) {
  const RunConfig& config = run->config();
  Trainer trainer(run, queue_.get());
  steps_done_ = trainer.steps_done();  // past 0 when it resumes
  std::int64_t saved = -1;             // the step saved last
  while (!stop_ && trainer.steps_done() < config.steps) {
    if (paused_) {
      int budget = step_budget_.load();
      if (budget <= 0 || !step_budget_.compare_exchange_strong(budget, budget - 1)) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        continue;
      }
    }
    trainer.step();
    const std::int64_t done = trainer.steps_done();
    steps_done_ = done;
    if (!config.save_dir.empty() && config.save_every > 0 && done % config.save_every == 0 && done < config.steps) {
      saveCheckpoint(trainer, config.save_dir);
      saved = done;
    }
    // Slow motion: wait until the views have replayed this step (poll() says so).
    while (!stop_ && speed_.load() < 1.0 && steps_replayed_.load() < done)
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  // A stop lands between steps, so the ranks agree and the state can be saved.
  if (!config.save_dir.empty() && trainer.steps_done() > 0 && trainer.steps_done() != saved)
    saveCheckpoint(trainer, config.save_dir);
  std::vector<MemoryBytes> memory;
  for (int r = 0; r < trainer.world_size(); ++r) memory.push_back(trainer.ledger(r).peak());
  std::lock_guard lock(result_mutex_);
  final_memory_ = std::move(memory);
  if (stop_ && trainer.steps_done() < config.steps)
    message_ = tr("stopped after step %1").arg(trainer.steps_done()).toStdString();
}

RunPlanPtr RunController::restartAfter(const RunPlanPtr& failed, const std::string& cause, int restart) {
  const QString lost = QString::fromStdString(
      lost_work_text(failed->config().save_dir, failed->config().save_every, steps_done_.load()));
  QMetaObject::invokeMethod(
      this, [this, lost] { Q_EMIT failureNoted(lost); }, Qt::QueuedConnection);
  if (stop_ || restart >= max_restarts_) return nullptr;
  RunConfig next = failed->config();
  next.fail_rank = -1;  // an injected failure happens once (as under launch)
  next.resume_dir.clear();
  QString from = tr("from the start (no checkpoint committed yet)");
  if (const std::optional<std::string> latest = latest_checkpoint(next.save_dir)) {
    next.resume_dir = *latest;
    from = tr("resuming from %1").arg(QString::fromStdString(next.resume_dir));
  }
  const QString line = tr("restart %1 of %2 after the run failed (%3); %4")
                           .arg(restart + 1)
                           .arg(max_restarts_)
                           .arg(QString::fromStdString(cause))
                           .arg(from);
  QMetaObject::invokeMethod(
      this, [this, line] { Q_EMIT failureNoted(line); }, Qt::QueuedConnection);
  // The schedule the run planned, not its --schedule-file read again: the file may have changed since.
  return failed->schedule_file() ? make_run_plan(next, *failed->schedule_file()) : make_run_plan(next);
}

void RunController::worker(RunPlanPtr run) {
  auto fail = [this](const std::string& text) {
    Event error;
    error.kind = EventKind::error;
    error.level = LogLevel::error;
    error.set_text(text);
    queue_->emit(error);
    std::lock_guard lock(result_mutex_);
    ok_ = false;
    message_ = text;
  };
  for (int restart = 0; run != nullptr; ++restart) {
    try {
      trainSteps(run);
      break;
    } catch (const RankFailure& e) {
      RunPlanPtr next;
      if (!e.out_of_memory()) {
        try {
          next = restartAfter(run, e.what(), restart);
        } catch (const std::exception& refused) {  // the resumed run's plan: a damaged checkpoint
          fail(refused.what());
          break;
        }
      }
      if (next == nullptr) fail(e.what());  // RankFailure already emitted its rank's error event
      run = next;
    } catch (const std::exception& e) {
      fail(e.what());
      break;
    } catch (...) {
      fail(tr("unknown error").toStdString());
      break;
    }
  }
  finished_ = true;
}

void RunController::poll() {
  if (job_ && awaiting_config_ && !announceJobConfig()) return;
  // Read finished_ before draining: if it was set, every event is in the queue.
  const bool finished = job_ ? job_->finished() : finished_.load();
  // Every event of the steps done by now is in the queue (emitted before the step returned).
  const std::int64_t done = steps_done_.load();
  batch_.clear();
  const bool drained_all = queue_->drain(batch_, kMaxEventsPerPoll) < kMaxEventsPerPoll;
  if (!pacer_.realTime() || !pacer_.empty()) {
    const std::int64_t now_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                    std::chrono::steady_clock::now().time_since_epoch())
                                    .count();
    pacer_.push(batch_, now_ns);
    batch_.clear();
    if (stop_) pacer_.flush(batch_);  // Stop is prompt: no slow motion left to watch
    else pacer_.release(now_ns, batch_);
  }
  if (!batch_.empty()) Q_EMIT eventsDrained(batch_);
  const bool views_done = stop_ || !views_drawing_ || !views_drawing_();
  if (drained_all && pacer_.empty() && views_done && steps_replayed_.load() < done) {
    pacer_.endStep();
    steps_replayed_ = done;  // the worker may start the next step
  }
  if (!finished || !batch_.empty() || !pacer_.empty()) return;
  batch_.clear();
  if (queue_->drain(batch_, kMaxEventsPerPoll) > 0) {
    Q_EMIT eventsDrained(batch_);
    return;
  }
  finishRun();
}

void RunController::finishRun() {
  timer_.stop();
  if (thread_.joinable()) thread_.join();  // the worker has returned
  if (job_) {
    std::lock_guard lock(result_mutex_);
    if (ok_) {  // a config the window could not read has said so already
      ok_ = job_->ok();
      message_ = job_->message().toStdString();
    }
    job_.reset();
    awaiting_config_ = false;
  }
  bool ok;
  std::string message;
  {
    std::lock_guard lock(result_mutex_);
    ok = ok_;
    message = message_;
  }
  setState(State::idle);
  Q_EMIT runFinished(ok, QString::fromStdString(message));
}

void RunController::setState(State state) {
  if (state_ == state) return;
  state_ = state;
  Q_EMIT stateChanged(state);
}

}  // namespace shardscope::ui
