// SPDX-License-Identifier: GPL-3.0-or-later
// Keeps the input that kills the fuzzer: each case runs in this process, and
// a crash (SIGSEGV, SIGABRT from std::terminate, ...), a sanitizer report or a
// case running past its time limit (SIGPROF for CPU time, SIGALRM) first writes the current input to
// <out>/crash-<target>-<hash>.bin and says so on stderr, then dies as it would
// have. The file goes into tests/fuzz/regressions/<target>/ with the fix.
#pragma once

#include <string>
#include <string_view>

namespace shardscope::fuzz {

// Installs the handlers (once per process). `out_dir` must exist.
void install_crash_guard(std::string_view target, const std::string& out_dir, unsigned case_timeout_s);
// The input of the case about to run (it must stay alive until disarm), and the timers of its time limit.
void arm_crash_guard(std::string_view input);
void disarm_crash_guard();

// FNV-1a of the bytes, as 16 hex digits: the name of a saved input.
std::string input_hash(std::string_view bytes);

}  // namespace shardscope::fuzz
