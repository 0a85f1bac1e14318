// SPDX-License-Identifier: GPL-3.0-or-later
// The MPI world of a rank process: start-up, groups, waiting with a deadline,
// abort notices and the watchdog (mpi_world.h).
#include "parallel/mpi/mpi_world.h"

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

namespace shardscope {

namespace {

constexpr int kAbortTag = 7;
constexpr int kQueryTag = 8;   // "are you waiting in a communication call?" (after a timeout)
constexpr int kAnswerTag = 9;  // 1: waiting, 0: not (computing, or hung in it)
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

std::string mpi_error_text(int rc) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(rc, text, &length) != MPI_SUCCESS) return "MPI error " + std::to_string(rc);
  return std::string(text, static_cast<std::size_t>(length));
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

bool MpiWorld::launched_by_mpirun() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr || std::getenv("PMI_SIZE") != nullptr ||
         std::getenv("PMIX_RANK") != nullptr;
}

MpiWorld::MpiWorld(const MpiOptions& options) : options_(options) {
  // Shared-memory messages by copy-in/copy-out, not by reading the peer's
  // memory (CMA): containers often forbid process_vm_readv, and a peer that
  // fails mid-send would leave "Read -1, errno = 14" noise. A user's setting wins.
  setenv("OMPI_MCA_btl_vader_single_copy_mechanism", "none", 0);
  int initialized = 0, provided = 0;
  MPI_Initialized(&initialized);
  if (initialized == 0 && MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS)
    throw std::runtime_error("MPI_Init_thread failed: this process cannot join the MPI job");
  if (initialized != 0) MPI_Query_thread(&provided);
  if (provided < MPI_THREAD_SERIALIZED)
    throw std::runtime_error("this MPI library gives thread level " + std::to_string(provided) +
                             "; the rank's threads need MPI_THREAD_SERIALIZED or better");
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);  // errors come back to us: we name the rank
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  MPI_Comm_dup(MPI_COMM_WORLD, &control_);
  exchange_pids();
  sem_init(&g_wake, 0, 0);
  struct sigaction action {};
  action.sa_handler = on_terminate;
  sigemptyset(&action.sa_mask);
  sigaction(SIGTERM, &action, nullptr);
  watchdog_ = std::thread([this] { watch(); });
}

MpiWorld::~MpiWorld() {
  if (!aborted_.load()) {
    finalizing_.store(true);  // the watchdog makes no MPI calls from here on, but still watches the peers
    MPI_Comm_free(&control_);
    MPI_Finalize();
  }
  stopping_.store(true);
  if (watchdog_.joinable()) watchdog_.join();
}

// Every process's pid, and whether it runs on this machine (its hostname).
void MpiWorld::exchange_pids() {
  struct Entry {
    char host[64];
    long pid;
  } mine{};
  gethostname(mine.host, sizeof mine.host - 1);
  mine.pid = static_cast<long>(getpid());
  std::vector<Entry> all(static_cast<std::size_t>(size_));
  MPI_Allgather(&mine, sizeof mine, MPI_BYTE, all.data(), sizeof mine, MPI_BYTE, MPI_COMM_WORLD);
  pids_.assign(static_cast<std::size_t>(size_), 0);
  answers_.assign(static_cast<std::size_t>(size_), 0);
  for (int r = 0; r < size_; ++r) {
    const Entry& e = all[static_cast<std::size_t>(r)];
    if (std::strncmp(e.host, mine.host, sizeof mine.host) == 0) pids_[static_cast<std::size_t>(r)] = e.pid;
  }
}

std::unique_ptr<Communicator> MpiWorld::communicator(const std::vector<int>& members, DeviceClock* clock,
                                                     EventSink* sink) {
  int me = -1;
  for (std::size_t i = 0; i < members.size(); ++i) {
    if (members[i] < 0 || members[i] >= size_)
      throw std::invalid_argument("MpiWorld::communicator: rank " + std::to_string(members[i]) +
                                  " is outside the job's " + std::to_string(size_) + " processes");
    if (members[i] == rank_) me = static_cast<int>(i);
  }
  if (me < 0) throw std::invalid_argument("MpiWorld::communicator: this process is not a member of the group");
  // MPI_Comm_create_group, not MPI_Comm_split: only the members call it, so
  // each process makes just its own groups (a split would need every process
  // in every call). The tag tells concurrent creations apart.
  unsigned tag = 17;
  for (const int m : members) tag = tag * 31u + static_cast<unsigned>(m);
  MPI_Comm comm = MPI_COMM_NULL;
  call("MPI_Comm_create_group", [&] {
    MPI_Group world_group, group;
    MPI_Comm_group(MPI_COMM_WORLD, &world_group);
    MPI_Group_incl(world_group, static_cast<int>(members.size()), members.data(), &group);
    const int rc = MPI_Comm_create_group(MPI_COMM_WORLD, group, static_cast<int>(tag % 30000u), &comm);
    MPI_Group_free(&group);
    MPI_Group_free(&world_group);
    if (rc == MPI_SUCCESS) MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    return rc;
  });
  return std::make_unique<MpiCommunicator>(*this, comm, members, me, clock, sink);
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

// Polls until every request is done; never longer than the deadline.
void MpiWorld::wait(MPI_Request* requests, int count, const std::string& what, int peer, MPI_Status* statuses) {
  struct Waiting {  // what this process answers a peer's query
    std::atomic<int>& count;
    explicit Waiting(std::atomic<int>& c) : count(c) { ++count; }
    ~Waiting() { --count; }
  } waiting(waiting_);
  const auto start = SteadyClock::now();
  for (long spin = 0;; ++spin) {
    int done = 0, rc;
    {
      std::lock_guard lock(mutex_);
      rc = MPI_Testall(count, requests, &done, statuses);
      if (!done && spin % 256 == 255) poll_abort_notice();
    }
    if (rc != MPI_SUCCESS) fail_call(what.c_str(), rc);
    if (done) return;
    if (!aborted_.load() && seconds_since(start) > options_.timeout_s)
      abort(rank_, "timed out after " + std::to_string(static_cast<int>(options_.timeout_s)) + " s in " + what +
                       (peer >= 0 ? " waiting for rank " + std::to_string(peer) : std::string()) +
                       " (--comm-timeout)" + ask_peers());
    if (aborted_.load()) {
      std::lock_guard lock(mutex_);
      for (int i = 0; i < count; ++i)
        if (requests[i] != MPI_REQUEST_NULL) MPI_Cancel(&requests[i]);
      raise_aborted();
    }
    // Processes may outnumber cores (oversubscribed): yield, then sleep, rather than spin.
    if (spin < 200)
      std::this_thread::yield();
    else
      std::this_thread::sleep_for(std::chrono::microseconds(spin < 2000 ? 20 : 200));
  }
}

void MpiWorld::fail_call(const char* name, int rc) {
  abort(rank_, std::string(name) + " failed: " + mpi_error_text(rc));
  raise_aborted();
}

}  // namespace shardscope
