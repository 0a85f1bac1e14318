#!/usr/bin/env bash
# The README's test command: installs what is missing, builds, and runs the
# whole test suite (CPU), then the GPU tests (tests/gpu/run.sh), which print
# "skipped: no GPU (<reason>)" and pass where no GPU is usable.
# SPDX-License-Identifier: GPL-3.0-or-later
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
(cd build && ctest --output-on-failure --parallel "$(nproc)" --timeout 900)
bash tests/gpu/run.sh build
