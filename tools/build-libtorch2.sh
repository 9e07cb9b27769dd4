#!/usr/bin/env bash
# Builds the perpcomp binary against LibTorch 2.x: the libtorch that the reference environment's
# torch wheel carries (tools/setup-reference.sh), instead of Debian's LibTorch 1.13. The default
# build stays on Debian's (README's commands need no Python); this one is for speed (docs/PERFORMANCE.md
# "LibTorch 2.x against Debian's 1.13": MKL and oneDNN 3 instead of OpenBLAS).
#
#   bash tools/build-libtorch2.sh [BUILD_DIR]     # default build-libtorch2; the binary is BUILD_DIR/tools/perpcomp
#
# Only the perpcomp target is built; the test suite runs on the default build. The binary loads
# the wheel's libraries from the reference environment (an rpath), so it runs where that
# environment is. Needs LibTorch 2.x headers' C++20 (PC_CXX_STANDARD=20). The wheel is a CUDA build:
# its CMake files look for a CUDA toolkit (TORCH_CUDA_ARCH_LIST skips probing for a GPU), and its
# libtorch_cuda needs NCCL and the other CUDA libraries of the wheel's own packages, found at run
# time through its rpath, so the link allows their symbols to stay undefined. Nothing runs on a GPU.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
out="${1:-$here/build-libtorch2}"
venv="${PERPCOMP_REFENV:-${XDG_CACHE_HOME:-$HOME/.cache}/perpcomp/refenv}"
[ -x "$venv/bin/python" ] || { echo "build-libtorch2.sh: no reference environment at $venv (bash tools/setup-reference.sh)" >&2; exit 1; }
torch=$("$venv/bin/python" -c 'import os, torch; print(os.path.dirname(torch.__file__))')
version=$("$venv/bin/python" -c 'import torch; print(torch.__version__)')
case "$version" in
  2.*) ;;
  *) echo "build-libtorch2.sh: $venv has torch $version, expected 2.x" >&2; exit 1 ;;
esac
echo "build-libtorch2.sh: perpcomp on LibTorch $version from $torch into $out"
TORCH_CUDA_ARCH_LIST="${TORCH_CUDA_ARCH_LIST:-9.0}" cmake -S "$here" -B "$out" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DPC_CXX_STANDARD=20 -DTorch_DIR="$torch/share/cmake/Torch" -DCaffe2_DIR="$torch/share/cmake/Caffe2" \
  -DTORCH_LIBRARY="$torch/lib/libtorch.so" -Dc10_LIBRARY="$torch/lib/libc10.so" \
  -DCMAKE_EXE_LINKER_FLAGS="-Wl,--allow-shlib-undefined" -DPC_REFENV="$venv"
cmake --build "$out" --target perpcomp
"$out/tools/perpcomp" version | head -2
