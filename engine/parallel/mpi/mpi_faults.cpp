// SPDX-License-Identifier: GPL-3.0-or-later
// When a rank process fails: abort notices between the processes, the
// watchdog thread (dead peers, mpirun's SIGTERM, the exit grace) and the
// question asked after a timeout (mpi_world.h, "Faults").
#include <semaphore.h>
#include <signal.h>
#include <unistd.h>

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
constexpr double kExitGraceS = 5.0;  // an aborted process still running after this is ended by the watchdog

using SteadyClock = std::chrono::steady_clock;
double seconds_since(SteadyClock::time_point t) {
  return std::chrono::duration<double>(SteadyClock::now() - t).count();
}

// mpirun ends the job with SIGTERM when one of its processes dies; the
// watchdog then prints which one before this process goes.
// The handler wakes the watchdog at once (sem_post is async-signal-safe): the
// daemon follows SIGTERM with SIGKILL soon after.
std::atomic<bool> g_terminated{false};
sem_t g_wake;
extern "C" void on_terminate(int) {
  g_terminated.store(true);
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
  sem_init(&g_wake, 0, 0);
  struct sigaction action {};
  action.sa_handler = on_terminate;
  sigemptyset(&action.sa_mask);
  sigaction(SIGTERM, &action, nullptr);
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
  aborted_at_ = SteadyClock::now().time_since_epoch().count();
  aborted_.store(true);
}

void MpiWorld::raise_aborted() {
  throw CommAborted(abort_message());
}

void MpiWorld::abort(int by_rank, const std::string& reason) {
  if (aborted_.load()) return;
  set_aborted(by_rank >= 0 ? "communication aborted by rank " + std::to_string(by_rank) + ": " + reason
                           : "communication aborted: " + reason);
  send_abort_notices(false);
}

// Tells every other process (still there) of the abort, and waits up to a
// second for the notices to leave (this process is about to exit). The
// watchdog neither waits for the mutex nor for the notices: it must stay free
// to report mpirun's SIGTERM at once.
void MpiWorld::send_abort_notices(bool from_watchdog) {
  const std::string text = abort_message();
  std::vector<MPI_Request> sent;
  {
    std::unique_lock lock(mutex_, std::defer_lock);
    if (from_watchdog) {
      if (!lock.try_lock()) return;
    } else {
      lock.lock();
    }
    if (finalizing_.load()) return;
    notice_text_.assign(text.begin(), text.end());
    notice_text_.push_back('\0');
    for (int r = 0; r < size_; ++r) {
      if (r == rank_ || (pids_[static_cast<std::size_t>(r)] > 0 && process_gone(pids_[static_cast<std::size_t>(r)])))
        continue;
      MPI_Request request;
      if (MPI_Isend(notice_text_.data(), static_cast<int>(notice_text_.size()), MPI_CHAR, r, kAbortTag, control_,
                    &request) == MPI_SUCCESS)
        sent.push_back(request);
    }
  }
  const auto start = SteadyClock::now();
  int done = 0;
  while (!from_watchdog && !done && seconds_since(start) < 1.0 && !g_terminated.load()) {
    {
      std::lock_guard lock(mutex_);
      MPI_Testall(static_cast<int>(sent.size()), sent.data(), &done, MPI_STATUSES_IGNORE);
    }
    if (!done) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

// Mutex held.
void MpiWorld::poll_abort_notice() {
  if (aborted_.load() || finalizing_.load()) return;
  int flag = 0;
  MPI_Status status;
  if (MPI_Iprobe(MPI_ANY_SOURCE, kAbortTag, control_, &flag, &status) != MPI_SUCCESS || flag == 0) return;
  int length = 0;
  MPI_Get_count(&status, MPI_CHAR, &length);
  std::vector<char> text(static_cast<std::size_t>(std::max(length, 1)), '\0');
  MPI_Recv(text.data(), length, MPI_CHAR, status.MPI_SOURCE, kAbortTag, control_, MPI_STATUS_IGNORE);
  text.back() = '\0';
  set_aborted(text.data());
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
    if (!aborted_.load() && !finalizing_.load() && mutex_.try_lock()) {
      poll_abort_notice();
      mutex_.unlock();
    }
    if (!finalizing_.load() && mutex_.try_lock()) {
      answer_queries();
      mutex_.unlock();
    }
    if (const int dead = aborted_.load() ? -1 : dead_peer(); dead >= 0) {
      set_aborted("communication aborted: " + dead_peer_text(dead));
      send_abort_notices(true);
    }
    if (g_terminated.load()) {
      const int dead = dead_peer();
      print_error("rank " + std::to_string(rank_) + ": stopped by mpirun: " +
                  (aborted_.load() ? abort_message()
                   : dead >= 0     ? dead_peer_text(dead)
                                   : std::string("another process of the job failed (see mpirun's message)")));
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

// Mutex held: answers the peers' queries (is this process in a communication call?).
void MpiWorld::answer_queries() {
  for (;;) {
    int flag = 0;
    MPI_Status status;
    if (MPI_Iprobe(MPI_ANY_SOURCE, kQueryTag, control_, &flag, &status) != MPI_SUCCESS || flag == 0) return;
    int query = 0;
    MPI_Recv(&query, 1, MPI_INT, status.MPI_SOURCE, kQueryTag, control_, MPI_STATUS_IGNORE);
    int& answer = answers_[static_cast<std::size_t>(status.MPI_SOURCE)];
    answer = waiting_.load() > 0 || aborted_.load() ? 1 : 0;  // an aborted process is stopping, not the cause
    MPI_Request request;
    if (MPI_Isend(&answer, 1, MPI_INT, status.MPI_SOURCE, kAnswerTag, control_, &request) == MPI_SUCCESS)
      MPI_Request_free(&request);
  }
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
