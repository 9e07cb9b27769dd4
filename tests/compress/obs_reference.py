#!/usr/bin/python3
"""GPTQ / SparseGPT written the way the reference implementations write them (IST-DASLab/gptq
gptq.py `fasterquant`, IST-DASLab/sparsegpt sparsegpt.py `fasterprune`), as an independent check of
compress/gptq.cc and compress/sparsegpt.cc. GPTQ is the reference exactly: quant.py's quantizer
(the range includes 0; symmetric: unsigned codes around 2^(b-1)), dead columns zeroed, dynamic group
parameters from W (block-start) rather than the block's working copy W1. act_order ranks with a
stable argsort (the reference's is not stable; ties are then in column order). SparseGPT keeps
perpcomp's documented deviations (docs/PRUNING.md), applied here too so that the outputs compare:
  - the joint quantizer is perpcomp's (llm-awq semantics);
  - the unstructured SparseGPT mask prunes exactly floor(ratio * size) entries per block (stable
    ranking, ties row-major first) instead of `tmp <= sort(tmp)[int(numel * ratio)]`;
  - SparseGPT inputs have no dead columns here (perpcomp keeps their weights; the reference zeros them).

usage: obs_reference.py DIR   (DIR/in.json, DIR/W.bin (out, in) f32, DIR/X.bin (n, in) f32
                               -> DIR/out.bin (out, in) f32, DIR/out.json {"loss": ...})
"""
import json
import math
import sys

import torch


def group_params(w, bits, sym):
    """Scale and zero (out, 1) of one group w (out, g), perpcomp's quantizer (compress/quantizer.h)."""
    if sym:
        scale = w.abs().amax(dim=1, keepdim=True).clamp_min(1e-5) / (2 ** (bits - 1) - 1)
        return scale, torch.zeros_like(scale)
    qmax = 2 ** bits - 1
    mx, mn = w.amax(dim=1, keepdim=True), w.amin(dim=1, keepdim=True)
    scale = (mx - mn).clamp_min(1e-5) / qmax
    zero = torch.clamp(-torch.round(mn / scale), 0, qmax)
    return scale, zero


def gptq_params(x, bits, sym):
    """quant.py Quantizer.find_params(x, weight=True) with perchannel=True, mse=False: (out, 1) each."""
    maxq = 2 ** bits - 1
    tmp = torch.zeros(x.shape[0])
    xmin = torch.minimum(x.min(1)[0], tmp)
    xmax = torch.maximum(x.max(1)[0], tmp)
    if sym:
        xmax = torch.maximum(torch.abs(xmin), xmax)
        tmp = xmin < 0
        if torch.any(tmp):
            xmin[tmp] = -xmax[tmp]
    tmp = (xmin == 0) & (xmax == 0)
    xmin[tmp] = -1
    xmax[tmp] = +1
    scale = (xmax - xmin) / maxq
    if sym:
        zero = torch.full_like(scale, (maxq + 1) / 2)
    else:
        zero = torch.round(-xmin / scale)
    return scale.unsqueeze(1), zero.unsqueeze(1)


def gptq_quantize(x, scale, zero, bits):
    """quant.py quantize(): unsigned codes in both modes."""
    q = torch.clamp(torch.round(x / scale) + zero, 0, 2 ** bits - 1)
    return scale * (q - zero)


def quantize(x, scale, zero, bits, sym):
    if sym:
        return torch.clamp(torch.round(x / scale), -(2 ** (bits - 1)), 2 ** (bits - 1) - 1) * scale
    return (torch.clamp(torch.round(x / scale) + zero, 0, 2 ** bits - 1) - zero) * scale


def hessian_inverse_upper(H, percdamp):
    H = H.clone()
    damp = percdamp * torch.mean(torch.diag(H))
    diag = torch.arange(H.shape[0])
    H[diag, diag] += damp
    H = torch.linalg.cholesky(H)
    H = torch.cholesky_inverse(H)
    return torch.linalg.cholesky(H, upper=True)


