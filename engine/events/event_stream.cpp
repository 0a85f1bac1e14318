// SPDX-License-Identifier: GPL-3.0-or-later
// POSIX sockets (event_stream.h): one blocking socket per sender, written by
// its own thread; one thread per collector polling the listening socket and
// every open stream.
#include "events/event_stream.h"

#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <vector>

#include "core/error.h"
#include "core/output_file.h"
#include "events/recording.h"

namespace shardscope {
namespace {

std::uint32_t get_u32(const unsigned char* p) {
  return std::uint32_t{p[0]} | std::uint32_t{p[1]} << 8 | std::uint32_t{p[2]} << 16 | std::uint32_t{p[3]} << 24;
}

// getaddrinfo for a TCP address; null (and `reason`) if it cannot be resolved.
addrinfo* resolve(const std::string& host, int port, bool passive, std::string& reason) {
  addrinfo hints{};
  hints.ai_family = AF_INET;  // the collector listens on IPv4; "localhost" must not pick ::1
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = passive ? AI_PASSIVE : 0;
  addrinfo* found = nullptr;
  const int rc = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
  if (rc != 0) {
    reason = gai_strerror(rc);
    return nullptr;
  }
  return found;
}

// One connection attempt; the socket, or -1 and `reason`.
int connect_once(const StreamAddress& address, std::string& reason) {
  addrinfo* found = resolve(address.host, address.port, false, reason);
  if (found == nullptr) return -1;
  const int fd = socket(found->ai_family, found->ai_socktype | SOCK_CLOEXEC, found->ai_protocol);
  // Linux bounds connect() by the send timeout: an address that does not answer
  // costs a second, not the minutes of TCP's retries. Sends block again after.
  timeval limit{1, 0};
  if (fd >= 0) setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof limit);
  if (fd >= 0 && connect(fd, found->ai_addr, found->ai_addrlen) == 0) {
    freeaddrinfo(found);
    limit = {0, 0};
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof limit);
    return fd;
  }
  reason = std::strerror(errno);
  if (fd >= 0) ::close(fd);
  freeaddrinfo(found);
  return -1;
}

}  // namespace

StreamAddress parse_stream_address(const std::string& text, const std::string& flag) {
  const auto colon = text.rfind(':');
  StreamAddress address;
  if (colon != std::string::npos && colon > 0) {
    address.host = text.substr(0, colon);
    const std::string port = text.substr(colon + 1);
    if (!port.empty() && port.size() <= 5 && port.find_first_not_of("0123456789") == std::string::npos)
      address.port = std::stoi(port);
  }
  if (address.port < 1 || address.port > 65535)
    throw ConfigError(flag + " '" + text + "': expected HOST:PORT with a port from 1 to 65535, e.g. 127.0.0.1:5000");
  return address;
}

// ---- EventStreamSender ----

EventStreamSender::EventStreamSender(const std::vector<StreamAddress>& candidates, const std::string& metadata_json,
                                     const std::string& flag, double connect_timeout_s)
    : what_(flag + " " + (candidates.empty() ? std::string("(no address)") : candidates.front().text())) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(connect_timeout_s);
  std::string reason = "no address";
  for (bool first = true; fd_ < 0 && (first || std::chrono::steady_clock::now() < deadline); first = false) {
    if (!first) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    for (const StreamAddress& address : candidates) {
      if ((fd_ = connect_once(address, reason)) < 0) continue;
      what_ = flag + " " + address.text();
      break;
    }
  }
  if (fd_ < 0)
    throw OutputError(what_ + ": cannot connect (" + reason +
                      "); start the listener first (the GUI's File → Attach…), or check the address");
  const std::vector<unsigned char> header = recording_header(metadata_json);
  if (!send_all(header.data(), header.size())) {
    ::close(fd_);
    throw OutputError(error());
  }
  sender_ = std::thread([this] { send_loop(); });
}

EventStreamSender::~EventStreamSender() {
  close();
}

void EventStreamSender::emit(const Event& event) {
  queue_.emit(event);
}

