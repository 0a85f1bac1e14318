// SPDX-License-Identifier: GPL-3.0-or-later
// The MPI world of a rank process: start-up, groups, and waiting with a
// deadline (mpi_world.h). Aborts and the watchdog: mpi_faults.cpp.
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

using SteadyClock = std::chrono::steady_clock;
double seconds_since(SteadyClock::time_point t) {
  return std::chrono::duration<double>(SteadyClock::now() - t).count();
}

std::string ranks_text(const std::vector<int>& members) {
  std::string text;
  for (const int m : members) text += (text.empty() ? "" : ", ") + std::to_string(m);
  return text;
}

std::string mpi_error_text(int rc) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(rc, text, &length) != MPI_SUCCESS) return "MPI error " + std::to_string(rc);
  return std::string(text, static_cast<std::size_t>(length));
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
  // Copy-in/copy-out moves a large message in 32 KB fragments, of which ob1
  // keeps only 3 in flight per message by default: 96 KB per round trip between
  // the two processes' tests. 64 fill the 2 MB that the 4 MB shared segment
  // can spare, and measured 1.5-4x the bandwidth (docs/PERFORMANCE.md).
  setenv("OMPI_MCA_pml_ob1_send_pipeline_depth", "64", 0);
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
  start_watchdog();
}

MpiWorld::~MpiWorld() {
  if (!aborted_.load()) {
    // Under the mutex: a watchdog call on the control communicator is over
    // before it is freed, and none comes after (they check finalizing_ under
    // the mutex). The watchdog still watches the peers without it.
    std::lock_guard lock(mutex_);
    send_heartbeats(0);  // leaving: MPI_Finalize may wait for the others, silent
    finalizing_.store(true);
    MPI_Comm_free(&control_);
    MPI_Finalize();
  }
  stopping_.store(true);
  if (watchdog_.joinable()) watchdog_.join();
  // This process says why itself now (its error, then the exit's linger): mpirun's SIGTERM would say it twice.
  if (aborted_.load()) ::signal(SIGTERM, SIG_IGN);
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
    if (r < rank_ && pids_[static_cast<std::size_t>(r)] > 0) ++local_rank_;
  }
}

std::string MpiWorld::broadcast_from_rank0(const std::string& text) {
  int length = static_cast<int>(text.size());
  MPI_Request request;
  call("MPI_Ibcast", [&] { return MPI_Ibcast(&length, 1, MPI_INT, 0, MPI_COMM_WORLD, &request); });
  wait(&request, 1, "a broadcast from rank 0", rank_ == 0 ? -1 : 0);
  std::string out = rank_ == 0 ? text : std::string(static_cast<std::size_t>(length), '\0');
  call("MPI_Ibcast", [&] { return MPI_Ibcast(out.data(), length, MPI_CHAR, 0, MPI_COMM_WORLD, &request); });
  wait(&request, 1, "a broadcast from rank 0", rank_ == 0 ? -1 : 0);
  return out;
}

std::vector<std::string> MpiWorld::gather_to_rank0(const std::string& text) {
  int length = static_cast<int>(text.size());
  std::vector<int> lengths(rank_ == 0 ? static_cast<std::size_t>(size_) : 0), offsets(lengths.size());
  MPI_Request request;
  call("MPI_Igather",
       [&] { return MPI_Igather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, MPI_COMM_WORLD, &request); });
  wait(&request, 1, "a gather to rank 0", rank_ == 0 ? -1 : 0);
  int total = 0;
  for (std::size_t r = 0; r < lengths.size(); ++r) offsets[r] = total, total += lengths[r];
  std::string all(static_cast<std::size_t>(total), '\0');
  call("MPI_Igatherv", [&] {
    return MPI_Igatherv(text.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR, 0,
                        MPI_COMM_WORLD, &request);
  });
  wait(&request, 1, "a gather to rank 0", rank_ == 0 ? -1 : 0);
  std::vector<std::string> out;
  for (std::size_t r = 0; r < lengths.size(); ++r)
    out.push_back(all.substr(static_cast<std::size_t>(offsets[r]), static_cast<std::size_t>(lengths[r])));
  return out;
}

namespace {

// The group `members` as a number, for the tags that tell groups apart.
unsigned members_hash(const std::vector<int>& members, unsigned seed) {
  for (const int m : members) seed = seed * 31u + static_cast<unsigned>(m);
  return seed;
}

// A tag for the group `members` on the control communicator: the notices'
// and queries' tags are below 100, then one range per use (`range` 0, 1).
int group_tag(const std::vector<int>& members, int range) {
  return 100 + range * 15000 + static_cast<int>(members_hash(members, 23) % 15000u);
}

}  // namespace

