// SPDX-License-Identifier: GPL-3.0-or-later
// Every rank's events in one place, for --record, the schedule summary and
// --events-to. Ranks as threads: this process has them all. Ranks as
// processes (mpirun): rank 0 listens (events/event_stream.h; on every
// interface, a free port, told to the others through MPI before the trainer is
// built) and feeds the other processes' events into its own chain, as if its
// threads had emitted them; every other process streams its events there.
// --events-to HOST:PORT: the process that holds every event (rank 0, or the
// one process of a threaded run) streams them on, to a GUI that listens.
#pragma once

#include <memory>
#include <string>

#include "cli_launch.h"
#include "clock/schedule_summary.h"
#include "events/event_queue.h"
#include "events/event_stream.h"
#include "plan/run_plan.h"

namespace shardscope::cli {

class JobEvents {
 public:
  // `outputs`: the recording's queue (may be null). Under mpirun every process
  // calls it at the same point (it broadcasts rank 0's address). Throws
  // OutputError when --events-to cannot connect.
  JobEvents(const ProcessMode& mode, const RunPlan& run, const std::string& events_to, EventSink* outputs);
  ~JobEvents();

  // The trainer's sink.
  EventSink* sink() { return rank0_stream_ ? static_cast<EventSink*>(rank0_stream_.get()) : &schedule_; }
  const ScheduleEvents& schedule() const { return schedule_; }
  // The run ended (well or not): this process's streams are sent out and
  // closed; rank 0 first waits up to `timeout_s` for the other processes'
  // streams to end (each sends its last events as it exits). Prints on stderr
  // what went wrong (a stream that did not end, a send that failed).
  void finish(double timeout_s);
  // Every rank's events reached this process (after finish).
  bool complete() const { return complete_; }

 private:
  EventSink* forward(EventSink* outputs);
  void join_processes(MpiWorld& world, const std::string& metadata);

  FanOutSink forward_;
  ScheduleEvents schedule_;                          // every event passes through it to forward_
  std::unique_ptr<EventStreamSender> gui_stream_;    // --events-to
  std::unique_ptr<EventStreamSender> rank0_stream_;  // under mpirun, ranks other than 0
  std::unique_ptr<EventCollector> collector_;        // under mpirun, rank 0
  int other_processes_ = 0;
  bool complete_ = true;
  bool finished_ = false;
};

}  // namespace shardscope::cli
