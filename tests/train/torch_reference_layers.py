#!/usr/bin/env python3
"""PyTorch references for the gradient rules of pooling, grouped convolution, Gather,
LayerNormalization and GELU: two small models exported to ONNX with their initial weights, one
fixed batch each, and after one SGD step (lr 0.1) the loss, every weight and every weight's
gradient (and each weight's initial value, to read the step's gradient back from the update).

- cnn (11x11 images): Conv 3x3 -> Relu -> MaxPool 2x2 (ceil_mode: the last window holds one
  column) -> depthwise Conv 3x3 (groups 8) -> Relu -> AveragePool 3x3 stride 2 pad 1 (ceil_mode,
  count_include_pad 0; on 6x6 the last window covers a column, the end pad and the ceil tail) ->
  Conv 1x1 (groups 2) -> GlobalAveragePool -> Flatten -> Linear.
- embed: token embeddings (Gather) + position embeddings -> LayerNorm -> GELU (exported as its
  Erf form) -> Linear -> mean over tokens -> logits tied to the token embeddings (a MatMul
  through a Transpose of the same weight that Gather reads).

usage: /usr/bin/python3 torch_reference_layers.py OUT_DIR   (Debian's python3-torch)"""
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
        h = torch.relu(self.dw(h))
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
    print("torch references written to", out)


if __name__ == "__main__":
    main()