bool EventStreamSender::send_all(const unsigned char* data, std::size_t size) {
  while (size > 0) {
    const ssize_t n = send(fd_, data, size, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      std::lock_guard lock(error_mutex_);
      if (error_.empty()) error_ = what_ + ": sending events failed (" + std::strerror(errno) + ")";
      return false;
    }
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

// Every 10 ms, whatever is queued goes out as one write; after close() asks,
// one last round, then the connection is shut (the collector reads the end).
void EventStreamSender::send_loop() {
  std::vector<Event> batch;
  std::vector<unsigned char> bytes;
  bool healthy = true;
  for (bool more = true; more;) {
    more = running_.load();
    batch.clear();
    while (queue_.drain(batch, 4096) > 0) {
      bytes.resize(batch.size() * kRecordSize);
      for (std::size_t i = 0; i < batch.size(); ++i) encode_event(batch[i], bytes.data() + i * kRecordSize);
      if (healthy && (healthy = send_all(bytes.data(), bytes.size()))) sent_ += batch.size();
      batch.clear();
    }
    if (more) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  shutdown(fd_, SHUT_WR);
}

void EventStreamSender::close() {
  running_ = false;
  if (sender_.joinable()) sender_.join();
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

std::string EventStreamSender::error() const {
  std::lock_guard lock(error_mutex_);
  return error_;
}

// ---- EventCollector ----

struct EventCollector::Connection {
  int fd = -1;
  int index = 0;                     // in accept order, for messages
  std::vector<unsigned char> bytes;  // received, not yet decoded
  bool header_read = false;
};

EventCollector::EventCollector(const std::string& host, int port, EventSink* sink) : sink_(sink) {
  const std::string where = host + ":" + std::to_string(port);
  std::string reason;
  addrinfo* found = resolve(host, port, true, reason);
  if (found == nullptr) throw ConfigError("listening on " + where + ": " + reason);
  listen_fd_ = socket(found->ai_family, found->ai_socktype | SOCK_CLOEXEC, found->ai_protocol);
  const int yes = 1;
  if (listen_fd_ >= 0) setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  const bool ok =
      listen_fd_ >= 0 && bind(listen_fd_, found->ai_addr, found->ai_addrlen) == 0 && listen(listen_fd_, 64) == 0;
  const int error = errno;
  freeaddrinfo(found);
  if (!ok) {
    if (listen_fd_ >= 0) ::close(listen_fd_);
    throw ConfigError("listening on " + where + ": " + std::strerror(error) + " (choose another port)");
  }
  sockaddr_in bound{};
  socklen_t length = sizeof bound;
  getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&bound), &length);
  port_ = ntohs(bound.sin_port);
  receiver_ = std::thread([this] { receive_loop(); });
}

EventCollector::~EventCollector() {
  stop();
}

void EventCollector::stop() {
  running_ = false;
  if (receiver_.joinable()) receiver_.join();
  if (listen_fd_ >= 0) ::close(listen_fd_);
  listen_fd_ = -1;
}

int EventCollector::streams_opened() const {
  std::lock_guard lock(mutex_);
  return opened_;
}

int EventCollector::streams_ended() const {
  std::lock_guard lock(mutex_);
  return ended_;
}

std::string EventCollector::metadata_json() const {
  std::lock_guard lock(mutex_);
  return metadata_;
}

std::string EventCollector::error() const {
  std::lock_guard lock(mutex_);
  return error_;
}

void EventCollector::note_error(const std::string& text) {
  std::lock_guard lock(mutex_);
  error_ += (error_.empty() ? "" : "; ") + text;
}

bool EventCollector::wait_for_ended(int count, double timeout_s) {
  std::unique_lock lock(mutex_);
  return ended_changed_.wait_for(lock, std::chrono::duration<double>(timeout_s), [&] { return ended_ >= count; });
}

// poll() over the listening socket and every stream, 50 ms at a time, so stop() is seen.
void EventCollector::receive_loop() {
  std::vector<std::unique_ptr<Connection>> connections;
  while (running_.load()) {
    std::vector<pollfd> fds{{listen_fd_, POLLIN, 0}};
    for (const auto& c : connections) fds.push_back({c->fd, POLLIN, 0});
    if (poll(fds.data(), fds.size(), 50) <= 0) continue;
    for (std::size_t i = connections.size(); i-- > 0;) {
      if ((fds[i + 1].revents & (POLLIN | POLLHUP | POLLERR)) == 0 || read_from(*connections[i])) continue;
      ::close(connections[i]->fd);
      connections.erase(connections.begin() + static_cast<std::ptrdiff_t>(i));
      std::lock_guard lock(mutex_);
      ++ended_;
      ended_changed_.notify_all();
    }
    if ((fds[0].revents & POLLIN) == 0) continue;
    const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    std::lock_guard lock(mutex_);
    connections.push_back(std::make_unique<Connection>(Connection{fd, opened_++, {}, false}));
  }
  for (const auto& c : connections) ::close(c->fd);
}

bool EventCollector::read_from(Connection& connection) {
  unsigned char chunk[64 * 1024];
  const ssize_t n = recv(connection.fd, chunk, sizeof chunk, 0);
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return true;
  if (n > 0) {
    connection.bytes.insert(connection.bytes.end(), chunk, chunk + n);
    take_records(connection);
    return true;
  }
  if (!connection.bytes.empty())
    note_error("stream " + std::to_string(connection.index) + " ended " + std::to_string(connection.bytes.size()) +
               " bytes into a record (its process was cut off)");
  return false;
}

// The header once it is whole (checked as a recording's is), then every whole record.
void EventCollector::take_records(Connection& connection) {
  std::vector<unsigned char>& bytes = connection.bytes;
  std::size_t used = 0;
  if (!connection.header_read) {
    if (bytes.size() < kRecordingHeaderSize) return;
    const std::uint32_t length = get_u32(bytes.data() + 16);
    if (std::memcmp(bytes.data(), kRecordingMagic, 8) != 0 || get_u32(bytes.data() + 8) != kRecordingVersion ||
        get_u32(bytes.data() + 12) != kRecordSize) {
      note_error("stream " + std::to_string(connection.index) +
                 ": not a ShardScope event stream of this version (a `train --events-to` of the same build)");
      bytes.clear();
      ::shutdown(connection.fd, SHUT_RDWR);  // read_from sees the end next
      return;
    }
    if (bytes.size() < kRecordingHeaderSize + std::size_t{length}) return;
    used = kRecordingHeaderSize + length;
    connection.header_read = true;
    std::lock_guard lock(mutex_);
    if (metadata_.empty())
      metadata_.assign(bytes.begin() + kRecordingHeaderSize, bytes.begin() + static_cast<std::ptrdiff_t>(used));
  }
  for (; bytes.size() - used >= kRecordSize; used += kRecordSize) {
    try {
      sink_->emit(decode_event(bytes.data() + used));
      ++received_;
    } catch (const FormatError& e) {
      note_error("stream " + std::to_string(connection.index) + ": " + e.what());
    }
  }
  bytes.erase(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(used));
}

}  // namespace shardscope
