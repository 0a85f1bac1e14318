// SPDX-License-Identifier: GPL-3.0-or-later
#include "crash_guard.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <vector>

// The sanitizers' runtimes call this back before they exit on a report
// (ASan, UBSan with -fno-sanitize-recover); absent (null) in a plain build.
extern "C" void __sanitizer_set_death_callback(void (*callback)()) __attribute__((weak));

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;  // the sanitizer reports SIGSEGV itself, then calls the death callback
#else
constexpr bool kSanitized = false;
#endif

namespace shardscope::fuzz {

namespace {

// What a signal handler may read: set before each case, plain memory only.
const char* g_input = nullptr;
std::size_t g_input_size = 0;
unsigned g_timeout_s = 0;
char g_path_prefix[4096] = {};  // "<out>/crash-<target>-"
char g_target[256] = {};
volatile sig_atomic_t g_dumping = 0;

std::uint64_t fnv1a(const char* data, std::size_t size) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (std::size_t i = 0; i < size; ++i) h = (h ^ static_cast<unsigned char>(data[i])) * 0x100000001b3ull;
  return h;
}

void hex16(std::uint64_t value, char* out) {
  for (int i = 15; i >= 0; --i, value >>= 4) out[i] = "0123456789abcdef"[value & 0xf];
}

void say(const char* text) {
  [[maybe_unused]] const auto n = ::write(2, text, std::strlen(text));
}

// Async-signal-safe: open, write, close, and no allocation.
void dump_input(const char* why) {
  if (g_input == nullptr || g_dumping) return;
  g_dumping = 1;
  char path[4096 + 32];
  const std::size_t prefix = std::strlen(g_path_prefix);
  std::memcpy(path, g_path_prefix, prefix);
  hex16(fnv1a(g_input, g_input_size), path + prefix);
  std::memcpy(path + prefix + 16, ".bin", 5);
  const int fd = ::open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd >= 0) {
    for (std::size_t done = 0; done < g_input_size;) {
      const ssize_t n = ::write(fd, g_input + done, g_input_size - done);
      if (n <= 0) break;
      done += static_cast<std::size_t>(n);
    }
    ::close(fd);
  }
  say("\nfuzz ");
  say(g_target);
  say(": ");
  say(why);
  say(" on this input, saved to ");
  say(path);
  say("\nfuzz ");
  say(g_target);
  say(": add it to tests/fuzz/regressions/");
  say(g_target);
  say("/ with the fix\n");
}

void on_fatal_signal(int signal_number) {
  const char* why = "a fatal signal";
  switch (signal_number) {
    case SIGSEGV:
      why = "SIGSEGV (a bad address or a stack overflow)";
      break;
    case SIGABRT:
      why = "SIGABRT (an abort: std::terminate, an assertion)";
      break;
    case SIGBUS:
      why = "SIGBUS";
      break;
    case SIGFPE:
      why = "SIGFPE (an integer division by zero?)";
      break;
    case SIGILL:
      why = "SIGILL";
      break;
    case SIGPROF:
      why = "a case used more than its CPU time limit (a hang, or quadratic time?)";
      break;
    case SIGALRM:
      why = "a case ran past its wall-clock limit (blocked?)";
      break;
  }
  dump_input(why);
  ::signal(signal_number, SIG_DFL);
  ::raise(signal_number);
}

void on_sanitizer_death() {
  dump_input("a sanitizer report");
}

}  // namespace

void install_crash_guard(std::string_view target, const std::string& out_dir, unsigned case_timeout_s) {
  const std::string prefix = out_dir + "/crash-" + std::string(target) + "-";
  std::strncpy(g_path_prefix, prefix.c_str(), sizeof g_path_prefix - 1);
  std::strncpy(g_target, std::string(target).c_str(), sizeof g_target - 1);
  g_timeout_s = case_timeout_s;
  // A stack overflow (deep recursion) needs a stack of its own to report on.
  static std::vector<char> alt_stack(1 << 16);
  stack_t ss{};
  ss.ss_sp = alt_stack.data();
  ss.ss_size = alt_stack.size();
  if (!kSanitized) ::sigaltstack(&ss, nullptr);
  struct sigaction action {};
  action.sa_handler = on_fatal_signal;
  action.sa_flags = SA_ONSTACK;
  sigemptyset(&action.sa_mask);
  for (int signal_number : {SIGABRT, SIGALRM, SIGPROF}) ::sigaction(signal_number, &action, nullptr);
  if (!kSanitized)
    for (int signal_number : {SIGSEGV, SIGBUS, SIGFPE, SIGILL}) ::sigaction(signal_number, &action, nullptr);
  if (__sanitizer_set_death_callback != nullptr) __sanitizer_set_death_callback(on_sanitizer_death);
}

// The limit counts CPU time (ITIMER_PROF), so a machine busy with other jobs
// does not turn a slow case into a "hang"; a wall-clock alarm of 6 times the
// limit catches a case blocked without using the CPU.
void arm_crash_guard(std::string_view input) {
  g_input = input.data();
  g_input_size = input.size();
  if (g_timeout_s == 0) return;
  itimerval cpu{};
  cpu.it_value.tv_sec = g_timeout_s;
  ::setitimer(ITIMER_PROF, &cpu, nullptr);
  ::alarm(6 * g_timeout_s);
}

void disarm_crash_guard() {
  if (g_timeout_s > 0) {
    const itimerval off{};
    ::setitimer(ITIMER_PROF, &off, nullptr);
    ::alarm(0);
  }
  g_input = nullptr;
  g_input_size = 0;
}

std::string input_hash(std::string_view bytes) {
  char text[16];
  hex16(fnv1a(bytes.data(), bytes.size()), text);
  return std::string(text, 16);
}

}  // namespace shardscope::fuzz
