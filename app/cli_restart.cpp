// SPDX-License-Identifier: GPL-3.0-or-later
#include "cli_restart.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>

#include "cli_args.h"
#include "train/lost_work.h"

namespace shardscope::cli {

namespace {

std::atomic<pid_t> g_job{0};
std::atomic<int> g_stop_signal{0};

extern "C" void forward_stop(int signal) {
  g_stop_signal.store(signal);
  if (const pid_t job = g_job.load(); job > 0) ::kill(job, signal);
}

struct JobEnd {
  int code = 0;       // exit code, or 128 + signal
  std::string cause;  // the first error line the job printed
};

// Runs argv with its stderr passed through this process, which keeps the
// first error line (every failing rank prints one: "...: error: rank 2: ...").
JobEnd run_job(const std::vector<std::string>& argv) {
  int pipe_fds[2];
  if (::pipe(pipe_fds) != 0) throw std::runtime_error(std::string("launch: pipe: ") + std::strerror(errno));
  const pid_t child = ::fork();
  if (child < 0) throw std::runtime_error(std::string("launch: fork: ") + std::strerror(errno));
  if (child == 0) {
    ::dup2(pipe_fds[1], STDERR_FILENO);
    ::close(pipe_fds[0]);
    ::close(pipe_fds[1]);
    std::vector<char*> c_argv;
    for (const std::string& a : argv) c_argv.push_back(const_cast<char*>(a.c_str()));
    c_argv.push_back(nullptr);
    ::execvp(c_argv[0], c_argv.data());
    std::fprintf(stderr, "shardscope-cli launch: error: cannot run %s (%s): install Open MPI\n", c_argv[0],
                 std::strerror(errno));
    ::_exit(2);
  }
  g_job.store(child);
  ::close(pipe_fds[1]);
  JobEnd end;
  std::string line;
  char buffer[4096];
  for (ssize_t n; (n = ::read(pipe_fds[0], buffer, sizeof buffer)) != 0;) {
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    [[maybe_unused]] const ssize_t written = ::write(STDERR_FILENO, buffer, static_cast<std::size_t>(n));
    for (ssize_t i = 0; i < n; ++i) {
      if (buffer[i] != '\n') {
        if (line.size() < 2000) line += buffer[i];
        continue;
      }
      if (end.cause.empty() && line.find("error: ") != std::string::npos) end.cause = line;
      line.clear();
    }
  }
  ::close(pipe_fds[0]);
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  g_job.store(0);
  end.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return end;
}

}  // namespace

std::vector<std::string> with_resume(std::vector<std::string> command, const std::string& dir) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < command.size(); ++i) {
    if (command[i] == "--resume") {
      ++i;  // and its value
      continue;
    }
    if (!command[i].starts_with("--resume=")) out.push_back(command[i]);
  }
  out.insert(out.end(), {"--resume", dir});
  return out;
}

int run_with_restarts(const JobArgv& argv, std::vector<std::string> command, int max_restarts) {
  struct sigaction action {};
  action.sa_handler = forward_stop;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  const std::string save_dir = flag_argument(command, "--save-dir");
  for (int restart = 0;; ++restart) {
    // As torchrun's TORCHELASTIC_RESTART_COUNT: the job knows which run it is.
    ::setenv("SHARDSCOPE_RESTART_COUNT", std::to_string(restart).c_str(), 1);
    const JobEnd end = run_job(argv(command));
    if (end.code == 0 || end.code == 2 || g_stop_signal.load() != 0 || restart == max_restarts) return end.code;
    const std::optional<std::string> from = latest_checkpoint(save_dir);
    const std::string where = from               ? "resuming from " + *from
                              : save_dir.empty() ? std::string("from the start (no --save-dir)")
                                                 : "from the start (no checkpoint committed in " + save_dir + " yet)";
    std::fprintf(stderr, "launch: restart %d of %d after the job failed (exit code %d%s%s); %s\n", restart + 1,
                 max_restarts, end.code, end.cause.empty() ? "" : ": ", end.cause.c_str(), where.c_str());
    std::fflush(stderr);
    if (from) command = with_resume(std::move(command), *from);
  }
}

}  // namespace shardscope::cli
