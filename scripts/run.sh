#!/usr/bin/env bash
# The README's run command: installs what is missing, builds, and starts
# ShardScope on the embedded default (CPU, the shipped corpus). Until the GUI
# lands this is a CLI training demo of gpt-tiny; extra arguments go to
# `shardscope-cli train`.
# SPDX-License-Identifier: GPL-3.0-or-later
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
exec ./build/app/shardscope-cli train --model gpt-tiny --steps 600 --batch 16 --seq 64 --lr 2e-3 --eval-every 100 \
  --log-every 25 "$@"
