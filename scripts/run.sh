#!/usr/bin/env bash
# The README's run command: installs what is missing, builds, and starts
# ShardScope on the embedded default (simulated ranks on the CPU, the shipped
# corpus). With a display it opens the GUI, ready to press Run on gpt-tiny with
# dp 2 x pp 2; without one (a server, a container) it runs the same engine from
# the command line instead. Extra arguments go to `shardscope-cli train`.
# SPDX-License-Identifier: GPL-3.0-or-later
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
if [ -x build/app/shardscope ] && { [ -n "${DISPLAY:-}" ] || [ -n "${WAYLAND_DISPLAY:-}" ]; } && [ $# -eq 0 ]; then
  exec ./build/app/shardscope
fi
[ -x build/app/shardscope ] && [ $# -eq 0 ] && echo "run.sh: no display found (DISPLAY / WAYLAND_DISPLAY unset); training from the command line instead"
exec ./build/app/shardscope-cli train --model gpt-tiny --steps 600 --batch 16 --seq 64 --lr 2e-3 --eval-every 100 \
  --log-every 25 "$@"
