#!/usr/bin/env bash
# Creates or updates the reference Python environment of the tests and benchmarks: the libraries
# users run (torch, transformers, tokenizers, safetensors, gguf, lm-eval, llm-compressor, llama.cpp) at the
# versions pinned in tools/reference-requirements.txt, from PyPI. The perpcomp binary never uses
# it; tests find it through the CMake cache variable PC_REFENV (same default folder as here).
#
#   bash tools/setup-reference.sh            # venv at ${PERPCOMP_REFENV:-$XDG_CACHE_HOME/perpcomp/refenv}
#   PERPCOMP_REFENV=/some/dir bash tools/setup-reference.sh
#
# Idempotent: the venv keeps the sha256 of the requirements file it was built from; when it
# matches, the script exits at once. An existing venv that already satisfies the pins (e.g. made
# by hand with pip) is checked by pip and stamped without reinstalling anything.
# PERPCOMP_PYTHON picks the interpreter that creates the venv (default python3; 3.9 or newer).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
req="$here/reference-requirements.txt"
venv="${PERPCOMP_REFENV:-${XDG_CACHE_HOME:-$HOME/.cache}/perpcomp/refenv}"
stamp="$venv/.perpcomp-requirements.sha256"
want=$(sha256sum "$req" | cut -d' ' -f1)

if [ -x "$venv/bin/python" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  echo "setup-reference.sh: $venv is up to date"
  exit 0
fi

if [ ! -x "$venv/bin/python" ]; then
  py="${PERPCOMP_PYTHON:-python3}"
  "$py" -c 'import sys; assert sys.version_info >= (3, 9), sys.version' ||
    { echo "setup-reference.sh: $py is older than 3.9; set PERPCOMP_PYTHON" >&2; exit 1; }
  # Debian's python3 needs python3-venv (tools/setup.sh installs it) for ensurepip.
  echo "setup-reference.sh: creating $venv with $("$py" --version)"
  mkdir -p "$(dirname "$venv")"
  "$py" -m venv "$venv"
fi

rm -f "$stamp"
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1
# llama-cpp-python builds llama.cpp from its source distribution. The tests load only text models,
# so its multimodal library (mtmd, imported lazily by llama_cpp) is not built; the build uses every core.
export CMAKE_ARGS="${CMAKE_ARGS:--DLLAVA_BUILD=OFF}" CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}"
echo "setup-reference.sh: installing $(grep -c '==' "$req") pinned packages into $venv (PyPI; torch is large)"
"$venv/bin/python" -m pip install --quiet -r "$req"
# The imports the tests use; a broken install fails here, not inside a test.
"$venv/bin/python" - <<'EOF'
import torch, transformers, tokenizers, safetensors, gguf, numpy, sentencepiece, lm_eval, llmcompressor, llama_cpp
print("setup-reference.sh: torch", torch.__version__, "transformers", transformers.__version__,
      "tokenizers", tokenizers.__version__, "llmcompressor", llmcompressor.__version__)
EOF
echo "$want" > "$stamp"
echo "setup-reference.sh: done ($venv)"
