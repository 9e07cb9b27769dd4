#!/usr/bin/python3
"""Exact sparsity (docs/PRUNING.md) on every block linear of pruned models.

  check_sparsity.py OUT_DIR RATIO PATTERN [block]

PATTERN: unstructured (per row: floor(ratio*in) zeros per row), N:M (exactly N zeros in each full
M-window, tail dense), or with 'block': SparseGPT, floor(ratio*rows*len) zeros per 128-column block.
Reads model.safetensors with numpy (no safetensors package needed)."""
import json, math, re, struct, sys
import numpy as np

def load(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        head = json.loads(f.read(n))
        base = 8 + n
        out = {}
        for k, v in head.items():
            if k == "__metadata__": continue
            assert v["dtype"] == "F32", (k, v["dtype"])
            a, b = v["data_offsets"]
            f.seek(base + a)
            out[k] = np.frombuffer(f.read(b - a), dtype="<f4").reshape(v["shape"])
        return out

def main(d, ratio, pattern, block=False):
    w = load(d + "/model.safetensors")
    linears = [k for k in w if re.search(r"layers\.\d+\..*\.weight$", k) and w[k].ndim == 2]
    bad = 0
    for k in sorted(linears):
        z = (w[k] == 0)
        rows, cols = z.shape
        if ":" in pattern:
            n, m = map(int, pattern.split(":"))
            full = cols // m
            per = z[:, :full * m].reshape(rows, full, m).sum(-1)
            ok = (per == n).all()
        elif block:
            ok = all(z[:, c:c + 128].sum() == math.floor(ratio * rows * min(128, cols - c)) for c in range(0, cols, 128))
        else:
            ok = (z.sum(1) == math.floor(ratio * cols)).all()
        if not ok:
            bad += 1
            print("FAIL", k)
    print("%s: %d linears, %d fail (%s %s%s)" % (d, len(linears), bad, ratio, pattern, " per block" if block else ""))
    return bad

if __name__ == "__main__":
    sys.exit(1 if main(sys.argv[1], float(sys.argv[2]), sys.argv[3], len(sys.argv) > 4) else 0)