def gptq(W, H, p):
    bits, groupsize, sym = p["bits"], p["group_size"], not p["zero_point"]
    blocksize, actorder, static_groups = p["block_size"], p["act_order"], p["static_groups"]
    columns = W.shape[1]
    scale, zero = gptq_params(W, bits, sym)  # per channel (find_params on W before the walk)
    H = H.clone()
    dead = torch.diag(H) == 0
    H[dead, dead] = 1
    W[:, dead] = 0
    if static_groups:
        groups = []
        for i in range(0, columns, groupsize):
            groups.append(gptq_params(W[:, i:(i + groupsize)], bits, sym))
    if actorder:
        perm = torch.argsort(torch.diag(H), descending=True, stable=True)
        W = W[:, perm]
        H = H[perm][:, perm]
        invperm = torch.argsort(perm)
    Hinv = hessian_inverse_upper(H, p["damp"]).float()
    Q = torch.zeros_like(W)
    loss = 0.0
    for i1 in range(0, columns, blocksize):
        i2 = min(i1 + blocksize, columns)
        count = i2 - i1
        W1 = W[:, i1:i2].clone()
        Q1 = torch.zeros_like(W1)
        Err1 = torch.zeros_like(W1)
        Hinv1 = Hinv[i1:i2, i1:i2]
        for i in range(count):
            w = W1[:, i]
            d = Hinv1[i, i]
            if groupsize != -1:
                if not static_groups:
                    if (i1 + i) % groupsize == 0:
                        scale, zero = gptq_params(W[:, (i1 + i):(i1 + i + groupsize)], bits, sym)
                else:
                    idx = i1 + i
                    if actorder:
                        idx = perm[idx]
                    scale, zero = groups[idx // groupsize]
            q = gptq_quantize(w.unsqueeze(1), scale, zero, bits).flatten()
            Q1[:, i] = q
            loss += float(torch.sum((w - q) ** 2 / d ** 2)) / 2
            err1 = (w - q) / d
            W1[:, i:] -= err1.unsqueeze(1).matmul(Hinv1[i, i:].unsqueeze(0))
            Err1[:, i] = err1
        Q[:, i1:i2] = Q1
        W[:, i2:] -= Err1.matmul(Hinv[i1:i2, i2:])
    if actorder:
        Q = Q[:, invperm]
    return Q, loss


def exact_block_mask(tmp, k):
    """The k smallest of tmp, ties in row-major order first (perpcomp's exact count)."""
    order = torch.argsort(tmp.flatten(), stable=True)
    mask = torch.zeros(tmp.numel(), dtype=torch.bool)
    mask[order[:k]] = True
    return mask.reshape(tmp.shape)


def sparsegpt(W, H, p):
    sparsity, prunen, prunem = p["sparsity"], p["n"], p["m"]
    blocksize = p["block_size"]
    bits = p["bits"]
    sym = not p["zero_point"]
    rows, columns = W.shape
    if bits:
        scale, zero = group_params(W, bits, sym)  # per channel, from the original W
    Hinv = hessian_inverse_upper(H, p["damp"]).float()
    loss = 0.0
    for i1 in range(0, columns, blocksize):
        i2 = min(i1 + blocksize, columns)
        count = i2 - i1
        W1 = W[:, i1:i2].clone()
        Q1 = torch.zeros_like(W1)
        Err1 = torch.zeros_like(W1)
        Hinv1 = Hinv[i1:i2, i1:i2]
        if prunen == 0:
            tmp = W1 ** 2 / (torch.diag(Hinv1).reshape((1, -1))) ** 2
            mask1 = exact_block_mask(tmp, int(math.floor(tmp.numel() * sparsity)))
        else:
            mask1 = torch.zeros_like(W1) == 1
        for i in range(count):
            w = W1[:, i]
            d = Hinv1[i, i]
            if prunen != 0 and i % prunem == 0 and i1 + i + prunem <= columns:
                tmp = W1[:, i:(i + prunem)] ** 2 / (torch.diag(Hinv1)[i:(i + prunem)].reshape((1, -1))) ** 2
                mask1.scatter_(1, i + torch.topk(tmp, prunen, dim=1, largest=False)[1], True)
            q = w.clone()
            q[mask1[:, i]] = 0
            if bits:
                q = quantize(q.unsqueeze(1), scale, zero, bits, sym).flatten()
            Q1[:, i] = q
            loss += float(torch.sum((w - q) ** 2 / d ** 2)) / 2
            err1 = (w - q) / d
            W1[:, i:] -= err1.unsqueeze(1).matmul(Hinv1[i, i:].unsqueeze(0))
            Err1[:, i] = err1
        W[:, i1:i2] = Q1
        W[:, i2:] -= Err1.matmul(Hinv[i1:i2, i2:])
    return W, loss


def main():
    d = sys.argv[1]
    meta = json.load(open(d + "/in.json"))
    out, inp, n = meta["out"], meta["in"], meta["n"]
    W = torch.frombuffer(bytearray(open(d + "/W.bin", "rb").read()), dtype=torch.float32).reshape(out, inp).clone()
    X = torch.frombuffer(bytearray(open(d + "/X.bin", "rb").read()), dtype=torch.float32).reshape(n, inp)
    X = X.double()
    H = X.t().matmul(X) * (2.0 / n)
    fn = gptq if meta["method"] == "gptq" else sparsegpt
    Q, loss = fn(W, H, meta["params"])
    open(d + "/out.bin", "wb").write(Q.contiguous().float().numpy().tobytes())
    json.dump({"loss": loss}, open(d + "/out.json", "w"))


if __name__ == "__main__":
    main()
