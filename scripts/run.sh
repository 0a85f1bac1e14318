#!/usr/bin/env bash
# The README's run command: installs what is missing, builds only the two
# programs it runs (the GUI `shardscope` and `shardscope-cli`; the tests build in
# scripts/test.sh, the CUDA plugins in a plain `cmake --build build`), and starts
# ShardScope on the embedded default (simulated ranks on the CPU, the shipped
# corpus): gpt-tiny on dp 2 x pp 2, 1F1B with 4 micro-batches.
# With a display it opens the GUI, ready to press Run. Without one (a server, a
# container) it shows the same distributed run from the command line: the
# pipeline schedule with its bubble, the training on 4 simulated ranks, and the
# estimator's bytes per rank and per step. Extra arguments go to
# `shardscope-cli train` (after the layout's flags, so they override them).
# SPDX-License-Identifier: GPL-3.0-or-later
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
if [ ! -f build/build.ninja ]; then
  echo "run.sh: first start: configuring build/ and building only the GUI and the CLI (once; up to 20 minutes on 2 cores)"
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
fi
targets=(shardscope-cli)
# The GUI target exists where Qt 6 Widgets and QCustomPlot were found (grep reads
# all of the list: with -q, pipefail would see cmake killed by SIGPIPE).
if cmake --build build --target help | grep '^shardscope:' > /dev/null; then targets+=(shardscope); fi
cmake --build build --parallel "$(nproc)" --target "${targets[@]}"

if [ -x build/app/shardscope ] && { [ -n "${DISPLAY:-}" ] || [ -n "${WAYLAND_DISPLAY:-}" ]; } && [ $# -eq 0 ]; then
  exec ./build/app/shardscope
fi

cli=./build/app/shardscope-cli
# The GUI's opening run (ConfigPanel::defaultConfig), longer: the loss falls for a while.
layout=(--model gpt-tiny --dp 2 --pp 2 --schedule 1f1b --micro-batches 4 --batch 16 --seq 64)
if [ $# -gt 0 ]; then
  exec "$cli" train "${layout[@]}" --steps 200 --lr 2e-3 --eval-every 50 --log-every 25 "$@"
fi
[ -x build/app/shardscope ] || echo "run.sh: the GUI was not built (Qt 6 Widgets or QCustomPlot missing)"
echo "run.sh: no display found (DISPLAY / WAYLAND_DISPLAY unset): the GUI's opening run from the command line."
echo "run.sh: 4 simulated ranks, data-parallel 2 x pipeline 2 (ranks 0,1 = stage 0; ranks 2,3 = stage 1)."
echo
echo "== The pipeline timeline (GUI tab Pipeline): each stage's forwards F and backwards B per micro-batch =="
"$cli" schedule --pp 2 --micro-batches 4 --schedule 1f1b
echo
echo "== Training on the 4 ranks (GUI: the loss plot; each step all-reduces gradients between the dp pairs) =="
"$cli" train "${layout[@]}" --steps 200 --lr 2e-3 --eval-every 50 --log-every 25
echo
echo "== Memory per rank and bytes moved per step (GUI: the memory bars' predicted bytes, measured to equal the ledger) =="
"$cli" estimate --model gpt-tiny --dp 2 --pp 2 --schedule 1f1b --micro-batches 4 --micro-batch 2 --seq 64 \
  --activations shardscope  # the engine's own (fp32) activations: what its ledger measures
echo
echo "run.sh: with a display, the GUI animates this run (bash scripts/run.sh); on a server,"
echo "  $cli train ${layout[*]} --record run.ssrun  records it for the GUI (File > Open recording)."
