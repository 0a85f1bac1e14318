#!/usr/bin/env python3
# Behaviour check for a restructuring: runs `estimate --json` (and the table),
# and `schedule`, of two shardscope-cli builds on the same generated inputs and
# reports every case whose exit code, stdout or stderr differ.
#   tests/tools/compare_cli_outputs.py BEFORE_CLI AFTER_CLI [--cases N] [--seed S]
# Inputs: random layouts, ZeRO stages, precisions, batch shapes, schedules,
# GPU profiles and model presets, valid and invalid (out of range, refused
# combinations), plus the fixtures' DeepSpeed and accelerate files.
# SPDX-License-Identifier: GPL-3.0-or-later
import argparse
import concurrent.futures
import glob
import os
import random
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "fixtures")


def estimate_args(rng):
    a = ["estimate"]
    a += ["--model", rng.choice(["gpt-tiny", "gpt-mini", "gpt2-124m", "gpt2-medium", "bert-tiny", "bert-base"])]
    bad = rng.random() < 0.1  # one value out of range or a refused combination, now and then
    if rng.random() < 0.8:
        a += ["--dp", str(rng.choice([0, 1000001] if bad else [1, 2, 3, 4, 8, 64, 1024]))]
    pipelined = rng.random() < 0.4
    if pipelined:
        a += ["--pp", str(rng.choice([0, 10001, 13] if bad else [1, 2, 4]))]
    if rng.random() < 0.7:
        a += ["--zero", str(rng.choice([4] if bad else [0, 1] if pipelined else [0, 1, 2, 3]))]
    if rng.random() < 0.1:
        a += ["--dp-mode", rng.choice(["naive", "ddp", "fsdp"])]
    if rng.random() < 0.6:
        a += ["--precision", rng.choice(["fp32", "fp16", "bf16"])]
    if rng.random() < 0.6:
        a += ["--micro-batch", str(rng.choice([1, 2, 4, 16]))]
    if rng.random() < 0.5:
        a += ["--seq", str(rng.choice([16, 64, 128, 256]))]
    if rng.random() < 0.4:
        a += ["--accum", str(rng.choice([1, 2, 8]))]
    if rng.random() < 0.5:
        a += ["--micro-batches", str(rng.choice([1, 2, 4, 8, 32]))]
    if rng.random() < 0.4:
        a += ["--checkpoint", rng.choice(["none", "selective", "full"])]
    if rng.random() < 0.3:
        a += ["--schedule", rng.choice(["gpipe", "1f1b"])]
    if rng.random() < 0.15:
        a += ["--offload-optimizer"]
    if rng.random() < 0.1:
        a += ["--offload-params"]
    if rng.random() < 0.3:
        a += ["--activations", rng.choice(["shardscope", "formula"])]
    if rng.random() < 0.2:
        a += ["--device", rng.choice(["cpu", "cuda"])]
    if rng.random() < 0.5:
        a += ["--gpu", rng.choice(["A100-40GB", "A100-80GB", "H100", "H200", "RTX4090"])]
    if rng.random() < 0.1:
        a += ["--gpu-mem", rng.choice(["24GiB", "80GB"])]
    if rng.random() < 0.2:
        a += ["--gpus-per-node", str(rng.choice([1, 4, 8]))]
    if rng.random() < 0.2:
        a += ["--efficiency", rng.choice(["0.3", "0.5"])]
    if rng.random() < 0.15:
        a += ["--deepspeed-conventions"]
    configs = sorted(glob.glob(os.path.join(FIXTURES, "**", "*.json"), recursive=True))
    configs = [c for c in configs if "ds" in os.path.basename(c) or "deepspeed" in c]
    yamls = sorted(glob.glob(os.path.join(FIXTURES, "**", "*.yaml"), recursive=True))
    if configs and rng.random() < 0.15:
        a += ["--deepspeed", rng.choice(configs)]
    if yamls and rng.random() < 0.1:
        a += ["--accelerate", rng.choice(yamls)]
    if rng.random() < 0.85:
        a += ["--json"]
    return a


def schedule_args(rng):
    a = ["schedule"]
    bad = rng.random() < 0.1
    if rng.random() < 0.9:
        a += ["--pp", str(rng.choice([0, 257] if bad else [1, 2, 3, 4, 8, 16]))]
    if rng.random() < 0.9:
        a += ["--micro-batches", str(rng.choice([0, 5000] if bad else [1, 2, 3, 4, 8, 12, 64]))]
    if rng.random() < 0.7:
        a += ["--schedule", rng.choice(["zb"] if bad else ["gpipe", "1f1b"])]
    if rng.random() < 0.3:
        a += ["--communication"]
    if rng.random() < 0.3:
        a += ["--forward-time", rng.choice(["1", "0.5", "3"])]
    if rng.random() < 0.3:
        a += ["--backward-time", rng.choice(["2", "1", "6.5"])]
    return a


def run(cli, args):
    p = subprocess.run([cli] + args, capture_output=True, timeout=120)
    return p.returncode, p.stdout, p.stderr


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("--cases", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=2)
    o = ap.parse_args()
    rng = random.Random(o.seed)
    cases = [estimate_args(rng) if rng.random() < 0.75 else schedule_args(rng) for _ in range(o.cases)]

    def check(args):
        return args, run(o.before, args), run(o.after, args)

    differ = 0
    codes = {}
    with concurrent.futures.ThreadPoolExecutor(o.jobs) as pool:
        for args, b, a in pool.map(check, cases):
            codes[b[0]] = codes.get(b[0], 0) + 1
            if b != a:
                differ += 1
                if differ <= 10:
                    print("DIFFERS:", " ".join(args))
                    print("  before:", b[0], b[1][-300:], b[2][-300:])
                    print("  after: ", a[0], a[1][-300:], a[2][-300:])
    print(f"{len(cases)} cases ({', '.join(f'exit {k}: {v}' for k, v in sorted(codes.items()))}): "
          f"{len(cases) - differ} identical, {differ} differ")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