// An empty message from each member to every other, waited for as wait() does:
// the blocking call that follows (MPI_Comm_create_group, which keeps the mutex
// until it returns) starts only once every member is there, so a member that
// failed before it is named by its notice or its exit, not waited for forever.
void MpiWorld::meet(const std::vector<int>& members, const std::string& what) {
  const int tag = group_tag(members, 1);
  std::vector<MPI_Request> requests;
  call("MPI_Isend", [&] {
    int rc = MPI_SUCCESS;
    for (const int m : members) {
      if (m == rank_) continue;
      MPI_Request send, receive;
      if ((rc = MPI_Isend(nullptr, 0, MPI_BYTE, m, tag, control_, &send)) != MPI_SUCCESS) break;
      requests.push_back(send);
      if ((rc = MPI_Irecv(nullptr, 0, MPI_BYTE, m, tag, control_, &receive)) != MPI_SUCCESS) break;
      requests.push_back(receive);
    }
    return rc;
  });
  wait(requests.data(), static_cast<int>(requests.size()), what, -1);
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
  const int tag = static_cast<int>(members_hash(members, 17) % 30000u);
  meet(members, "making the communicator of ranks " + ranks_text(members));
  MPI_Comm comm = MPI_COMM_NULL;
  call("MPI_Comm_create_group", [&] {
    MPI_Group world_group, group;
    MPI_Comm_group(MPI_COMM_WORLD, &world_group);
    MPI_Group_incl(world_group, static_cast<int>(members.size()), members.data(), &group);
    const int rc = MPI_Comm_create_group(MPI_COMM_WORLD, group, tag, &comm);
    MPI_Group_free(&group);
    MPI_Group_free(&world_group);
    if (rc == MPI_SUCCESS) MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    return rc;
  });
  return std::make_unique<MpiCommunicator>(*this, comm, members, me, clock, sink);
}

// One message from the first member to each other, on the control
// communicator, tagged by the group (the abort notices' tags are below 100).
void MpiWorld::share(const std::vector<int>& members, void* data, int bytes) {
  const int tag = group_tag(members, 0);
  const int root = members.front();
  std::vector<MPI_Request> requests;
  call("MPI_Isend", [&] {
    int rc = MPI_SUCCESS;
    for (const int m : members) {
      if (m == rank_ || (rank_ != root && m != root)) continue;
      MPI_Request request;
      rc = rank_ == root ? MPI_Isend(data, bytes, MPI_BYTE, m, tag, control_, &request)
                         : MPI_Irecv(data, bytes, MPI_BYTE, root, tag, control_, &request);
      if (rc != MPI_SUCCESS) break;
      requests.push_back(request);
    }
    return rc;
  });
  wait(requests.data(), static_cast<int>(requests.size()), "sharing the NCCL unique id", rank_ == root ? -1 : root);
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
    int done = 0, rc = MPI_SUCCESS;
    {
      std::lock_guard lock(mutex_);
      if (aborted_.load()) break;  // the requests stay as they are: no MPI progress after an abort
      rc = MPI_Testall(count, requests, &done, statuses);
      if (!done && spin % 256 == 255) poll_abort_notice();
    }
    if (rc != MPI_SUCCESS) fail_call(what.c_str(), rc);
    if (done) return;
    if (!aborted_.load() && seconds_since(start) > options_.timeout_s)
      abort(rank_, "timed out after " + std::to_string(static_cast<int>(options_.timeout_s)) + " s in " + what +
                       (peer >= 0 ? " waiting for rank " + std::to_string(peer) : std::string()) + " (--comm-timeout)" +
                       ask_peers());
    if (aborted_.load()) break;
    // Open MPI moves data only inside MPI calls, so tests pace a transfer; but
    // processes may outnumber cores (4 ranks on 2 in CI), and a spinner takes
    // the core its peer needs. So: yield, then sleep (longer once the wait is
    // long). Measured against this (docs/PERFORMANCE.md): spinning through the
    // wait was slowest under load, and back-to-back tests after each completed
    // request, or yields for 0.5 ms, were no faster, slower on 4 processes.
    if (spin < 200)
      std::this_thread::yield();
    else
      std::this_thread::sleep_for(std::chrono::microseconds(spin < 2000 ? 20 : 200));
  }
  raise_aborted();
}

void MpiWorld::fail_call(const char* name, int rc) {
  abort(rank_, std::string(name) + " failed: " + mpi_error_text(rc));
  raise_aborted();
}

}  // namespace shardscope
