// SPDX-License-Identifier: GPL-3.0-or-later
#include "recording_controller.h"

#include <algorithm>
#include <exception>
#include <filesystem>
#include <fstream>
#include <system_error>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "events/chrome_trace.h"
#include "events/recording.h"
#include "train/metrics_json.h"

namespace shardscope::ui {

namespace {

std::string local_path(const QString& path) { return path.toStdString(); }

// Moves `from` over `to` (atomic on POSIX: readers see the old or the new file).
bool replace_file(const QString& from, const QString& to, QString* error) {
  std::error_code ec;
  std::filesystem::rename(std::filesystem::path(local_path(from)), std::filesystem::path(local_path(to)), ec);
  if (ec) {
    *error = QString::fromStdString(ec.message());
    return false;
  }
  return true;
}

void remove_quietly(const QString& path) {
  std::error_code ec;
  std::filesystem::remove(std::filesystem::path(local_path(path)), ec);
}

}  // namespace

RecordingController::RecordingController(QObject* parent) : QObject(parent) {}

RecordingController::~RecordingController() {
  // A run still being recorded (the window closes mid-run): keep nothing
  // partial, and leave any existing file at the final path alone.
  if (writer_) abandonWriter();
}

void RecordingController::setRecordPath(const QString& path) { record_path_ = path; }

void RecordingController::fail(std::function<QString()> text) { Q_EMIT status(std::move(text), true); }

void RecordingController::abandonWriter() {
  const QString part = QString::fromStdString(writer_->path());
  try {
    writer_->close();
  } catch (const std::exception&) {
  }
  writer_.reset();
  remove_quietly(part);
  writing_to_.clear();
}

void RecordingController::beginRun(const RunConfig& config) {
  if (writer_) abandonWriter();
  const QString path = record_path_;
  record_path_.clear();  // "record next run": this one
  if (path.isEmpty()) return;
  const QString part = path + QStringLiteral(".part");
  try {
    writer_ = std::make_unique<RecordingWriter>(local_path(part), run_config_to_json(config).dump());
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
  const QString part = QString::fromStdString(writer_->path());
  try {
    writer_->close();
  } catch (const std::exception& e) {
    const QString why = QString::fromStdString(e.what());
    abandonWriter();
    fail([path, why] { return tr("Recording to %1 failed: %2").arg(path, why); });
    return;
  }
  const auto count = static_cast<qulonglong>(writer_->events_written());
  writer_.reset();
  writing_to_.clear();
  QString why;
  if (!replace_file(part, path, &why)) {
    remove_quietly(part);
    fail([path, why] { return tr("Recording to %1 failed: %2").arg(path, why); });
    return;
  }
  last_recording_ = path;
  Q_EMIT status([path, count] { return tr("Recorded %1 events to %2").arg(count).arg(path); }, false);
}

bool RecordingController::open(const QString& path) {
  RunConfig config;
  std::string metadata;
  std::vector<Event> events;
  try {
    RecordingReader reader;
    reader.open(local_path(path));
    metadata = reader.metadata_json();
    events = reader.read_all();
    try {
      config = run_config_from_json(nlohmann::json::parse(metadata));
      validate_run_config(config);
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
  config_ = std::move(config);
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
  const QString temp = path + QStringLiteral(".tmp");
  QString why;
  {
    std::ofstream out(local_path(temp), std::ios::binary | std::ios::trunc);
    if (out) {
      try {
        write_chrome_trace(*events, metadata, out);
        out.flush();
      } catch (const std::exception& e) {
        why = QString::fromStdString(e.what());
      }
    }
    if (why.isEmpty() && !out) why = tr("write failed (disk full or no permission?)");
  }
  if (why.isEmpty()) replace_file(temp, path, &why);
  if (!why.isEmpty()) {
    remove_quietly(temp);
    fail([path, why] { return tr("Cannot export the Chrome trace to %1: %2").arg(path, why); });
    return false;
  }
  const auto count = static_cast<qulonglong>(events->size());
  Q_EMIT status([path, count] { return tr("Exported %1 events as a Chrome trace to %2").arg(count).arg(path); }, false);
  return true;
}

}  // namespace shardscope::ui
