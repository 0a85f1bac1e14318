// SPDX-License-Identifier: GPL-3.0-or-later
// The files a `train` run writes: --metrics-out (one JSON line per step) and
// --record (the event stream). Their life, so that no run destroys a file:
//   1. check_train_outputs, with the flags: an output that is an input (--data,
//      a config file, a file of --init-from or --resume; same path, hard link,
//      symlink), the other output, a link, a directory or a device is refused
//      (exit 2) before anything is read or written;
//   2. TrainOutputs::open, once the trainer is built (the data read, the run
//      valid): each output is written to a temporary beside its path,
//      "<path>.XXXXXX.part", printed as the run starts;
//   3. finish: renamed into place when the run ends, after the last step, on
//      Ctrl-C, or after a rank failure (keep_after_failure: what was written
//      is kept).
// A write error (disk full, file too large, I/O error) stops the run at the
// next step; the output that failed is removed and its path left as it was.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "config/run_config.h"
#include "core/output_file.h"
#include "events/event_queue.h"
#include "events/recording.h"
#include "plan/run_plan.h"
#include "train/trainer.h"

namespace shardscope::cli {

// Step 1: throws OutputError naming the flags. `inputs`: the config files
// (--deepspeed, --accelerate); --data and the files of the --init-from and
// --resume directories are added.
void check_train_outputs(const RunConfig& config, const std::string& record, std::vector<NamedFile> inputs);

// So that a write past `ulimit -f` fails with EFBIG (an error the run reports)
// instead of killing the process with SIGXFSZ.
void ignore_file_size_signal();

// --record: engine threads never wait for the disk: they push into a bounded
// queue, and a helper thread drains it into the recording. A write error in
// that thread is kept (error()) for the run to stop on.
class Recording {
 public:
  Recording() = default;
  ~Recording();
  Recording(const Recording&) = delete;
  Recording& operator=(const Recording&) = delete;

  EventQueue* queue() { return &queue_; }
  // Creates the temporary and starts draining the queue into it.
  void open(const std::string& path, const RunPlan& run);
  const RecordingWriter* writer() const { return writer_.get(); }
  // The drainer's write error, or empty.
  std::string error() const;
  // Every queued event written and the file renamed into place; throws
  // OutputError after a write error (the temporary removed).
  void close();
  // Removes the temporary; the path is left as it was. Never throws.
  void abandon() noexcept;
  void print_summary() const;

 private:
  void drain();
  void stop_draining();

  std::unique_ptr<RecordingWriter> writer_;
  EventQueue queue_;
  std::atomic<bool> draining_{true};
  std::atomic<bool> failed_{false};
  mutable std::mutex error_mutex_;
  std::string error_;
  std::thread drainer_;
};

class TrainOutputs {
 public:
  // Makes the recording's queue (the trainer's sink); opens nothing.
  TrainOutputs(RunPlanPtr run, const std::string& record);
  EventQueue* events() { return recording_ ? recording_->queue() : nullptr; }
  // Step 2: creates the temporaries and prints where each output goes.
  void open();
  // One step's metrics line. Throws OutputError when a write failed, this one
  // or the recording's since the last step: the run stops there.
  void write_step(const StepMetrics& m);
  // The output whose write failed, or empty.
  std::string failed_path() const;
  // Step 3: every output renamed into place; throws the first error after
  // finishing the others.
  void finish();
  // The run failed: finishes what can be finished and says on stderr what could not.
  void keep_after_failure() noexcept;
  void print_summary() const;

 private:
  RunPlanPtr run_;
  RunConfig config_;
  std::string record_;
  std::optional<OutputFile> metrics_;
  std::unique_ptr<Recording> recording_;
};

}  // namespace shardscope::cli
