#!/usr/bin/env bash
# The sanitizer job (CI runs it from scripts/test.sh): the engine, the CLI and
# the tests that drive them, built in folders of their own and run.
#   build-asan/  AddressSanitizer + UndefinedBehaviorSanitizer (a report fails
#                the test: -fno-sanitize-recover): the engine and CLI tests
#                below, and every fuzz target for SHARDSCOPE_SANITIZE_FUZZ_SECONDS.
#   build-tsan/  ThreadSanitizer: the tests whose ranks are threads.
# Only those targets are built (no GUI, benchmarks or CUDA), so the job fits
# CI's time; the choice and its measured cost: docs/ARCHITECTURE.md, "Fuzzing and sanitizers".
#   usage: scripts/sanitize.sh [asan|tsan|all]     (default: all)
# The last line says what ran, e.g.
#   sanitizers: ASan+UBSan 10/10 tests + 9/9 fuzz targets (60123 cases), TSan 3/3 tests: passed
# SPDX-License-Identifier: GPL-3.0-or-later
set -euo pipefail
cd "$(dirname "$0")/.."
which="${1:-all}"
case "$which" in asan | tsan | all) ;; *) echo "usage: scripts/sanitize.sh [asan|tsan|all]" >&2; exit 2 ;; esac

# Engine and CLI tests under ASan+UBSan: file formats, configs, the estimator,
# output files, the CLI end to end (test_cli runs the sanitized shardscope-cli).
asan_tests=(test_core test_events test_event_queue test_output_file test_chrome_trace test_config_import test_run_schema
  test_estimate test_estimate_time test_pipeline_schedule test_cli test_output_files test_checkpoint)
# Fuzz targets left out of the ASan+UBSan run (by name, e.g. (hf_config)):
# none; a target goes here only with the issue that will fix what it finds.
asan_fuzz_held_back=()
# Ranks as threads of one process: the collectives, then DDP, ZeRO and the
# pipeline (test_parallel_tsan: a subset of test_parallel, tests/CMakeLists.txt).
tsan_tests=(test_communicator test_communicator_abort test_communicator_16bit test_parallel_tsan)
tsan_targets=(test_communicator test_communicator_abort test_communicator_16bit test_parallel)

summary=()
status=0
# Sanitized code runs 2 to 20 times slower than the plain build, whose test
# functions stay under 60 s; Qt Test's own 300 s watchdog per function would
# then stop a correct test on a loaded machine, so ctest's --timeout 900 is the bound here.
export QTEST_FUNCTION_TIMEOUT="${QTEST_FUNCTION_TIMEOUT:-850000}"

configure() {  # folder, sanitizers
  if [ ! -f "$1/build.ninja" ]; then
    cmake -S . -B "$1" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSHARDSCOPE_SANITIZE="$2" \
      -DSHARDSCOPE_BUILD_GUI=OFF -DSHARDSCOPE_BUILD_BENCH=OFF -DSHARDSCOPE_WITH_CUDA=OFF >/dev/null
  fi
}

build() {  # folder, targets...
  local dir="$1" start=$SECONDS
  shift
  cmake --build "$dir" --target "$@" --parallel "$(nproc)"
  echo "sanitize: built $# targets in $dir in $((SECONDS - start)) s" >&2
}

# ctest in `folder` for the tests matching `regex` (and not `exclude`); prints
# "passed/total" (it runs in $(...): the caller judges the counts).
run_ctest() {  # folder, regex[, exclude]
  local log="$1/sanitize-ctest.log" exclude=()
  [ -n "${3:-}" ] && exclude=(-E "$3")
  (cd "$1" && ctest -R "$2" "${exclude[@]}" --output-on-failure --parallel "$(nproc)" --timeout 900) >"$log" 2>&1 ||
    true
  cat "$log" >&2
  local total failed
  total="$(sed -n 's/.* tests failed out of \([0-9]*\).*/\1/p' "$log")"
  failed="$(sed -n 's/.* \([0-9]*\) tests failed out of.*/\1/p' "$log")"
  echo "$((${total:-0} - ${failed:-0}))/${total:-0}"
}

all_passed() {  # passed/total
  [ "${1%/*}" = "${1#*/}" ] && [ "${1#*/}" -gt 0 ]
}

names_regex() {  # names... -> ^(a|b)$ (nothing for no names)
  local IFS='|'
  [ $# -eq 0 ] || echo "^($*)\$"
}

if [ "$which" != tsan ]; then
  # ASan's allocator returns null (std::bad_alloc, a fuzz failure naming its
  # input) past 2 GiB instead of aborting; leaks are reported at exit.
  export ASAN_OPTIONS="${ASAN_OPTIONS:-allocator_may_return_null=1:max_allocation_size_mb=2048:detect_leaks=1}"
  export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
  configure build-asan "address,undefined"
  build build-asan shardscope-cli shardscope_fuzz "${asan_tests[@]}"
  tests="$(run_ctest build-asan "$(names_regex "${asan_tests[@]}")")"
  # The fuzz targets: their ctest tests, for fewer seconds than the plain build's.
  export SHARDSCOPE_FUZZ_SECONDS="${SHARDSCOPE_SANITIZE_FUZZ_SECONDS:-5}"
  fuzz="$(run_ctest build-asan '^fuzz_' "$(names_regex "${asan_fuzz_held_back[@]/#/fuzz_}")")"
  cases="$(grep -h '^fuzz [a-z_]*: [0-9]* cases, [0-9]* failures' build-asan/Testing/Temporary/LastTest.log | awk '{n += $3} END {print n + 0}')"
  held="${#asan_fuzz_held_back[@]}"
  summary+=("ASan+UBSan $tests tests + $fuzz fuzz targets ($cases cases$([ "$held" -eq 0 ] || echo "; $held held back"))")
  all_passed "$tests" && all_passed "$fuzz" || status=1
fi

if [ "$which" != asan ]; then
  export TSAN_OPTIONS="${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/scripts/tsan-suppressions.txt}"
  configure build-tsan thread
  build build-tsan "${tsan_targets[@]}"
  tests="$(run_ctest build-tsan "$(names_regex "${tsan_tests[@]}")")"
  summary+=("TSan $tests tests")
  all_passed "$tests" || status=1
fi

line="$(printf '%s, ' "${summary[@]}")"
if [ "$status" -eq 0 ]; then
  echo "sanitizers: ${line%, }: passed"
else
  echo "sanitizers: ${line%, }: FAILED"
fi
exit "$status"
