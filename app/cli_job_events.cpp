// SPDX-License-Identifier: GPL-3.0-or-later
#include "cli_job_events.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <unistd.h>

#include <cstdio>
#include <exception>
#include <vector>

#include "train/metrics_json.h"

namespace shardscope::cli {
namespace {

// Where the other machines may reach this one: its IPv4 addresses but the
// loopback, then its name (which another machine may not resolve).
std::string reachable_addresses() {
  std::string out;
  ifaddrs* interfaces = nullptr;
  if (getifaddrs(&interfaces) == 0) {
    for (const ifaddrs* i = interfaces; i != nullptr; i = i->ifa_next) {
      if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != AF_INET || (i->ifa_flags & IFF_LOOPBACK) != 0) continue;
      char text[INET_ADDRSTRLEN] = {};
      inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(i->ifa_addr)->sin_addr, text, sizeof text);
      out += std::string(text) + ",";
    }
    freeifaddrs(interfaces);
  }
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  return out + name;
}

// Rank 0's listener as a process of this job sees it.
std::vector<StreamAddress> rank0_candidates(const MpiWorld& world, const std::string& addresses, int port) {
  if (world.on_this_machine(0)) return {{"127.0.0.1", port}};
  std::vector<StreamAddress> out;
  std::size_t from = 0;
  for (std::size_t comma; (comma = addresses.find(',', from)) != std::string::npos; from = comma + 1)
    out.push_back({addresses.substr(from, comma - from), port});
  out.push_back({addresses.substr(from), port});
  return out;
}

}  // namespace

JobEvents::JobEvents(const ProcessMode& mode, const RunPlan& run, const std::string& events_to, EventSink* outputs)
    : schedule_(forward(outputs)) {
  const std::string metadata = run_metadata_to_json(run).dump();
  std::exception_ptr unconnected;  // under mpirun rank 0 reports it after the exchange, so no process waits in it
  if ((mode.world == nullptr || mode.world->rank() == 0) && !events_to.empty()) {
    try {
      gui_stream_ =
          std::make_unique<EventStreamSender>(parse_stream_address(events_to, "--events-to"), metadata, "--events-to");
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
  const std::string addresses = world.broadcast_from_rank0(world.rank() == 0 ? reachable_addresses() : "");
  if (world.rank() == 0) return;
  try {
    rank0_stream_ = std::make_unique<EventStreamSender>(rank0_candidates(world, addresses, std::stoi(port)), metadata,
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
