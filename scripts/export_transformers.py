#!/usr/bin/python3
"""Exports the transformer test models to ONNX (opset 17, random weights from a fixed seed).

Run with the system interpreter, which has Debian's python3-torch:

    /usr/bin/python3 scripts/export_transformers.py encoder OUT.onnx
    /usr/bin/python3 scripts/export_transformers.py decoder OUT.onnx

encoder: torch.nn.TransformerEncoder, 4 layers, d_model 256, 4 heads, feed-forward 1024, GELU,
         input "input" float32 [batch, seq, 256] (example 2x64).
bert_base: the same module at BERT-base size (12 layers, d_model 768, 12 heads, feed-forward 3072,
         GELU), input [batch, 128, 768]: the GPU benchmark's encoder (bench/gpu/).
decoder: a small causal (GPT-style) decoder written out in torch: token and position
         embeddings, 2 blocks of masked multi-head self-attention (d_model 128, 4 heads) and a
         GELU MLP, final LayerNorm and a language-model head over 1000 tokens; input "tokens"
         int64 [batch, seq] (example 2x32), output "logits" [batch, seq, 1000].
Both keep batch and sequence dynamic in the ONNX graph; Precis specializes them with --shape.
"""
import math
import os
import sys

import torch
from torch import nn


class CausalSelfAttention(nn.Module):
    def __init__(self, d_model, heads, max_len):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        mask = torch.triu(torch.full((max_len, max_len), float("-inf")), diagonal=1)
        self.register_buffer("mask", mask)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=2)
        hd = d // self.heads
        q = q.view(b, t, self.heads, hd).transpose(1, 2)
        k = k.view(b, t, self.heads, hd).transpose(1, 2)
        v = v.view(b, t, self.heads, hd).transpose(1, 2)
        scores = q @ k.transpose(-2, -1) / math.sqrt(hd) + self.mask[:t, :t]
        y = torch.softmax(scores, dim=-1) @ v
        return self.proj(y.transpose(1, 2).reshape(b, t, d))


class Block(nn.Module):
    def __init__(self, d_model, heads, max_len):
        super().__init__()
        self.ln1 = nn.LayerNorm(d_model)
        self.attn = CausalSelfAttention(d_model, heads, max_len)
        self.ln2 = nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model))

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class CausalDecoder(nn.Module):
    def __init__(self, vocab=1000, d_model=128, heads=4, layers=2, max_len=128):
        super().__init__()
        self.tok = nn.Embedding(vocab, d_model)
        self.pos = nn.Embedding(max_len, d_model)
        self.blocks = nn.ModuleList([Block(d_model, heads, max_len) for _ in range(layers)])
        self.ln = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab)

    def forward(self, tokens):
        t = tokens.shape[1]
        x = self.tok(tokens) + self.pos(torch.arange(t, device=tokens.device))
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln(x))


def build(name):
    torch.manual_seed(0)
    if name == "encoder":
        layer = nn.TransformerEncoderLayer(d_model=256, nhead=4, dim_feedforward=1024, dropout=0.0,
                                           activation="gelu", batch_first=True)
        model = nn.TransformerEncoder(layer, num_layers=4, enable_nested_tensor=False)
        return model.eval(), torch.randn(2, 64, 256), "input", "output", {0: "batch", 1: "seq"}
    if name == "bert_base":
        layer = nn.TransformerEncoderLayer(d_model=768, nhead=12, dim_feedforward=3072, dropout=0.0,
                                           activation="gelu", batch_first=True)
        model = nn.TransformerEncoder(layer, num_layers=12, enable_nested_tensor=False)
        return model.eval(), torch.randn(1, 128, 768), "input", "output", {0: "batch", 1: "seq"}
    if name == "decoder":
        return CausalDecoder().eval(), torch.randint(0, 1000, (2, 32)), "tokens", "logits", {0: "batch", 1: "seq"}
    sys.exit(f"export_transformers: unknown model '{name}' (encoder, bert_base, decoder)")


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    model, example, in_name, out_name, axes = build(sys.argv[1])
    out = sys.argv[2]
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    tmp = out + ".partial"
    # No torch.no_grad(): eval-mode attention would take a fused path torch 1.13 cannot export.
    torch.onnx.export(model, example, tmp, opset_version=17, input_names=[in_name], output_names=[out_name],
                      dynamic_axes={in_name: axes, out_name: axes}, do_constant_folding=True)
    os.replace(tmp, out)
    print(f"export_transformers: {sys.argv[1]} -> {out}")


if __name__ == "__main__":
    main()
