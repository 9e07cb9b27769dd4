#!/usr/bin/python3
"""Independent unpacker of perpcomp's `--format awq-gemm` folder (AutoAWQ's GEMM layout).

  awq_unpack.py OUT_DIR [--exact]

Reads OUT_DIR/awq-gemm (config.json + safetensors) and OUT_DIR (the fake-quantized Hugging Face
folder), unpacks every <module>.qweight / .qzeros / .scales as AutoAWQ's WQLinear_GEMM stores them
(int32 words of 8 nibbles, nibble i holding column 8c + [0,2,4,6,1,3,5,7][i]; dequantized
w = (q - z) * scale), and compares with <module>.weight of OUT_DIR:
  - codes: round(w / scale) + z must equal q for every weight (exact);
  - values: |dequantized - w| <= |q - z| * |scale| * 2^-10 (the float16 rounding of the scale),
    or, with --exact, dequantized == w bit for bit (float32 arithmetic);
  - every other tensor of the awq-gemm folder equals OUT_DIR's (biases of packed modules as fp16);
  - config.json's quantization_config is AutoAWQ's (quant_method awq, version gemm, bits 4).
Prints one JSON line with the counts; exits 1 on the first mismatch (message on stderr).
Written from AutoAWQ's documented layout, sharing no code with perpcomp or hf_reference.py.
"""
import json
import os
import struct
import sys

import numpy as np
import torch

DTYPES = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16, "I32": torch.int32,
          "F64": torch.float64, "I64": torch.int64}
ORDER = [0, 2, 4, 6, 1, 3, 5, 7]


def read_folder(folder):
    files = [f for f in sorted(os.listdir(folder)) if f.endswith(".safetensors")]
    out = {}
    for f in files:
        data = open(os.path.join(folder, f), "rb").read()
        (n,) = struct.unpack("<Q", data[:8])
        header = json.loads(data[8:8 + n])
        base = 8 + n
        for name, info in header.items():
            if name == "__metadata__":
                continue
            b, e = info["data_offsets"]
            raw = bytearray(data[base + b:base + e])
            t = torch.frombuffer(raw, dtype=DTYPES[info["dtype"]]) if raw else torch.empty(0, dtype=DTYPES[info["dtype"]])
            out[name] = t.reshape(info["shape"]).clone()
    return out


def fail(msg):
    sys.stderr.write("awq_unpack: " + msg + "\n")
    sys.exit(1)


def unpack(words):
    """(rows, c) int32 -> (rows, 8c) int64 values 0..15."""
    w = words.to(torch.int64) & 0xFFFFFFFF
    rows, c = w.shape
    out = torch.empty(rows, c, 8, dtype=torch.int64)
    for i in range(8):
        out[:, :, ORDER[i]] = (w >> (4 * i)) & 0xF
    return out.reshape(rows, 8 * c)


def main(argv):
    if len(argv) < 2:
        fail("usage: awq_unpack.py OUT_DIR [--exact]")
    out_dir, exact = argv[1], "--exact" in argv[2:]
    gemm_dir = os.path.join(out_dir, "awq-gemm")
    cfg = json.load(open(os.path.join(gemm_dir, "config.json")))
    qc = cfg.get("quantization_config")
    if not qc or qc.get("quant_method") != "awq" or qc.get("version") != "gemm" or qc.get("bits") != 4:
        fail("quantization_config is not AutoAWQ's GEMM 4-bit: %r" % (qc,))
    conv1d = cfg.get("model_type") == "gpt2"
    packed = read_folder(gemm_dir)
    fake = read_folder(out_dir)
    modules = sorted(n[:-len(".qweight")] for n in packed if n.endswith(".qweight"))
    if not modules:
        fail("no .qweight tensor in " + gemm_dir)
    worst = 0.0
    bit_exact = 0
    for m in modules:
        if m + ".weight" in packed:
            fail(m + ".weight is still present next to " + m + ".qweight")
        qweight, qzeros, scales = packed[m + ".qweight"], packed[m + ".qzeros"], packed[m + ".scales"]
        if qweight.dtype != torch.int32 or qzeros.dtype != torch.int32 or scales.dtype != torch.float16:
            fail("%s: dtypes %s %s %s" % (m, qweight.dtype, qzeros.dtype, scales.dtype))
        q = unpack(qweight)                       # (in, out)
        z = unpack(qzeros)                        # (groups, out)
        s = scales.to(torch.float32)              # (groups, out)
        n_in, n_out = q.shape
        groups = z.shape[0]
        if s.shape != (groups, n_out) or n_in % groups:
            fail("%s: shapes qweight %s qzeros %s scales %s" % (m, tuple(qweight.shape), tuple(qzeros.shape),
                                                                   tuple(scales.shape)))
        g = n_in // groups
        gs = qc["group_size"] if qc["group_size"] > 0 else n_in
        if g != gs:
            fail("%s: %d groups of %d inputs, config group_size %d" % (m, groups, g, qc["group_size"]))
        rows = torch.arange(n_in) // g
        zz, ss = z[rows], s[rows]                 # (in, out)
        deq = (q - zz).to(torch.float32) * ss
        w = fake[m + ".weight"].to(torch.float32)
        w = w if conv1d else w.t()                # (in, out)
        if w.shape != deq.shape:
            fail("%s: weight %s vs packed %s" % (m, tuple(w.shape), tuple(deq.shape)))
        codes = torch.round(w / ss).to(torch.int64) + zz
        bad = (codes != q).nonzero()
        if len(bad):
            i, j = bad[0].tolist()
            fail("%s: code of weight (out %d, in %d) is %d, packed %d" % (m, j, i, codes[i, j], q[i, j]))
        diff = (deq - w).abs()
        bound = (q - zz).abs().to(torch.float32) * ss.abs() * 2.0 ** -10
        if exact and not torch.equal(deq, w):
            i, j = (deq != w).nonzero()[0].tolist()
            fail("%s: dequantized %r != weight %r at (out %d, in %d)" % (m, deq[i, j].item(), w[i, j].item(), j, i))
        if (diff > bound).any():
            i, j = (diff > bound).nonzero()[0].tolist()
            fail("%s: |dequantized - weight| = %g beyond the fp16 scale rounding %g" % (m, diff[i, j], bound[i, j]))
        bit_exact += int(torch.equal(deq, w))
        worst = max(worst, float(diff.max()))
        if m + ".bias" in packed:
            if not torch.equal(packed[m + ".bias"], fake[m + ".bias"].to(torch.float16)):
                fail(m + ".bias differs from the fake-quantized folder's (as fp16)")
    packed_names = {m + "." + k for m in modules for k in ("qweight", "qzeros", "scales", "bias")}
    for name, t in packed.items():
        if name in packed_names:
            continue
        if name not in fake or not torch.equal(t, fake[name]):
            fail("tensor %s is not copied unchanged" % name)
    for name in fake:
        base = name.rsplit(".", 1)[0]
        if base not in modules and name not in packed:
            fail("tensor %s is missing from the awq-gemm folder" % name)
    print(json.dumps({"modules": len(modules), "bit_exact_modules": bit_exact, "max_abs_diff": worst,
                      "group_size": qc["group_size"], "modules_to_not_convert": qc.get("modules_to_not_convert")}))


if __name__ == "__main__":
    main(sys.argv)
