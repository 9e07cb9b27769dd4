#!/usr/bin/python3
"""Histogram of the chosen alpha per AWQ group kind, from compress.h5 files (docs/AWQ.md).

  awq_alpha_hist.py OUT_DIR [OUT_DIR ...]

For each folder prints a Markdown table: one row per group kind (attn_norm->q,k,v, up->down, ...),
the number of scaled groups, the mean alpha, the count in each alpha bin (0, 0.05-0.25, 0.3-0.5,
0.55-0.75, 0.8-0.95), the mean clip factor and the mean search gain objective / objective(alpha=0).
"""
import sys

import h5py
import numpy as np

BINS = [(0.0, 0.0, "0"), (0.05, 0.25, "0.05-0.25"), (0.3, 0.5, "0.3-0.5"), (0.55, 0.75, "0.55-0.75"),
        (0.8, 1.0, "0.8-0.95")]


def column(g, name):
    d = g[name]
    return d.asstr()[()] if h5py.check_string_dtype(d.dtype) else d[()]


def main(dirs):
    for d in dirs:
        with h5py.File(d + "/compress.h5", "r") as f:
            if "awq_group" not in f:
                print("%s: no awq_group table" % d)
                continue
            g = f["awq_group"]
            kind, status = column(g, "kind"), column(g, "status")
            alpha, obj, obj0 = column(g, "alpha"), column(g, "objective"), column(g, "objective_alpha0")
            clip = column(g, "clip_mean") if "clip_mean" in g else np.full(len(kind), np.nan)
            method = column(g, "method")[0]
            print("\n%s (%s)\n" % (d, method))
            print("| group kind | groups | mean alpha | " + " | ".join(b[2] for b in BINS) +
                  " | mean clip factor | loss / loss(alpha=0) |")
            print("|---|---|---|" + "---|" * len(BINS) + "---|---|")
            for k in sorted(set(kind)):
                sel = (kind == k) & (status == "scaled")
                if not sel.any():
                    skipped = (kind == k).sum()
                    print("| %s | 0 (%d skipped) |" % (k, skipped) + " |" * (len(BINS) + 3))
                    continue
                a = alpha[sel]
                counts = [int(((a >= lo - 1e-9) & (a <= hi + 1e-9)).sum()) for lo, hi, _ in BINS]
                c = clip[sel]
                gain = obj[sel] / np.where(obj0[sel] > 0, obj0[sel], np.nan)
                print("| %s | %d | %.2f | %s | %s | %.3f |" % (
                    k, sel.sum(), a.mean(), " | ".join(map(str, counts)),
                    "%.3f" % np.nanmean(c) if np.isfinite(c).any() else "-", np.nanmean(gain)))


if __name__ == "__main__":
    main(sys.argv[1:])
