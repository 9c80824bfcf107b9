#!/usr/bin/env python3
"""PyTorch references for one training step of real architectures, defined and exported here:
a CNN with BatchNorm and MaxPool, torchvision's ResNet-18 on 64x64 images, a two-layer BERT-style
encoder (embeddings, LayerNorm, attention with a padding mask, erf GELU, tanh pooler) and a tiny
GPT-style decoder (causal mask through Trilu/Where, embeddings tied to the output projection).

For each model NAME it writes under OUT_DIR/NAME:
  model.onnx        exported from the initial weights (BatchNorm kept: training-mode export)
  inputs.npz        the batch (model inputs and `label`)
  loss.npy          the loss of the step (train mode: BatchNorm on batch statistics)
  grad/W.npy        the gradient of every weight W (ONNX initializer name)
  state/S.npy       every state value after one torch.optim.SGD step (lr 0.05, momentum 0.9,
                    weight decay 1e-4): the weights, S.momentum_buffer, and BatchNorm's running
                    mean/var (PyTorch momentum 0.1 = ONNX momentum 0.9; running_var unbiased)
  eval_loss.npy     the loss after the step in eval mode (running statistics)
  torch_fp32_error.npy  the worst rel L2 of torch's own FP32 step against these references
  torch_bf16_errors.txt  the same step under torch.autocast("cpu", bfloat16) (FP32 weights and
                    optimizer): one line per tensor, "grad W ERR" or "state S ERR", ERR its rel L2
                    against the float64 references (weights whose exact gradient is zero left out)
  torch_fp16_errors.txt  the same for an emulated FP16 mixed step (CPU autocast has no float16):
                    torch's FP32 step with every Conv2d/Linear input, weight and output rounded
                    to float16, activation gradients rounded to float16 at the same points under
                    a loss scale of 65536, weight gradients left in FP32 (the recipe's storage
                    rounding with FP32 arithmetic)
  init_state/S.npy  BatchNorm's running statistics before the step (exporting in training mode
                    runs the model, so the file's initializers hold moved ones; the test writes
                    these into the plan's state first)
All references come from the same step run by torch in float64 (a copy of the model in double,
the same batch); the FP32 step run by torch sets the scale of the FP32 rounding error that deep
BatchNorm networks amplify (ResNet-18 on a small batch: ~1e-5 and more, depending on the draw).
and OUT_DIR/models.txt with one line per model: NAME.

usage: /usr/bin/python3 torch_models.py OUT_DIR [NAME ...]   (Debian's python3-torch)"""
import copy
import math
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

LR, MOMENTUM, WD = 0.05, 0.9, 1e-4


