// SPDX-License-Identifier: GPL-3.0-or-later
#include "cli_train_outputs.h"

#include <chrono>
#include <csignal>
#include <cstdio>
#include <exception>
#include <vector>

#include "train/checkpoint.h"
#include "train/metrics_json.h"

namespace shardscope::cli {

void check_train_outputs(const RunConfig& config, const std::string& record, std::vector<NamedFile> inputs) {
  inputs.push_back({"--data", config.data});
  const auto add = [&inputs](const std::vector<NamedFile>& files) {
    inputs.insert(inputs.end(), files.begin(), files.end());
  };
  if (!config.init_from.empty()) add(files_in_directory("--init-from", config.init_from));  // weights, tokenizer
  if (!config.resume_dir.empty()) add(files_in_directory("--resume", find_checkpoint_dir(config.resume_dir)));
  check_outputs(inputs, {{"--record", record}, {"--metrics-out", config.metrics_out}});
}

void ignore_file_size_signal() {
  std::signal(SIGXFSZ, SIG_IGN);
}

// ---- Recording ----

Recording::~Recording() {
  stop_draining();  // then writer_'s destructor finishes the file, unless it failed
}

void Recording::open(const std::string& path, const RunPlan& run) {
  writer_ = std::make_unique<RecordingWriter>(path, run_metadata_to_json(run).dump(), "--record");
  drainer_ = std::thread([this] { drain(); });
}

std::string Recording::error() const {
  if (!failed_.load()) return {};
  std::lock_guard lock(error_mutex_);
  return error_;
}

void Recording::drain() {
  std::vector<Event> batch;
  for (bool more = true; more;) {
    more = draining_.load();
    batch.clear();
    while (queue_.drain(batch, 4096) > 0) {
      try {
        if (!failed_.load())
          for (const Event& e : batch) writer_->emit(e);
      } catch (const std::exception& e) {  // kept for the run to stop on; later events are dropped
        std::lock_guard lock(error_mutex_);
        error_ = e.what();
        failed_ = true;
      }
      batch.clear();
    }
    if (more) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

void Recording::stop_draining() {
  draining_ = false;
  if (drainer_.joinable()) drainer_.join();
}

void Recording::close() {
  stop_draining();
  if (!writer_) return;
  if (failed_.load()) {
    const std::string left = "; '" + writer_->path() + "' was left as it was";
    abandon();
    throw OutputError(error() + left);
  }
  writer_->close();
}

void Recording::abandon() noexcept {
  stop_draining();
  if (writer_) writer_->abandon();
  writer_.reset();
}

void Recording::print_summary() const {
  if (!writer_) return;
  std::printf("recorded %llu events to %s (%llu fine-grained events dropped by the full queue)\n",
              static_cast<unsigned long long>(writer_->events_written()), writer_->path().c_str(),
              static_cast<unsigned long long>(queue_.dropped()));
}

// ---- TrainOutputs ----

TrainOutputs::TrainOutputs(RunPlanPtr run, const std::string& record)
    : run_(std::move(run)), config_(run_->config()), record_(record) {
  if (!record_.empty()) recording_ = std::make_unique<Recording>();
}

void TrainOutputs::open() {
  if (!config_.metrics_out.empty()) {
    metrics_.emplace(NamedFile{"--metrics-out", config_.metrics_out});
    std::printf("metrics: writing %s (renamed to %s when the run ends)\n", metrics_->temp_path().c_str(),
                config_.metrics_out.c_str());
  }
  if (recording_) {
    recording_->open(record_, *run_);
    std::printf("recording: writing %s (renamed to %s when the run ends)\n",
                recording_->writer()->writing_path().c_str(), record_.c_str());
  }
  std::fflush(stdout);
}

void TrainOutputs::write_step(const StepMetrics& m) {
  if (metrics_) metrics_->write(step_metrics_to_json(m).dump() + '\n');
  if (recording_) {
    const std::string error = recording_->error();
    if (!error.empty()) throw OutputError(error);
  }
}

std::string TrainOutputs::failed_path() const {
  if (metrics_ && metrics_->failed()) return metrics_->path();
  if (recording_ && !recording_->error().empty()) return record_;
  return {};
}

void TrainOutputs::finish() {
  std::exception_ptr first;
  try {
    if (recording_) recording_->close();
  } catch (...) {
    first = std::current_exception();
  }
  try {
    if (metrics_ && !metrics_->finished()) metrics_->commit();
  } catch (...) {
    if (!first) first = std::current_exception();
  }
  if (first) std::rethrow_exception(first);
}

void TrainOutputs::keep_after_failure() noexcept {
  // An output whose write failed is dropped (the run's error says why); the others are kept.
  if (metrics_ && metrics_->failed()) metrics_->abandon();
  if (recording_ && !recording_->error().empty()) recording_->abandon();
  try {
    finish();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "shardscope-cli train: error: %s\n", e.what());
  } catch (...) {
  }
}

void TrainOutputs::print_summary() const {
  if (recording_) recording_->print_summary();
}

}  // namespace shardscope::cli
