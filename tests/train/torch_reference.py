#!/usr/bin/env python3
"""PyTorch references for the training tests: an MLP exported to ONNX with its initial weights,
one fixed batch, and for each optimizer setting the loss of 3 training steps, the weights and
the optimizer state after them (torch.optim is the specification), and the evaluation loss
after the last step.

usage: /usr/bin/python3 torch_reference.py OUT_DIR   (Debian's python3-torch)"""
import os
import sys

import numpy as np
import torch

STEPS = 3
CONFIGS = {
    "sgd": dict(optimizer="sgd", lr=0.1),
    "sgd_momentum": dict(optimizer="sgd", lr=0.05, momentum=0.9, weight_decay=0.01),
    "sgd_nesterov": dict(optimizer="sgd", lr=0.05, momentum=0.9, nesterov=True),
    "adamw": dict(optimizer="adamw", lr=0.01, weight_decay=0.05, betas=(0.9, 0.999), eps=1e-8),
}


class Mlp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(8, 16)
        self.fc2 = torch.nn.Linear(16, 16)
        self.fc3 = torch.nn.Linear(16, 5)

    def forward(self, x):
        return self.fc3(torch.tanh(self.fc2(torch.relu(self.fc1(x)))))


def make_optimizer(cfg, params):
    if cfg["optimizer"] == "sgd":
        return torch.optim.SGD(params, lr=cfg["lr"], momentum=cfg.get("momentum", 0), nesterov=cfg.get("nesterov", False),
                               weight_decay=cfg.get("weight_decay", 0))
    return torch.optim.AdamW(params, lr=cfg["lr"], betas=cfg["betas"], eps=cfg["eps"], weight_decay=cfg["weight_decay"])


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(7)
    model = Mlp()
    x = torch.randn(6, 8)
    y = torch.tensor([0, 3, 1, 4, 4, 2], dtype=torch.int64)
    torch.onnx.export(model, x, os.path.join(out, "mlp.onnx"), input_names=["x"], output_names=["logits"], opset_version=17,
                      do_constant_folding=False)
    np.save(os.path.join(out, "x.npy"), x.numpy())
    np.save(os.path.join(out, "label.npy"), y.numpy())
    initial = {k: v.clone() for k, v in model.state_dict().items()}
    for name, cfg in CONFIGS.items():
        model.load_state_dict(initial)
        opt = make_optimizer(cfg, model.parameters())
        losses = []
        for _ in range(STEPS):
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            losses.append(loss.item())
        d = os.path.join(out, name)
        os.makedirs(d, exist_ok=True)
        np.save(os.path.join(d, "losses.npy"), np.array(losses, dtype=np.float32))
        with torch.no_grad():
            np.save(os.path.join(d, "eval_loss.npy"), np.array([torch.nn.functional.cross_entropy(model(x), y).item()], dtype=np.float32))
        for pname, p in model.named_parameters():
            np.save(os.path.join(d, pname + ".npy"), p.detach().numpy())
            for key, value in opt.state[p].items():
                if torch.is_tensor(value) and value.dim() > 0:
                    np.save(os.path.join(d, pname + "." + key + ".npy"), value.numpy())
    # A learnable data set for the CLI: labels from a fixed random linear map of the features.
    # train.npz/eval.npz (np.savez), and the per-step losses of 2 epochs of AdamW over train.npz in
    # order (precis train --no-shuffle), batch 6, from the initial weights.
    g = torch.Generator().manual_seed(11)
    proj = torch.randn(8, 5, generator=g)
    xs = torch.randn(100, 8, generator=g)
    ys = (xs @ proj).argmax(dim=1)
    np.savez(os.path.join(out, "train.npz"), x=xs[:64].numpy(), label=ys[:64].numpy())
    np.savez(os.path.join(out, "eval.npz"), x=xs[64:].numpy(), label=ys[64:].numpy())
    model.load_state_dict(initial)
    opt = torch.optim.AdamW(model.parameters(), lr=0.01, weight_decay=0.01)
    losses = []
    for _ in range(2):
        for b in range(64 // 6):
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(xs[b * 6:(b + 1) * 6]), ys[b * 6:(b + 1) * 6])
            loss.backward()
            opt.step()
            losses.append(loss.item())
    np.save(os.path.join(out, "train_losses.npy"), np.array(losses, dtype=np.float32))
    print("torch references written to", out)


if __name__ == "__main__":
    main()
