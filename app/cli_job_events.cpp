// SPDX-License-Identifier: GPL-3.0-or-later
#include "cli_job_events.h"

#include <unistd.h>

#include <cstdio>
#include <exception>

#include "train/metrics_json.h"

namespace shardscope::cli {
namespace {

std::string host_name() {
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  return name;
}

}  // namespace

JobEvents::JobEvents(const ProcessMode& mode, const RunConfig& config, const std::string& events_to, EventSink* outputs)
    : schedule_(forward(outputs)) {
  const std::string metadata = run_config_to_json(config).dump();
  std::exception_ptr unconnected;  // under mpirun rank 0 reports it after the exchange, so no process waits in it
  if ((mode.world == nullptr || mode.world->rank() == 0) && !events_to.empty()) {
    try {
      gui_stream_ = std::make_unique<EventStreamSender>(parse_stream_address(events_to, "--events-to"), metadata,
                                                        "--events-to");
      forward_.add(gui_stream_.get());  // before the collector's first event
    } catch (...) {
      if (mode.world == nullptr) throw;
      unconnected = std::current_exception();
    }
  }
  if (mode.world != nullptr) join_processes(*mode.world, metadata);
  if (unconnected) std::rethrow_exception(unconnected);
}

// Rank 0 listens; the others learn where (MPI) and connect to it.
void JobEvents::join_processes(MpiWorld& world, const std::string& metadata) {
  other_processes_ = world.size() - 1;
  if (world.rank() == 0) collector_ = std::make_unique<EventCollector>("0.0.0.0", 0, &schedule_);
  // Rank 0's machine and port; a process on the same machine uses the loopback.
  const std::string port = world.broadcast_from_rank0(collector_ ? std::to_string(collector_->port()) : "");
  const std::string host = world.broadcast_from_rank0(host_name());
  if (world.rank() == 0) return;
  const StreamAddress rank0{world.on_this_machine(0) ? "127.0.0.1" : host, std::stoi(port)};
  try {
    rank0_stream_ = std::make_unique<EventStreamSender>(rank0, metadata,
                                                        "rank " + std::to_string(world.rank()) + "'s events to rank 0");
  } catch (const std::exception& e) {  // the run still trains; rank 0 says its events are missing
    std::fprintf(stderr, "warning: %s\n", e.what());
  }
}

JobEvents::~JobEvents() {
  if (!finished_) finish(0.0);
}

// What rank 0's chain passes every event on to: the recording, the GUI's stream.
EventSink* JobEvents::forward(EventSink* outputs) {
  if (outputs != nullptr) forward_.add(outputs);
  return &forward_;
}

void JobEvents::finish(double timeout_s) {
  finished_ = true;
  if (collector_) {
    complete_ = collector_->wait_for_ended(other_processes_, timeout_s);
    collector_->stop();
    if (!complete_)
      std::fprintf(stderr, "warning: the events of %d of the other %d processes did not all arrive\n",
                   other_processes_ - collector_->streams_ended(), other_processes_);
    if (!collector_->error().empty()) std::fprintf(stderr, "warning: events: %s\n", collector_->error().c_str());
  }
  for (const auto* stream : {&rank0_stream_, &gui_stream_}) {
    if (!*stream) continue;
    (*stream)->close();
    if (!(*stream)->error().empty()) std::fprintf(stderr, "warning: %s\n", (*stream)->error().c_str());
  }
}

}  // namespace shardscope::cli
