#!/usr/bin/env bash
# README's test command: installs everything (Debian packages, the reference Python environment),
# builds every target, fetches the real model and runs the whole test suite.
#
#   bash tools/test.sh
#
# The reference environment (tools/setup-reference.sh: downloads from PyPI, builds llama.cpp) is
# set up while perpcomp builds, since most of its time is downloading and unpacking on one core;
# its output goes to build/setup-reference.log and is printed if it fails. Under CI=true a test
# that cannot run fails instead of skipping (tests/test_support.h).
set -euo pipefail
cd "$(dirname "$0")/.."

bash tools/setup.sh
mkdir -p build
log=build/setup-reference.log
bash tools/setup-reference.sh > "$log" 2>&1 &
reference=$!
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
if ! cmake --build build; then
  wait "$reference" || true
  exit 1
fi
if ! wait "$reference"; then
  cat "$log" >&2
  echo "test.sh: tools/setup-reference.sh failed (log above, kept in $log)" >&2
  exit 1
fi
tail -n 2 "$log"
bash tools/fetch-models.sh
ctest --test-dir build --output-on-failure -j2
