#!/usr/bin/env bash
# Installs every Debian package perpcomp's build, tests and benchmarks need.
# Non-interactive and idempotent: packages already present are skipped by apt.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git ccache
  libtorch-dev libopenblas0-openmp libopenblas-openmp-dev
  libeigen3-dev libboost-program-options-dev
  libhdf5-dev hdf5-tools
  catch2 libyaml-dev nlohmann-json3-dev
  libsentencepiece-dev libpcre2-dev libicu-dev
  python3 python3-torch python3-numpy python3-h5py python3-scipy
  python3-venv      # tools/setup-reference.sh creates the reference environment with python3 -m venv
  clang-14 libclang-rt-14-dev
  slurm-wlm munge   # the sharded-sweep test starts a single-node Slurm (tests/sweep/)
  chromium          # the report test renders report.html headless (tests/reports/)
  libyaml-cpp-dev
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup.sh: all ${#packages[@]} packages already installed"
  exit 0
fi
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
export DEBIAN_FRONTEND=noninteractive
echo "setup.sh: installing ${missing[*]}"
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
# LibTorch must use OpenBLAS with OpenMP, not the reference BLAS (15x slower fp32 matmul).
for alt in libblas.so.3-x86_64-linux-gnu liblapack.so.3-x86_64-linux-gnu; do
  cand=$(update-alternatives --list "$alt" 2>/dev/null | grep openblas-openmp | head -1 || true)
  [ -n "$cand" ] && $SUDO update-alternatives --set "$alt" "$cand" >/dev/null
done
echo "setup.sh: done"
