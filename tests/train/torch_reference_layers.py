#!/usr/bin/env python3
"""PyTorch references for the gradient rules of pooling, grouped convolution, Gather,
LayerNormalization and GELU: two small models exported to ONNX with their initial weights, one
fixed batch each, and after one SGD step (lr 0.1) the loss, every weight and every weight's
gradient (and each weight's initial value, to read the step's gradient back from the update).

- cnn (11x11 images): Conv 3x3 -> Relu -> MaxPool 2x2 (ceil_mode: the last window holds one
  column) -> depthwise Conv 3x3 (groups 8) -> ReLU6 (Clip) -> AveragePool 3x3 stride 2 pad 1 (ceil_mode,
  count_include_pad 0; on 6x6 the last window covers a column, the end pad and the ceil tail) ->
  Conv 1x1 (groups 2) -> GlobalAveragePool -> Flatten -> Linear.
- embed: token embeddings (Gather) + position embeddings -> LayerNorm -> GELU (exported as its
  Erf form) -> Linear -> mean over tokens -> logits tied to the token embeddings (a MatMul
  through a Transpose of the same weight that Gather reads).
- gpt: a one-block decoder: token embeddings + a sliced position table, LayerNorm, QKV by Split,
  causal attention masked through Trilu and Where, tanh-GELU MLP, the last token's logits (Gather
  with index -1) tied to the token embeddings.

usage: /usr/bin/python3 torch_reference_layers.py OUT_DIR   (Debian's python3-torch)"""
import math
import os
import sys

import numpy as np
import torch

LR = 0.1


class Cnn(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.dw = torch.nn.Conv2d(8, 8, 3, padding=1, groups=8)
        self.pw = torch.nn.Conv2d(8, 6, 1, groups=2)
        self.fc = torch.nn.Linear(6, 5)

    def forward(self, x):
        h = torch.nn.functional.max_pool2d(torch.relu(self.conv1(x)), 2, ceil_mode=True)
        h = torch.nn.functional.relu6(self.dw(h))
        h = torch.nn.functional.avg_pool2d(h, 3, stride=2, padding=1, ceil_mode=True, count_include_pad=False)
        h = torch.nn.functional.adaptive_avg_pool2d(self.pw(h), 1)
        return self.fc(torch.flatten(h, 1))


class Embed(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = torch.nn.Embedding(11, 8)
        self.pos = torch.nn.Parameter(torch.randn(5, 8) * 0.5)
        self.norm = torch.nn.LayerNorm(8)
        self.proj = torch.nn.Linear(8, 8)

    def forward(self, ids):
        h = torch.nn.functional.gelu(self.norm(self.tok(ids) + self.pos))
        h = self.proj(h).mean(dim=1)
        return h @ self.tok.weight.t()


class Gpt(torch.nn.Module):
    def __init__(self, vocab=13, d=16, t=8, heads=2):
        super().__init__()
        self.tok = torch.nn.Embedding(vocab, d)
        self.pos = torch.nn.Parameter(torch.randn(t, d) * 0.5)
        self.ln1, self.ln2, self.lnf = torch.nn.LayerNorm(d), torch.nn.LayerNorm(d), torch.nn.LayerNorm(d)
        self.qkv, self.o = torch.nn.Linear(d, 3 * d), torch.nn.Linear(d, d)
        self.fc1, self.fc2 = torch.nn.Linear(d, 4 * d), torch.nn.Linear(4 * d, d)
        self.heads = heads
        # Distinct LayerNorm parameters: an eval-mode export (torch.onnx.export's default) merges
        # initializers of equal value, so three LayerNorms' ones would become one shared weight,
        # trained with the sum of their gradients.
        with torch.no_grad():
            for ln in (self.ln1, self.ln2, self.lnf):
                ln.weight.add_(torch.randn(d) * 0.1)
                ln.bias.add_(torch.randn(d) * 0.1)

    def forward(self, ids):
        b, t = ids.shape
        x = self.tok(ids) + self.pos[:t]
        q, k, v = (z.reshape(b, t, self.heads, -1).transpose(1, 2) for z in self.qkv(self.ln1(x)).split(x.shape[-1], dim=-1))
        a = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        a = torch.where(torch.tril(torch.ones(t, t, dtype=torch.bool)), a, torch.tensor(-1e9))
        x = x + self.o((a.softmax(-1) @ v).transpose(1, 2).reshape(b, t, -1))
        x = x + self.fc2(torch.nn.functional.gelu(self.fc1(self.ln2(x)), approximate="tanh"))
        return (self.lnf(x) @ self.tok.weight.t())[:, -1]


def step(name, model, inputs, label, out, input_name):
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    torch.onnx.export(model, inputs, os.path.join(d, "model.onnx"), input_names=[input_name], output_names=["logits"], opset_version=17,
                      do_constant_folding=False)
    np.save(os.path.join(d, "input.npy"), inputs.numpy())
    np.save(os.path.join(d, "label.npy"), label.numpy())
    for pname, p in model.named_parameters():
        np.save(os.path.join(d, pname + ".init.npy"), p.detach().numpy())
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    opt.zero_grad()
    loss = torch.nn.functional.cross_entropy(model(inputs), label)
    loss.backward()
    opt.step()
    np.save(os.path.join(d, "loss.npy"), np.array([loss.item()], dtype=np.float32))
    for pname, p in model.named_parameters():
        np.save(os.path.join(d, pname + ".npy"), p.detach().numpy())
        np.save(os.path.join(d, pname + ".grad.npy"), p.grad.numpy())


def main():
    out = sys.argv[1]
    torch.manual_seed(3)
    step("cnn", Cnn(), torch.randn(4, 3, 11, 11), torch.tensor([0, 3, 1, 4]), out, "x")
    ids = torch.tensor([[1, 4, 4, 9, 0], [10, 2, 4, 7, 7], [3, 3, 5, 1, 8]])
    step("embed", Embed(), ids, torch.tensor([4, 7, 2]), out, "ids")
    ids = torch.tensor([[1, 4, 4, 9, 0, 12], [11, 2, 4, 7, 7, 3]])
    step("gpt", Gpt(), ids, torch.tensor([5, 12]), out, "ids")
    print("torch references written to", out)


if __name__ == "__main__":
    main()