class CnnBn(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.bn1 = torch.nn.BatchNorm2d(8)
        self.conv2 = torch.nn.Conv2d(8, 16, 3, padding=1, bias=False)
        self.bn2 = torch.nn.BatchNorm2d(16)
        self.fc = torch.nn.Linear(16 * 4 * 4, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
        x = F.avg_pool2d(F.relu(self.bn2(self.conv2(x))), 2)
        return self.fc(torch.flatten(x, 1))


class Encoder(torch.nn.Module):
    """BERT-style: token + position embeddings, LayerNorm, 2 post-norm layers, tanh pooler."""

    def __init__(self, vocab=50, seq=8, d=32, heads=4, ff=64, layers=2, classes=3):
        super().__init__()
        self.heads = heads
        self.tok = torch.nn.Embedding(vocab, d)
        self.pos = torch.nn.Embedding(seq, d)
        self.ln0 = torch.nn.LayerNorm(d)
        self.layers = torch.nn.ModuleList()
        for _ in range(layers):
            self.layers.append(torch.nn.ModuleDict(dict(
                qkv=torch.nn.Linear(d, 3 * d), out=torch.nn.Linear(d, d), ln1=torch.nn.LayerNorm(d),
                ff1=torch.nn.Linear(d, ff), ff2=torch.nn.Linear(ff, d), ln2=torch.nn.LayerNorm(d))))
        self.pool = torch.nn.Linear(d, d)
        self.cls = torch.nn.Linear(d, classes)

    def forward(self, ids, mask):
        n, t = ids.shape
        d = self.tok.embedding_dim
        h = self.ln0(self.tok(ids) + self.pos(torch.arange(t)))
        bias = (1.0 - mask.to(torch.float32)).reshape(n, 1, 1, t) * -10000.0
        for layer in self.layers:
            q, k, v = layer["qkv"](h).reshape(n, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
            s = q @ k.transpose(-1, -2) / math.sqrt(d // self.heads) + bias
            a = (torch.softmax(s, -1) @ v).transpose(1, 2).reshape(n, t, d)
            h = layer["ln1"](h + layer["out"](a))
            h = layer["ln2"](h + layer["ff2"](F.gelu(layer["ff1"](h))))
        return self.cls(torch.tanh(self.pool(h[:, 0])))


class Gpt(torch.nn.Module):
    """GPT-style: pre-norm blocks, causal mask (Trilu + Where), output projection tied to wte."""

    def __init__(self, vocab=40, seq=8, d=32, heads=4, layers=2):
        super().__init__()
        self.heads = heads
        self.wte = torch.nn.Embedding(vocab, d)
        self.wpe = torch.nn.Embedding(seq, d)
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
        logits = self.lnf(h) @ self.wte.weight.t()
        return logits.reshape(n * t, -1)


def build(name):
    g = torch.Generator().manual_seed(11)
    if name == "cnn_bn":
        m = CnnBn()
        inputs = {"x": torch.randn(4, 3, 16, 16, generator=g)}
        label = torch.randint(0, 10, (4,), generator=g)
    elif name == "resnet18":
        import torchvision
        m = torchvision.models.resnet18(num_classes=10)
        inputs = {"x": torch.randn(8, 3, 64, 64, generator=g)}
        label = torch.randint(0, 10, (8,), generator=g)
    elif name == "encoder":
        m = Encoder()
        ids = torch.randint(0, 50, (3, 8), generator=g)
        mask = torch.ones(3, 8, dtype=torch.int64)
        mask[1, 5:] = 0
        mask[2, 3:] = 0
        inputs = {"ids": ids, "mask": mask}
        label = torch.randint(0, 3, (3,), generator=g)
    elif name == "gpt":
        m = Gpt()
        ids = torch.randint(0, 40, (2, 8), generator=g)
        inputs = {"ids": ids}
        label = torch.randint(0, 40, (16,), generator=g)
    else:
        sys.exit(f"unknown model {name}")
    return m, inputs, label


def save(path, t):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    np.save(path, t.detach().numpy())


class Round16(torch.autograd.Function):
    """Rounds to float16 and back in both directions (a tensor stored in FP16 and its gradient)."""

    @staticmethod
    def forward(ctx, x):
        return x.half().float()

    @staticmethod
    def backward(ctx, g):
        return g.half().float()


def round_weight16(w):
    """The weight rounded to float16 forward; its gradient passes through in FP32."""
    return w + (w.half().float() - w).detach()


def emulate_fp16(model):
    """Every Conv2d and Linear reads float16-rounded inputs and weights and writes a float16-rounded
    output (bias added in FP32 before the rounding)."""
    for mod in model.modules():
        if isinstance(mod, torch.nn.Conv2d):
            mod.forward = (lambda m: lambda x: Round16.apply(m._conv_forward(Round16.apply(x), round_weight16(m.weight), m.bias)))(mod)
        elif isinstance(mod, torch.nn.Linear):
            mod.forward = (lambda m: lambda x: Round16.apply(F.linear(Round16.apply(x), round_weight16(m.weight), m.bias)))(mod)
    return model


FP16_LOSS_SCALE = 65536.0


def step(model, args, label, autocast=None, loss_scale=1.0):
    """One SGD step in the model's dtype (or under CPU autocast to `autocast`): (loss, grads,
    state after, eval loss). The backward pass runs on loss * loss_scale; gradients are unscaled."""
    params = dict(model.named_parameters())
    opt = torch.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM, weight_decay=WD)
    opt.zero_grad()
    model.train()
    if autocast is None:
        loss = F.cross_entropy(model(*args), label)
    else:
        with torch.autocast("cpu", dtype=autocast):
            loss = F.cross_entropy(model(*args), label)
    (loss * loss_scale).backward()
    if loss_scale != 1.0:
        for p in params.values():
            p.grad /= loss_scale
    grads = {k: p.grad.detach().clone() for k, p in params.items()}
    opt.step()
    state = {}
    for k, p in params.items():
        state[k] = p.detach().clone()
        state[k + ".momentum_buffer"] = opt.state[p]["momentum_buffer"].clone()
    for k, b in model.named_buffers():
        if k.endswith("running_mean") or k.endswith("running_var"):
            state[k] = b.clone()
    model.eval()
    with torch.no_grad():
        eval_loss = F.cross_entropy(model(*args), label)
    return loss.detach(), grads, state, eval_loss


def rel_l2(a, b):
    a, b = a.double(), b.double()
    return float((a - b).norm() / max(float(b.norm()), 1e-30))


def write_errors(path, grads, state, grads64, state64, zero):
    """One line per tensor, "grad W ERR" or "state S ERR": rel L2 against the float64 step (weights
    in `zero`, whose exact gradient is zero, and their momentum buffers left out)."""
    with open(path, "w") as f:
        for k in sorted(grads64):
            if k not in zero:
                f.write(f"grad {k} {rel_l2(grads[k], grads64[k]):.9g}\n")
        for k in sorted(state64):
            if not any(k == z or k == z + ".momentum_buffer" for z in zero):
                f.write(f"state {k} {rel_l2(state[k], state64[k]):.9g}\n")


def reference(name, out):
    torch.manual_seed(3)
    model, inputs, label = build(name)
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    args = tuple(inputs.values())
    model64 = copy.deepcopy(model).double()
    # Training-mode export keeps BatchNormalization (an eval-mode export folds it into the Conv);
    # it runs the model, so the running statistics are restored afterwards.
    buffers = {k: b.clone() for k, b in model.named_buffers()}
    model.train()
    torch.onnx.export(model, args, os.path.join(d, "model.onnx"), input_names=list(inputs), output_names=["logits"],
                      opset_version=17, do_constant_folding=False, training=torch.onnx.TrainingMode.TRAINING)
    with torch.no_grad():
        for k, b in model.named_buffers():
            b.copy_(buffers[k])
            if k.endswith("running_mean") or k.endswith("running_var"):
                save(os.path.join(d, "init_state", k + ".npy"), b)
    np.savez(os.path.join(d, "inputs.npz"), label=label.numpy(), **{k: v.numpy() for k, v in inputs.items()})
    args64 = tuple(a.double() if a.is_floating_point() else a for a in args)
    model_amp = copy.deepcopy(model)
    model_fp16 = copy.deepcopy(model)
    loss, grads, state, eval_loss = step(model, args, label)
    loss64, grads64, state64, eval_loss64 = step(model64, args64, label)
    # The references are the float64 step; torch's own FP32 error against them sets the scale of
    # what FP32 arithmetic can reach for this model and batch.
    save(os.path.join(d, "loss.npy"), loss64)
    save(os.path.join(d, "eval_loss.npy"), eval_loss64)
    for k, g in grads64.items():
        save(os.path.join(d, "grad", k + ".npy"), g)
    for k, v in state64.items():
        save(os.path.join(d, "state", k + ".npy"), v)
    errs = [rel_l2(grads[k], grads64[k]) for k in grads if float(grads64[k].norm()) > 1e-6 * grads64[k].numel() ** 0.5]
    errs += [rel_l2(state[k], state64[k]) for k in state if not any(k.startswith(z) and grads64[z].norm() <= 1e-6 * grads64[z].numel() ** 0.5
                                                                     for z in grads)]
    torch_err = max(errs)
    np.save(os.path.join(d, "torch_fp32_error.npy"), np.array(torch_err, np.float64))
    # The mixed-precision reference point: PyTorch's CPU autocast to bfloat16 on the same step.
    _, grads_amp, state_amp, _ = step(model_amp, args, label, autocast=torch.bfloat16)
    zero = {k for k in grads64 if float(grads64[k].norm()) <= 1e-6 * grads64[k].numel() ** 0.5}
    write_errors(os.path.join(d, "torch_bf16_errors.txt"), grads_amp, state_amp, grads64, state64, zero)
    _, grads_16, state_16, _ = step(emulate_fp16(model_fp16), args, label, loss_scale=FP16_LOSS_SCALE)
    write_errors(os.path.join(d, "torch_fp16_errors.txt"), grads_16, state_16, grads64, state64, zero)
    print(f"{name}: loss {loss64.item():.6f}, {len(grads)} weights, torch FP32 vs float64 worst rel L2 {torch_err:.2g}")


def main():
    out = sys.argv[1]
    names = sys.argv[2:] or ["cnn_bn", "resnet18", "encoder", "gpt"]
    for n in names:
        reference(n, out)
    with open(os.path.join(out, "models.txt"), "w") as f:
        f.write("".join(n + "\n" for n in names))


if __name__ == "__main__":
    main()
