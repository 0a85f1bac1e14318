// SPDX-License-Identifier: GPL-3.0-or-later
// When a rank process fails: abort notices between the processes, the
// watchdog thread (dead peers, mpirun's SIGTERM, the exit grace) and the
// question asked after a timeout (mpi_world.h, "Faults").
#include <fcntl.h>
#include <semaphore.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <stdexcept>

#include "parallel/mpi/mpi_communicator.h"
#include "parallel/mpi/mpi_world.h"

namespace shardscope {

namespace {

constexpr int kAbortTag = 7;
constexpr int kQueryTag = 8;         // "are you waiting in a communication call?" (after a timeout)
constexpr int kAnswerTag = 9;        // 1: waiting, 0: not (computing, or hung in it)
constexpr int kHeartbeatTag = 10;    // 1: alive, 0: leaving (MPI_Finalize next)
constexpr std::int64_t kBeatNs = 1'000'000'000;  // a heartbeat a second
constexpr double kExitGraceS = 5.0;  // an aborted process still running after this is ended by the watchdog

using SteadyClock = std::chrono::steady_clock;
double seconds_since(SteadyClock::time_point t) {
  return std::chrono::duration<double>(SteadyClock::now() - t).count();
}

// mpirun ends the job with SIGTERM when one of its processes dies, and SIGKILL
// 1 s later. The handler itself prints why, with async-signal-safe calls only
// (open, read, write): the abort message if there is one (g_abort_line, made
// when the abort was), else the rank whose process is gone, read from /proc.
// Then it wakes the watchdog (sem_post), which ends the process.
std::atomic<bool> g_terminated{false};
std::atomic<bool> g_linger{false};  // the job aborted: stay 500 ms at exit (MpiWorld::linger_after_abort)
sem_t g_wake;
std::atomic<const char*> g_abort_line{nullptr};  // "...error: rank R: stopped by mpirun: <abort>\n", never freed
int g_rank = 0;
const long* g_pids = nullptr;  // MpiWorld::pids_
int g_size = 0;

void put(int fd, const char* text) {
  std::size_t n = 0;
  while (text[n] != '\0') ++n;
  [[maybe_unused]] const ssize_t written = ::write(fd, text, n);
}

// Decimal digits of v into out (at least 24 chars); returns out.
char* decimal(long v, char* out) {
  char digits[24];
  int n = 0;
  do digits[n++] = static_cast<char>('0' + v % 10);
  while ((v /= 10) > 0 && n < 23);
  for (int i = 0; i < n; ++i) out[i] = digits[n - 1 - i];
  out[n] = '\0';
  return out;
}

bool gone_signal_safe(long pid) {
  char path[64] = "/proc/", number[24], text[512];
  std::size_t at = 6;
  for (const char* d = decimal(pid, number); *d != '\0'; ++d) path[at++] = *d;
  for (const char* d = "/stat"; *d != '\0'; ++d) path[at++] = *d;
  path[at] = '\0';
  const int fd = ::open(path, O_RDONLY);
  if (fd < 0) return true;
  const ssize_t n = ::read(fd, text, sizeof text - 1);
  ::close(fd);
  for (ssize_t i = n - 1; i > 0; --i)
    if (text[i] == ')') return i + 2 < n && (text[i + 2] == 'Z' || text[i + 2] == 'X');
  return false;
}

extern "C" void on_terminate(int) {
  if (!g_terminated.exchange(true)) {
    char number[24];
    if (const char* line = g_abort_line.load(); line != nullptr) {
      put(STDERR_FILENO, line);
    } else {
      int dead = -1;
      for (int r = 0; r < g_size && dead < 0; ++r)
        if (r != g_rank && g_pids[r] > 0 && gone_signal_safe(g_pids[r])) dead = r;
      put(STDERR_FILENO, "shardscope-cli train: error: rank ");
      put(STDERR_FILENO, decimal(g_rank, number));
      put(STDERR_FILENO, ": stopped by mpirun: ");
      if (dead >= 0) {
        put(STDERR_FILENO, "rank ");
        put(STDERR_FILENO, decimal(dead, number));
        put(STDERR_FILENO, " (pid ");
        put(STDERR_FILENO, decimal(g_pids[dead], number));
        put(STDERR_FILENO, ") died: its process is gone (killed by a signal or crashed)\n");
      } else {
        put(STDERR_FILENO, "another process of the job failed (see mpirun's message)\n");
      }
    }
  }
  sem_post(&g_wake);
}

// Sleeps up to ms milliseconds, or until SIGTERM.
void nap(int ms) {
  timespec until{};
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_nsec += static_cast<long>(ms) * 1'000'000;
  until.tv_sec += until.tv_nsec / 1'000'000'000;
  until.tv_nsec %= 1'000'000'000;
  while (sem_timedwait(&g_wake, &until) != 0 && errno == EINTR) {
  }
}

// A process is gone once /proc has no entry for it or it is a zombie
// (killed, not yet reaped by its Open MPI daemon).
bool process_gone(long pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  if (!stat) return true;
  std::string line;
  std::getline(stat, line);
  const auto close = line.rfind(')');
  if (close == std::string::npos || close + 2 >= line.size()) return false;
  const char state = line[close + 2];
  return state == 'Z' || state == 'X';
}

// The whole message at once on stderr (several processes share the terminal).
void print_error(const std::string& text) {
  const std::string line = "shardscope-cli train: error: " + text + "\n";
  [[maybe_unused]] const ssize_t written = ::write(STDERR_FILENO, line.data(), line.size());
}

}  // namespace

void MpiWorld::start_watchdog() {
  g_rank = rank_;
  g_pids = pids_.data();
  g_size = size_;
  sem_init(&g_wake, 0, 0);
  struct sigaction action {};
  action.sa_handler = on_terminate;
  sigemptyset(&action.sa_mask);
  sigaction(SIGTERM, &action, nullptr);
  linger_after_abort();
  const std::int64_t now = SteadyClock::now().time_since_epoch().count();
  heard_ns_.assign(static_cast<std::size_t>(size_), now);
  left_.assign(static_cast<std::size_t>(size_), 0);
  listened_ns_ = now;
  watchdog_ = std::thread([this] { watch(); });
}

std::string MpiWorld::abort_message() const {
  std::lock_guard lock(message_mutex_);
  return abort_message_;
}

void MpiWorld::set_aborted(const std::string& message) {
  std::lock_guard lock(message_mutex_);
  if (aborted_.load()) return;
  abort_message_ = message;
  g_abort_line.store((new std::string("shardscope-cli train: error: rank " + std::to_string(rank_) +
                                      ": stopped by mpirun: " + message + "\n"))
                         ->c_str());  // for the SIGTERM handler, which must not allocate
  aborted_at_ = SteadyClock::now().time_since_epoch().count();
  aborted_.store(true);
  g_linger.store(true);
}

// Mutex not held. Taking it once first lets an MPI call another thread has in
// flight end before this thread unwinds its stack; later calls see the mark.
void MpiWorld::raise_aborted() {
  { std::lock_guard lock(mutex_); }
  throw CommAborted(abort_message());
}

void MpiWorld::abort(int by_rank, const std::string& reason) {
  abort_with(abort_text(by_rank, reason), false);
}

// The first abort tells every other process (still there), then marks this
// one aborted. The notices are small, so MPI_Isend delivers them at once
// (shared memory: into the peer's queue; TCP: onto the socket). Once marked,
// this process makes no MPI call that could progress a transfer still in
// flight: the rank's stack unwinds, and finishing a transfer from or into a
// buffer that is gone would touch freed memory. So the mark comes last. The
// watchdog does not wait for the mutex: it must stay free to report mpirun's
// SIGTERM at once.
void MpiWorld::abort_with(const std::string& message, bool from_watchdog) {
  if (aborted_.load() || aborting_.exchange(true)) return;
  {
    std::unique_lock lock(mutex_, std::defer_lock);
    if (from_watchdog ? lock.try_lock() : (lock.lock(), true)) {
      if (!finalizing_.load()) send_abort_notices(message.substr(0, 1000));  // under the eager limit
    }
  }
  set_aborted(message);
}

// Mutex held.
void MpiWorld::send_abort_notices(const std::string& text) {
  notice_text_.assign(text.begin(), text.end());
  notice_text_.push_back('\0');
  for (int r = 0; r < size_; ++r) {
    if (r == rank_ || (pids_[static_cast<std::size_t>(r)] > 0 && process_gone(pids_[static_cast<std::size_t>(r)])))
      continue;
    MPI_Request request;
    if (MPI_Isend(notice_text_.data(), static_cast<int>(notice_text_.size()), MPI_CHAR, r, kAbortTag, control_,
                  &request) == MPI_SUCCESS)
      MPI_Request_free(&request);
  }
}

// Mutex held.
void MpiWorld::poll_abort_notice() {
  if (aborted_.load() || finalizing_.load()) return;
  int flag = 0;
  MPI_Message message;
  MPI_Status status;
  if (MPI_Improbe(MPI_ANY_SOURCE, kAbortTag, control_, &flag, &message, &status) != MPI_SUCCESS || flag == 0) return;
  int length = 0;
  MPI_Get_count(&status, MPI_CHAR, &length);
  std::vector<char> text(static_cast<std::size_t>(std::max(length, 0)) + 1, '\0');
  MPI_Mrecv(text.data(), length, MPI_CHAR, &message, MPI_STATUS_IGNORE);
  text.back() = '\0';
  set_aborted(text.data());
}

// A failing process sends its notice before it exits, so once its pid is gone
// the notice is here: it names the cause, where a gone pid may be a process
// that only followed it out. Rank threads keep the mutex only for moments
// (their blocking calls wait in wait(), a group's creation after meet()).
void MpiWorld::read_pending_notice() {
  if (aborted_.load() || finalizing_.load()) return;
  const auto start = SteadyClock::now();
  while (!mutex_.try_lock()) {
    if (seconds_since(start) > 0.1) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  poll_abort_notice();
  mutex_.unlock();
}

int MpiWorld::dead_peer() const {
  for (int r = 0; r < size_; ++r) {
    const long pid = pids_[static_cast<std::size_t>(r)];
    if (r != rank_ && pid > 0 && process_gone(pid)) return r;
  }
  return -1;
}

std::string MpiWorld::dead_peer_text(int peer) const {
  return "rank " + std::to_string(peer) + " (pid " + std::to_string(pids_[static_cast<std::size_t>(peer)]) +
         ") died: its process is gone (killed by a signal or crashed)";
}

// Every 100 ms (at once when mpirun sends SIGTERM): an abort notice, a dead
// peer; then ends this process if it is still here well after an abort.
void MpiWorld::watch() {
  while (!stopping_.load()) {
    nap(100);
    bool listened = false;  // this tick read the peers' heartbeats
    if (!aborted_.load() && !finalizing_.load() && mutex_.try_lock()) {
      poll_abort_notice();
      answer_queries();
      heartbeat();
      mutex_.unlock();
      listened = true;
    }
    if (const int dead = aborted_.load() ? -1 : dead_peer(); dead >= 0) {
      read_pending_notice();
      if (!aborted_.load()) abort_with("communication aborted: " + dead_peer_text(dead), true);
    }
    // Silence is judged only on a tick that listened: while a rank thread held
    // the mutex the heard times went stale here, not at the peer (heartbeat()
    // first forgives the time this process did not listen).
    if (const int silent = !listened || aborted_.load() || finalizing_.load() ? -1 : silent_peer(); silent >= 0) {
      read_pending_notice();  // a peer that failed says why before it goes quiet
      if (!aborted_.load()) abort_with("communication aborted: " + silent_peer_text(silent), true);
    }
    if (g_terminated.load()) {  // the handler has said why
      // Its daemon sends SIGKILL 1 s after SIGTERM: linger a little, so it reads the line before this process is gone.
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      _exit(1);
    }
    const std::int64_t at = aborted_at_.load();
    if (aborted_.load() &&
        std::chrono::duration<double>(SteadyClock::now().time_since_epoch() - SteadyClock::duration(at)).count() >
            kExitGraceS) {
      print_error("rank " + std::to_string(rank_) + ": " + abort_message() + " (ended by the watchdog)");
      _exit(1);
    }
  }
}

// After an abort, every process of the job stays a moment after it has said
// why (atexit), so that the first exit, on which mpirun ends the others, comes
// after they have read the notice (read_pending_notice) and can name the cause.
void MpiWorld::linger_after_abort() {
  static std::once_flag registered;
  std::call_once(registered, [] {
    std::atexit([] {
      if (g_linger.load()) std::this_thread::sleep_for(std::chrono::milliseconds(500));
    });
  });
}

// Mutex held: answers the peers' queries (is this process in a communication call?).
void MpiWorld::answer_queries() {
  if (aborted_.load() || finalizing_.load()) return;
  for (;;) {
    int flag = 0;
    MPI_Status status;
    if (MPI_Iprobe(MPI_ANY_SOURCE, kQueryTag, control_, &flag, &status) != MPI_SUCCESS || flag == 0) return;
    int query = 0;
    MPI_Recv(&query, 1, MPI_INT, status.MPI_SOURCE, kQueryTag, control_, MPI_STATUS_IGNORE);
    int& answer = answers_[static_cast<std::size_t>(status.MPI_SOURCE)];
    answer = waiting_.load() > 0 ? 1 : 0;
    MPI_Request request;
    if (MPI_Isend(&answer, 1, MPI_INT, status.MPI_SOURCE, kAnswerTag, control_, &request) == MPI_SUCCESS)
      MPI_Request_free(&request);
  }
}

// Mutex held. Sends this process's heartbeat once a second, and reads the
// peers'. A peer's silence counts only while this process listens: after a
// stretch without the mutex, every peer gets a second's grace again.
void MpiWorld::heartbeat() {
  if (aborted_.load() || finalizing_.load()) return;
  const std::int64_t now = SteadyClock::now().time_since_epoch().count();
  if (now - listened_ns_ > kBeatNs)
    for (std::int64_t& heard : heard_ns_) heard = std::max(heard, now - kBeatNs);
  listened_ns_ = now;
  if (now - beat_sent_ns_ >= kBeatNs) {
    send_heartbeats(1);
    beat_sent_ns_ = now;
  }
  for (;;) {
    int flag = 0, alive = 1;
    MPI_Message message;
    MPI_Status status;
    if (MPI_Improbe(MPI_ANY_SOURCE, kHeartbeatTag, control_, &flag, &message, &status) != MPI_SUCCESS || flag == 0)
      return;
    MPI_Mrecv(&alive, 1, MPI_INT, &message, MPI_STATUS_IGNORE);
    const auto peer = static_cast<std::size_t>(status.MPI_SOURCE);
    heard_ns_[peer] = now;
    if (alive == 0) left_[peer] = 1;
  }
}

// Mutex held. The payloads are static: a send may read them after this returns.
void MpiWorld::send_heartbeats(int alive) {
  static const int kAlive = 1, kLeaving = 0;
  for (int r = 0; r < size_; ++r) {
    if (r == rank_ || left_[static_cast<std::size_t>(r)] != 0) continue;
    MPI_Request request;
    if (MPI_Isend(alive != 0 ? &kAlive : &kLeaving, 1, MPI_INT, r, kHeartbeatTag, control_, &request) == MPI_SUCCESS)
      MPI_Request_free(&request);
  }
}

int MpiWorld::silent_peer() const {
  const std::int64_t now = SteadyClock::now().time_since_epoch().count();
  const auto limit = static_cast<std::int64_t>(options_.heartbeat_timeout_s * 1e9);
  for (int r = 0; r < size_; ++r) {
    const auto i = static_cast<std::size_t>(r);
    if (r != rank_ && left_[i] == 0 && now - heard_ns_[i] > limit) return r;
  }
  return -1;
}

std::string MpiWorld::silent_peer_text(int peer) const {
  const long pid = pids_[static_cast<std::size_t>(peer)];
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%g", options_.heartbeat_timeout_s);
  return "rank " + std::to_string(peer) + (pid > 0 ? " (pid " + std::to_string(pid) + ")" : std::string()) +
         " sent no heartbeat for " + seconds + " s: its process is stopped or frozen (--heartbeat-timeout)";
}

// After a timeout: which processes are not waiting in a communication call
// (hung in their computation) or do not answer within a second (stopped,
// frozen)? Those are the cause; the others wait for them, as this one does.
std::string MpiWorld::ask_peers() {
  static const int query = 1;  // read by the sends after this returns
  std::vector<int> answers(static_cast<std::size_t>(size_), -1);
  {
    std::lock_guard lock(mutex_);
    for (int r = 0; r < size_; ++r) {
      MPI_Request request;
      if (r != rank_ && MPI_Isend(&query, 1, MPI_INT, r, kQueryTag, control_, &request) == MPI_SUCCESS)
        MPI_Request_free(&request);
    }
  }
  const auto start = SteadyClock::now();
  for (int missing = size_ - 1; missing > 0 && seconds_since(start) < 1.0;) {
    int flag = 0;
    {
      std::lock_guard lock(mutex_);
      poll_abort_notice();  // another process was quicker: its message stands
      if (aborted_.load()) return {};
      answer_queries();  // the others may be asking too
      MPI_Status status;
      if (MPI_Iprobe(MPI_ANY_SOURCE, kAnswerTag, control_, &flag, &status) == MPI_SUCCESS && flag != 0) {
        MPI_Recv(&answers[static_cast<std::size_t>(status.MPI_SOURCE)], 1, MPI_INT, status.MPI_SOURCE, kAnswerTag,
                 control_, MPI_STATUS_IGNORE);
        --missing;
      }
    }
    if (flag == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  std::string text;
  for (int r = 0; r < size_; ++r) {
    const int a = answers[static_cast<std::size_t>(r)];
    if (r == rank_ || a == 1) continue;
    text += "; rank " + std::to_string(r) +
            (a < 0 ? " does not answer (stopped or frozen)" : " is not in a communication call (hung computing?)");
  }
  return text;
}

}  // namespace shardscope
