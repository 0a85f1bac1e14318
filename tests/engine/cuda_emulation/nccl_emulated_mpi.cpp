// SPDX-License-Identifier: GPL-3.0-or-later
// The emulated NCCL across processes (nccl.h): communicators whose ranks are
// processes of an MPI job (mpirun), as the engine makes them under mpirun.
//
// Bootstrap, as NCCL's: ncclGetUniqueId writes the maker's MPI rank and a
// random nonce into the id; every other rank sends a hello carrying the id it
// was given to the maker, which answers each with the table of every rank's
// process once all have asked, or refuses at once an id it never made (the id
// did not travel from the maker, or changed on the way). The ranks then make
// an MPI communicator of their own (MPI_Comm_create_group).
//
// Calls: a collective sends this rank's send buffer to every peer and
// receives theirs, then computes the result as the one-process emulation does
// (nccl_emulated.cpp: sums in rank order, so every layout's numbers agree);
// a send is MPI_Issend (complete once its receive has begun, as NCCL's
// rendezvous). A header before each collective's data names the call: a
// mismatch between the ranks is an asynchronous error. Every wait polls
// against ncclCommAbort; the buffers of transfers cut short are never freed
// (MPI may still write into them).
#include <mpi.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "nccl_emulated_ops.h"

namespace nccl_emulation {

struct MpiLink {
  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0, size = 1;
  std::atomic<bool> aborted{false};
  std::atomic<bool> failed{false};
};

namespace {

constexpr char kMagic[16] = "ss-nccl-emu-id";
constexpr int kHelloTag = 31001, kWelcomeTag = 31002;    // bootstrap, on MPI_COMM_WORLD
constexpr int kCollectiveTag = 1, kPointToPointTag = 2;  // on the communicator's own

struct IdContents {
  char magic[16];
  std::uint64_t nonce;
  int maker;  // MPI_COMM_WORLD rank of the process that made the id
};
static_assert(sizeof(IdContents) <= NCCL_UNIQUE_ID_BYTES);

struct Hello {
  std::uint64_t nonce;
  int rank, nranks, world;
};

// The ids this process made, and hellos that came for one of them before its
// own ncclCommInitRank began (another communicator was being made).
std::mutex made_mutex;
std::set<std::uint64_t> made;
std::multimap<std::uint64_t, Hello> early;

double wait_limit_s() {
  const char* env = std::getenv("SHARDSCOPE_EMULATED_WAIT_S");
  return env != nullptr && std::atof(env) > 0 ? std::atof(env) : 120.0;
}

int world_rank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

// Why MPI cannot carry this process's communicators, or empty.
std::string mpi_unusable() {
  int initialized = 0, provided = 0;
  MPI_Initialized(&initialized);
  if (initialized == 0) return "communicators across processes need MPI (run the ranks under mpirun)";
  MPI_Query_thread(&provided);
  if (provided != MPI_THREAD_MULTIPLE)
    return "communicators across processes need MPI_THREAD_MULTIPLE (MPI gave level " + std::to_string(provided) + ")";
  return {};
}

ncclResult_t fail(ncclResult_t status, const std::string& what) {
  set_last_error(what);
  return status;
}

// Waits for the requests; false when the communicator is aborted first. A
// wait longer than the emulation's limit is a deadlock: the program ends.
bool wait_all(MpiLink& link, std::vector<MPI_Request>& requests, const char* what,
              MPI_Status* statuses = MPI_STATUSES_IGNORE) {
  const auto start = std::chrono::steady_clock::now();
  for (int spin = 0;; ++spin) {
    int done = 0;
    if (MPI_Testall(static_cast<int>(requests.size()), requests.data(), &done, statuses) != MPI_SUCCESS) {
      link.failed = true;
      set_last_error(std::string(what) + ": an MPI transfer failed (a longer message than the call's, or a peer gone)");
      return false;
    }
    if (done != 0) return true;
    if (link.aborted) return false;
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > wait_limit_s()) {
      std::fprintf(stderr, "NCCL emulation: rank %d of %d waited %g s in %s: a deadlock\n", link.rank, link.size,
                   wait_limit_s(), what);
      std::abort();
    }
    if (spin < 100)
      std::this_thread::yield();
    else
      std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

std::chrono::steady_clock::time_point deadline_after_limit() {
  return std::chrono::steady_clock::now() +
         std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(wait_limit_s()));
}

// Polls for a message from `source` (or MPI_ANY_SOURCE) with `tag` until the
// deadline; false if none came.
bool probe_until(int source, int tag, MPI_Status& status, std::chrono::steady_clock::time_point deadline) {
  while (std::chrono::steady_clock::now() < deadline) {
    int flag = 0;
    MPI_Iprobe(source, tag, MPI_COMM_WORLD, &flag, &status);
    if (flag != 0) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return false;
}

bool made_here(std::uint64_t nonce) {
  std::lock_guard lock(made_mutex);
  return made.count(nonce) != 0;
}

// The maker's side: every rank's process by rank, once each has said hello.
ncclResult_t gather_ranks(const IdContents& id, int nranks, int rank, std::vector<int>& world) {
  world.assign(static_cast<std::size_t>(nranks), -1);
  world[static_cast<std::size_t>(rank)] = world_rank();
  const auto take = [&](const Hello& h) -> ncclResult_t {
    if (h.nranks != nranks || h.rank < 0 || h.rank >= nranks || world[static_cast<std::size_t>(h.rank)] >= 0)
      return fail(ncclInvalidUsage, "ncclCommInitRank: process " + std::to_string(h.world) + " joined as rank " +
                                        std::to_string(h.rank) + " of " + std::to_string(h.nranks) +
                                        ", which does not fit this communicator of " + std::to_string(nranks));
    world[static_cast<std::size_t>(h.rank)] = h.world;
    return ncclSuccess;
  };
  int joined = 1;
  {
    std::lock_guard lock(made_mutex);
    const auto [first, last] = early.equal_range(id.nonce);
    for (auto it = first; it != last; ++it, ++joined)
      if (take(it->second) != ncclSuccess) return ncclInvalidUsage;
    early.erase(id.nonce);
  }
  const auto deadline = deadline_after_limit();
  while (joined < nranks) {
    MPI_Status status;
    if (!probe_until(MPI_ANY_SOURCE, kHelloTag, status, deadline))
      return fail(ncclSystemError, "ncclCommInitRank: only " + std::to_string(joined) + " of " +
                                       std::to_string(nranks) + " ranks joined within " +
                                       std::to_string(static_cast<int>(wait_limit_s())) + " s");
    Hello h{};
    MPI_Recv(&h, sizeof h, MPI_BYTE, status.MPI_SOURCE, kHelloTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (h.nonce == id.nonce) {
      if (take(h) != ncclSuccess) return ncclInvalidUsage;
      ++joined;
    } else if (made_here(h.nonce)) {
      std::lock_guard lock(made_mutex);
      early.emplace(h.nonce, h);
    } else {  // an id this process never made: refused at once
      const long long refusal[2] = {static_cast<long long>(h.nonce), -1};
      MPI_Send(refusal, 2, MPI_LONG_LONG, h.world, kWelcomeTag, MPI_COMM_WORLD);
      set_last_error("process " + std::to_string(h.world) + " asked to join with a unique id this process never made");
    }
  }
  std::vector<long long> welcome{static_cast<long long>(id.nonce), 0};
  welcome.insert(welcome.end(), world.begin(), world.end());
  for (int r = 0; r < nranks; ++r)
    if (r != rank)
      MPI_Send(welcome.data(), static_cast<int>(welcome.size()), MPI_LONG_LONG, world[static_cast<std::size_t>(r)],
               kWelcomeTag, MPI_COMM_WORLD);
  return ncclSuccess;
}

// Another rank's side: hello to the id's maker, then its answer.
ncclResult_t ask_maker(const IdContents& id, int nranks, int rank, std::vector<int>& world) {
  const Hello hello{id.nonce, rank, nranks, world_rank()};
  MPI_Send(&hello, sizeof hello, MPI_BYTE, id.maker, kHelloTag, MPI_COMM_WORLD);
  const auto deadline = deadline_after_limit();
  MPI_Status status;
  if (!probe_until(id.maker, kWelcomeTag, status, deadline))
    return fail(ncclSystemError, "ncclCommInitRank: the id's maker (process " + std::to_string(id.maker) +
                                     ") did not answer within " + std::to_string(static_cast<int>(wait_limit_s())) +
                                     " s");
  std::vector<long long> welcome(static_cast<std::size_t>(nranks) + 2, 0);
  MPI_Recv(welcome.data(), static_cast<int>(welcome.size()), MPI_LONG_LONG, id.maker, kWelcomeTag, MPI_COMM_WORLD,
           MPI_STATUS_IGNORE);
  if (welcome[1] != 0)
    return fail(ncclInvalidUsage, "ncclCommInitRank: rank " + std::to_string(rank) + " of " + std::to_string(nranks) +
                                      ": process " + std::to_string(id.maker) +
                                      " never made this unique id (it did not travel from the group's first rank "
                                      "unchanged)");
  world.assign(welcome.begin() + 2, welcome.end());
  return ncclSuccess;
}

}  // namespace

ncclResult_t mpi_unique_id(ncclUniqueId* id) {
  if (const std::string why = mpi_unusable(); !why.empty()) return fail(ncclSystemError, "ncclGetUniqueId: " + why);
  IdContents contents{};
  std::memcpy(contents.magic, kMagic, sizeof kMagic);
  std::random_device random;
  contents.nonce = (static_cast<std::uint64_t>(random()) << 32 | random()) ^ static_cast<std::uint64_t>(getpid());
  contents.maker = world_rank();
  {
    std::lock_guard lock(made_mutex);
    made.insert(contents.nonce);
  }
  std::memset(id->internal, 0, sizeof id->internal);
  std::memcpy(id->internal, &contents, sizeof contents);
  return ncclSuccess;
}

ncclResult_t mpi_init_rank(std::shared_ptr<MpiLink>& link, int nranks, const ncclUniqueId& id, int rank) {
  if (const std::string why = mpi_unusable(); !why.empty()) return fail(ncclSystemError, "ncclCommInitRank: " + why);
  IdContents contents{};
  std::memcpy(&contents, id.internal, sizeof contents);
  int world_size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);
  if (std::memcmp(contents.magic, kMagic, sizeof kMagic) != 0 || contents.maker < 0 || contents.maker >= world_size)
    return fail(ncclInvalidArgument, "ncclCommInitRank: the unique id is not one ncclGetUniqueId made");
  if (nranks < 1 || rank < 0 || rank >= nranks)
    return fail(ncclInvalidArgument,
                "ncclCommInitRank: rank " + std::to_string(rank) + " of " + std::to_string(nranks));
  // Test hook: this process's copy of the id changed on the way (SHARDSCOPE_EMULATED_NCCL_WRONG_ID=<its MPI rank>).
  if (const char* wrong = std::getenv("SHARDSCOPE_EMULATED_NCCL_WRONG_ID");
      wrong != nullptr && std::atoi(wrong) == world_rank())
    contents.nonce ^= 1;
  // Test hook: this process stops (SIGSTOP) as it starts to join, as a frozen
  // peer would (SHARDSCOPE_EMULATED_NCCL_STOP_INIT=<its MPI rank>).
  if (const char* stop = std::getenv("SHARDSCOPE_EMULATED_NCCL_STOP_INIT");
      stop != nullptr && std::atoi(stop) == world_rank())
    raise(SIGSTOP);
  std::vector<int> world;
  const bool maker = contents.maker == world_rank() && made_here(contents.nonce);
  const ncclResult_t status =
      maker ? gather_ranks(contents, nranks, rank, world) : ask_maker(contents, nranks, rank, world);
  if (status != ncclSuccess) return status;
  link = std::make_shared<MpiLink>();
  MPI_Group world_group, group;
  MPI_Comm_group(MPI_COMM_WORLD, &world_group);
  MPI_Group_incl(world_group, nranks, world.data(), &group);
  const int rc =
      MPI_Comm_create_group(MPI_COMM_WORLD, group, static_cast<int>(contents.nonce % 20000u) + 1000, &link->comm);
  MPI_Group_free(&group);
  MPI_Group_free(&world_group);
  if (rc != MPI_SUCCESS) return fail(ncclSystemError, "ncclCommInitRank: MPI_Comm_create_group failed");
  MPI_Comm_set_errhandler(link->comm, MPI_ERRORS_RETURN);
  link->rank = rank;
  link->size = nranks;
  return ncclSuccess;
}

int mpi_size(const MpiLink& link) {
  return link.size;
}

void mpi_abort(MpiLink& link) {
  link.aborted = true;
}

bool mpi_failed(const MpiLink& link) {
  return link.failed;
}

namespace {

// What a collective's message says about its call, to find a mismatch.
struct Header {
  int kind, type, reduce, root;
  std::uint64_t count;
};

Header header_of(const Op& op) {
  return {static_cast<int>(op.kind), static_cast<int>(op.type), static_cast<int>(op.reduce),
          op.kind == Kind::broadcast ? op.root_or_peer : 0, op.count};
}

// The bytes of its send buffer rank r gives a collective (broadcast: the root's only).
std::size_t contribution(const Op& op, int r, int size) {
  const std::size_t bytes = op.count * element_bytes(op.type);
  if (op.kind == Kind::broadcast) return r == op.root_or_peer ? bytes : 0;
  return op.kind == Kind::reduce_scatter ? bytes * static_cast<std::size_t>(size) : bytes;
}

// The buffers of one transfer: freed when it completes, kept when it is cut short.
struct Buffers {
  std::vector<std::vector<unsigned char>> parts;
};

void collective(MpiLink& link, const Op& op) {
  if (link.aborted) return;
  const int n = link.size, me = link.rank;
  auto* buffers = new Buffers;
  buffers->parts.resize(static_cast<std::size_t>(n));
  std::vector<MPI_Request> requests;
  for (int r = 0; r < n; ++r) {
    auto& part = buffers->parts[static_cast<std::size_t>(r)];
    part.resize(sizeof(Header) + contribution(op, r, n));
    MPI_Request request;
    if (r == me) {
      const Header h = header_of(op);
      std::memcpy(part.data(), &h, sizeof h);
      if (part.size() > sizeof h) std::memcpy(part.data() + sizeof h, op.send, part.size() - sizeof h);
      continue;
    }
    MPI_Irecv(part.data(), static_cast<int>(part.size()), MPI_BYTE, r, kCollectiveTag, link.comm, &request);
    requests.push_back(request);
  }
  const auto& mine = buffers->parts[static_cast<std::size_t>(me)];
  for (int r = 0; r < n; ++r) {
    if (r == me) continue;
    MPI_Request request;
    MPI_Isend(mine.data(), static_cast<int>(mine.size()), MPI_BYTE, r, kCollectiveTag, link.comm, &request);
    requests.push_back(request);
  }
  if (!wait_all(link, requests, kind_name(op.kind))) return;  // the buffers stay: MPI may still use them
  std::vector<Op> ops(static_cast<std::size_t>(n), op);
  for (int r = 0; r < n; ++r) {
    const auto& part = buffers->parts[static_cast<std::size_t>(r)];
    if (std::memcmp(part.data(), &mine[0], sizeof(Header)) != 0) {
      link.failed = true;
      set_last_error(std::string("rank ") + std::to_string(me) + " called " + kind_name(op.kind) + " of " +
                     std::to_string(op.count) + ", rank " + std::to_string(r) +
                     " another call (op, count, type or root)");
      delete buffers;
      return;
    }
    ops[static_cast<std::size_t>(r)].send = part.data() + sizeof(Header);
  }
  const std::vector<unsigned char> result = reduce(ops, me);
  std::memcpy(op.recv, result.data(), result.size());
  delete buffers;
}

}  // namespace

void mpi_run(MpiLink& link, const Op& op) {
  mpi_group(link, {op});
}

// Sends are posted first (MPI_Issend) and waited for last; receives and
// collectives run in order between, each waited for.
void mpi_group(MpiLink& link, const std::vector<Op>& ops) {
  if (link.aborted) return;
  std::vector<MPI_Request> sends;
  for (const Op& op : ops)
    if (op.kind == Kind::send) {
      MPI_Request request;
      MPI_Issend(op.send, static_cast<int>(op.count * element_bytes(op.type)), MPI_BYTE, op.root_or_peer,
                 kPointToPointTag, link.comm, &request);
      sends.push_back(request);
    }
  for (const Op& op : ops) {
    if (op.kind == Kind::send) continue;
    if (op.kind != Kind::recv) {
      collective(link, op);
      continue;
    }
    auto* buffers = new Buffers;
    const std::size_t bytes = op.count * element_bytes(op.type);
    auto& part = buffers->parts.emplace_back(bytes + 1);  // + 1: a longer message than the call's shows
    std::vector<MPI_Request> request(1);
    MPI_Status status;
    MPI_Irecv(part.data(), static_cast<int>(part.size()), MPI_BYTE, op.root_or_peer, kPointToPointTag, link.comm,
              request.data());
    if (!wait_all(link, request, "ncclRecv", &status)) return;
    int received = 0;
    MPI_Get_count(&status, MPI_BYTE, &received);
    if (static_cast<std::size_t>(received) != bytes) {
      link.failed = true;
      set_last_error("rank " + std::to_string(link.rank) + " received " + std::to_string(received) +
                     " bytes from rank " + std::to_string(op.root_or_peer) + " where it expected " +
                     std::to_string(bytes));
    } else {
      std::memcpy(op.recv, part.data(), bytes);
    }
    delete buffers;
  }
  wait_all(link, sends, "ncclSend");
}

}  // namespace nccl_emulation
