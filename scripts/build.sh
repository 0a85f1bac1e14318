#!/usr/bin/env bash
# Configures (once) and builds ShardScope in build/ (Release). Incremental:
# a second run with nothing changed finishes in seconds.
# SPDX-License-Identifier: GPL-3.0-or-later
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -f build/build.ninja ]; then
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "$@"
fi
cmake --build build --parallel "$(nproc)"
