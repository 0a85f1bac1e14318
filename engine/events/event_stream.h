// SPDX-License-Identifier: GPL-3.0-or-later
// Events over TCP, so that the events of ranks that are processes (mpirun)
// meet in one place: rank 0 of the job (its recording, its schedule summary)
// or a GUI that listens for a job started from a shell (`train --events-to
// HOST:PORT`, File → Attach…).
//
// A stream is a recording's bytes (recording.h): the header with the run's
// config as metadata, then one fixed-size record per event; the sender closing
// the connection ends it. Each event says its own rank, so a collector merges
// any number of streams by passing their events on as they arrive.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "events/event.h"
#include "events/event_queue.h"

namespace shardscope {

struct StreamAddress {
  std::string host;  // a name or a numeric address
  int port = 0;
  std::string text() const { return host + ":" + std::to_string(port); }
};

// "HOST:PORT" (port 1-65535). Throws ConfigError naming `flag` and the text.
StreamAddress parse_stream_address(const std::string& text, const std::string& flag);

// Sends the events emitted to it. Engine threads never wait for the network:
// emit() puts the event in a queue (dropping fine-grained spans when it is
// full, as the GUI's queue does) and a thread of its own sends the queue out.
class EventStreamSender final : public EventSink {
 public:
  // Connects, trying again for up to connect_timeout_s (the listener may be a
  // moment late), and sends the header. Throws OutputError naming `flag`, the
  // address and the OS's reason when no connection is made.
  EventStreamSender(const StreamAddress& address, const std::string& metadata_json, const std::string& flag,
                    double connect_timeout_s = 10.0)
      : EventStreamSender(std::vector<StreamAddress>{address}, metadata_json, flag, connect_timeout_s) {}
  // The same, trying each of `candidates` in turn (a machine's addresses):
  // the first that accepts the connection is used.
  EventStreamSender(const std::vector<StreamAddress>& candidates, const std::string& metadata_json,
                    const std::string& flag, double connect_timeout_s = 10.0);
  ~EventStreamSender() override;  // close()
  EventStreamSender(const EventStreamSender&) = delete;
  EventStreamSender& operator=(const EventStreamSender&) = delete;

  void emit(const Event& event) override;
  // Sends every queued event, then closes the connection: the collector sees
  // the stream end. Never throws; a send error is kept (error()).
  void close();
  // The first send error (the listener went away), or empty; events after it are dropped.
  std::string error() const;
  std::uint64_t events_sent() const { return sent_.load(); }
  std::uint64_t dropped() const { return queue_.dropped(); }

 private:
  void send_loop();
  bool send_all(const unsigned char* data, std::size_t size);

  std::string what_;  // "--events-to 127.0.0.1:5000", for messages
  int fd_ = -1;
  EventQueue queue_{16384};  // ~6 MiB per process: drained every 10 ms, it holds bursts of ring chunks
  std::atomic<bool> running_{true};
  std::atomic<std::uint64_t> sent_{0};
  mutable std::mutex error_mutex_;
  std::string error_;
  std::thread sender_;
};

// Listens on a TCP port and passes every event of every stream it accepts to
// `sink`, from a thread of its own (one event at a time, so the sink need not
// be thread-safe against itself; it must be against other emitters).
class EventCollector {
 public:
  // host: the address to listen on ("127.0.0.1": this machine only, "0.0.0.0":
  // every interface); port 0: any free port (port() says which). Throws
  // ConfigError naming the address and the reason (in use, not an address).
  EventCollector(const std::string& host, int port, EventSink* sink);
  ~EventCollector();  // stop()
  EventCollector(const EventCollector&) = delete;
  EventCollector& operator=(const EventCollector&) = delete;

  int port() const { return port_; }
  // Streams accepted so far, and those that ended (their sender closed).
  int streams_opened() const;
  int streams_ended() const;
  std::uint64_t events_received() const { return received_.load(); }
  // The metadata (run config JSON) of the first stream whose header arrived, or empty.
  std::string metadata_json() const;
  // Problems seen: a stream that is not one, or ended mid-record. Empty if none.
  std::string error() const;
  // Waits until `count` streams have ended, for at most timeout_s; true if they did.
  bool wait_for_ended(int count, double timeout_s);
  // Stops listening and reading; streams still open are cut off. Never throws.
  void stop();

 private:
  struct Connection;
  void receive_loop();
  bool read_from(Connection& connection);  // false: the stream ended
  void take_records(Connection& connection);
  void note_error(const std::string& text);

  EventSink* sink_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> running_{true};
  std::atomic<std::uint64_t> received_{0};
  mutable std::mutex mutex_;  // guards the fields below
  std::condition_variable ended_changed_;
  int opened_ = 0, ended_ = 0;
  std::string metadata_, error_;
  std::thread receiver_;
};

}  // namespace shardscope
