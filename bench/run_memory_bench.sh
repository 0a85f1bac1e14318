#!/usr/bin/env bash
# The process's resident memory against the ledger, per ZeRO stage: each layout
# runs in its own process (shardscope-cli train), whose closing line gives the
# ledger's peak (every rank's peak, summed) and the resident-set peak (VmHWM).
# With every large buffer unmapped when freed and the collectives' staging on
# the ledger, the two agree and fall together from ZeRO-0 to ZeRO-3.
#   bench/run_memory_bench.sh [MODEL] [DP]     (default: gpt2-124m 2; 2 steps, batch 2 x 64)
# SPDX-License-Identifier: GPL-3.0-or-later
set -euo pipefail
cd "$(dirname "$0")/.."
model=${1:-gpt2-124m}
dp=${2:-2}
cli=build/app/shardscope-cli
[ -x "$cli" ] || { echo "build first: bash scripts/build.sh" >&2; exit 2; }
printf '%-22s %16s %16s %10s\n' layout "ledger peak MiB" "RSS peak MiB" "RSS/ledger"
for zero in 0 1 2 3; do
  line=$("$cli" train --model "$model" --steps 2 --batch 2 --seq 64 --dp "$dp" --zero "$zero" |
    grep '^memory: ledger peak')
  ledger=$(sed -E 's/^memory: ledger peak ([0-9.]+) MiB.*/\1/' <<<"$line")
  rss=$(sed -E 's/.*process resident peak ([0-9.]+) MiB.*/\1/' <<<"$line")
  awk -v l="dp $dp ZeRO-$zero" -v a="$ledger" -v b="$rss" 'BEGIN { printf "%-22s %16s %16s %10.3f\n", l, a, b, b / a }'
done
