#!/usr/bin/env bash
# The README's test command: installs what is missing, builds, and runs the
# whole test suite (CPU). GPU tests live in tests/gpu/ and are run apart.
# SPDX-License-Identifier: GPL-3.0-or-later
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
cd build
ctest --output-on-failure --parallel "$(nproc)" --timeout 900
