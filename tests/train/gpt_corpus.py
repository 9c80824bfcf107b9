#!/usr/bin/env python3
"""A tiny GPT (2 pre-norm layers, width 64, 4 heads, context 32, tied embeddings) for
character-level language modelling of the license texts Debian's base-files package ships
(/usr/share/common-licenses, every regular file in name order, concatenated).

Writes to OUT_DIR: gpt.onnx (initial weights, logits [B, vocab, 32] so that cross-entropy reads the
class axis 1), train.npz (ids [M, 32], label [M, 32]: each window's next characters; windows at
seeded random offsets in the first 90% of the text), eval.npz (the same from the last 10%).

usage: /usr/bin/python3 gpt_corpus.py OUT_DIR"""
import math
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

SEQ, BATCH = 32, 16


class Gpt(torch.nn.Module):
    def __init__(self, vocab, d=64, heads=4, layers=2):
        super().__init__()
        self.heads = heads
        self.wte = torch.nn.Embedding(vocab, d)
        self.wpe = torch.nn.Embedding(SEQ, d)
        self.blocks = torch.nn.ModuleList()
        for _ in range(layers):
            self.blocks.append(torch.nn.ModuleDict(dict(
                ln1=torch.nn.LayerNorm(d), qkv=torch.nn.Linear(d, 3 * d), proj=torch.nn.Linear(d, d),
                ln2=torch.nn.LayerNorm(d), fc=torch.nn.Linear(d, 4 * d), out=torch.nn.Linear(4 * d, d))))
        self.lnf = torch.nn.LayerNorm(d)
        torch.nn.init.normal_(self.wte.weight, std=0.02)
        torch.nn.init.normal_(self.wpe.weight, std=0.02)

    def forward(self, ids):
        n, t = ids.shape
        d = self.wte.embedding_dim
        h = self.wte(ids) + self.wpe(torch.arange(t))
        causal = torch.tril(torch.ones(t, t)) > 0
        for b in self.blocks:
            q, k, v = b["qkv"](b["ln1"](h)).reshape(n, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
            s = q @ k.transpose(-1, -2) / math.sqrt(d // self.heads)
            s = torch.where(causal, s, torch.tensor(-1e9))
            h = h + b["proj"]((torch.softmax(s, -1) @ v).transpose(1, 2).reshape(n, t, d))
            h = h + b["out"](F.gelu(b["fc"](b["ln2"](h)), approximate="tanh"))
        return (self.lnf(h) @ self.wte.weight.t()).transpose(1, 2)


def windows(codes, count, rng):
    starts = rng.integers(0, len(codes) - SEQ - 1, count)
    ids = np.stack([codes[s:s + SEQ] for s in starts]).astype(np.int64)
    label = np.stack([codes[s + 1:s + SEQ + 1] for s in starts]).astype(np.int64)
    return ids, label


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    folder = "/usr/share/common-licenses"
    names = sorted(n for n in os.listdir(folder) if os.path.isfile(os.path.join(folder, n)) and not os.path.islink(os.path.join(folder, n)))
    text = "".join(open(os.path.join(folder, n), encoding="utf-8", errors="replace").read() for n in names)
    chars = sorted(set(text))
    codes = np.array([chars.index(c) for c in text], np.int64)
    split = int(len(codes) * 0.9)
    rng = np.random.default_rng(5)
    ids, label = windows(codes[:split], 16000, rng)
    np.savez(os.path.join(out, "train.npz"), ids=ids, label=label)
    ids, label = windows(codes[split:], 512, rng)
    np.savez(os.path.join(out, "eval.npz"), ids=ids, label=label)
    torch.manual_seed(7)
    model = Gpt(len(chars))
    torch.onnx.export(model, (torch.zeros(BATCH, SEQ, dtype=torch.int64),), os.path.join(out, "gpt.onnx"), input_names=["ids"],
                      output_names=["logits"], opset_version=17, do_constant_folding=False)
    print(f"corpus: {len(names)} files, {len(text)} characters, vocabulary {len(chars)}; {len(ids)} eval windows")


if __name__ == "__main__":
    main()
