// SPDX-License-Identifier: GPL-3.0-or-later
#include "recording_controller.h"

#include <algorithm>
#include <exception>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/output_file.h"
#include "events/chrome_trace.h"
#include "events/recording.h"
#include "train/metrics_json.h"

namespace shardscope::ui {

namespace {

std::string local_path(const QString& path) {
  return path.toStdString();
}

}  // namespace

RecordingController::RecordingController(QObject* parent) : QObject(parent) {}

RecordingController::~RecordingController() {
  // A run still being recorded (the window closes mid-run): keep nothing
  // partial, and leave any existing file at the final path alone.
  if (writer_) abandonWriter();
}

void RecordingController::setRecordPath(const QString& path) {
  record_path_ = path;
}

QString RecordingController::writingPath() const {
  return writer_ ? QString::fromStdString(writer_->writing_path()) : QString();
}

void RecordingController::fail(std::function<QString()> text) {
  Q_EMIT status(std::move(text), true);
}

void RecordingController::abandonWriter() {
  writer_->abandon();  // the temporary goes; an existing file at the path stays as it was
  writer_.reset();
  writing_to_.clear();
}

void RecordingController::beginRun(const RunPlan& run) {
  const RunConfig& config = run.config();
  if (writer_) abandonWriter();
  const QString path = record_path_;
  record_path_.clear();  // "record next run": this one
  if (path.isEmpty()) return;
  try {
    // Never over the training text; written to a temporary beside the path until the run ends.
    check_outputs({{"the training text", config.data}}, {{std::string(), local_path(path)}});
    writer_ = std::make_unique<RecordingWriter>(local_path(path), run_metadata_to_json(run).dump());
    writing_to_ = path;
    Q_EMIT status([path] { return tr("Recording this run to %1").arg(path); }, false);
  } catch (const std::exception& e) {
    writer_.reset();
    const QString why = QString::fromStdString(e.what());
    fail([path, why] { return tr("Cannot record to %1: %2").arg(path, why); });
  }
}

void RecordingController::record(const std::vector<Event>& events) {
  if (!writer_) return;
  try {
    for (const Event& e : events) writer_->emit(e);
  } catch (const std::exception& e) {
    const QString path = writing_to_;
    const QString why = QString::fromStdString(e.what());
    abandonWriter();
    fail([path, why] { return tr("Recording to %1 stopped: %2").arg(path, why); });
  }
}

void RecordingController::endRun() {
  if (!writer_) return;
  const QString path = writing_to_;
  try {
    writer_->close();  // synced and renamed over the path
  } catch (const std::exception& e) {
    const QString why = QString::fromStdString(e.what());
    abandonWriter();
    fail([path, why] { return tr("Recording to %1 failed: %2").arg(path, why); });
    return;
  }
  const auto count = static_cast<qulonglong>(writer_->events_written());
  writer_.reset();
  writing_to_.clear();
  last_recording_ = path;
  Q_EMIT status([path, count] { return tr("Recorded %1 events to %2").arg(count).arg(path); }, false);
}

bool RecordingController::open(const QString& path) {
  RunPlanPtr run;
  std::string metadata;
  std::vector<Event> events;
  try {
    require_regular_input({std::string(), local_path(path)});  // a FIFO would block the window
    RecordingReader reader;
    reader.open(local_path(path));
    metadata = reader.metadata_json();
    events = reader.read_all();
    try {
      run = run_plan_from_metadata(nlohmann::json::parse(metadata));  // a --schedule-file's rows too
    } catch (const std::exception& e) {
      const QString why = QString::fromStdString(e.what());
      fail([path, why] { return tr("Cannot open %1: its run config is unusable: %2").arg(path, why); });
      return false;
    }
  } catch (const std::exception& e) {
    // FormatError from the reader names the file and the byte offset.
    const QString why = QString::fromStdString(e.what());
    fail([path, why] { return tr("Cannot open recording %1: %2").arg(path, why); });
    return false;
  }
  opened_path_ = path;
  run_ = std::move(run);
  metadata_ = std::move(metadata);
  events_ = std::move(events);
  prefix_end_.clear();
  prefix_end_.reserve(events_.size());
  std::int64_t latest = 0;
  for (const Event& e : events_) {
    latest = std::max({latest, e.start_ns, e.end_ns});
    prefix_end_.push_back(latest);
  }
  return true;
}

void RecordingController::closeRecording() {
  opened_path_.clear();
  run_.reset();
  metadata_.clear();
  events_.clear();
  events_.shrink_to_fit();
  prefix_end_.clear();
}

std::size_t RecordingController::eventsUpTo(std::int64_t t_ns) const {
  return static_cast<std::size_t>(std::upper_bound(prefix_end_.begin(), prefix_end_.end(), t_ns) - prefix_end_.begin());
}

bool RecordingController::exportChromeTrace(const QString& path) {
  std::vector<Event> loaded;
  const std::vector<Event>* events = &events_;
  std::string metadata = metadata_;
  if (!hasRecording()) {
    if (last_recording_.isEmpty()) {
      fail([] { return tr("Nothing to export: open a recording or record a run first."); });
      return false;
    }
    const QString source = last_recording_;
    try {
      RecordingReader reader;
      reader.open(local_path(source));
      metadata = reader.metadata_json();
      loaded = reader.read_all();
      events = &loaded;
    } catch (const std::exception& e) {
      const QString why = QString::fromStdString(e.what());
      fail([source, why] { return tr("Cannot open recording %1: %2").arg(source, why); });
      return false;
    }
  }
  try {
    // Never over the recording it reads; written to a temporary beside the path, renamed when complete.
    const std::string source = local_path(hasRecording() ? opened_path_ : last_recording_);
    check_outputs({{"the recording", source}}, {{std::string(), local_path(path)}});
    OutputFile out({std::string(), local_path(path)});
    write_chrome_trace(*events, metadata, out.stream());
    out.commit();
  } catch (const std::exception& e) {
    const QString why = QString::fromStdString(e.what());
    fail([path, why] { return tr("Cannot export the Chrome trace to %1: %2").arg(path, why); });
    return false;
  }
  const auto count = static_cast<qulonglong>(events->size());
  Q_EMIT status([path, count] { return tr("Exported %1 events as a Chrome trace to %2").arg(count).arg(path); }, false);
  return true;
}

}  // namespace shardscope::ui
