#!/usr/bin/env python3
"""PyTorch reference for the convergence test: a small CNN on the 8x8 digits (tests/train/data),
exported to ONNX with its initial weights (batch 32), the train/test split as .npz files, and
PyTorch's mean training loss per epoch over the same batches in the same order (no shuffling:
the split is shuffled once here) with the same optimizer.

usage: /usr/bin/python3 digits_reference.py OUT_DIR EPOCHS"""
import gzip
import os
import sys

import numpy as np
import torch

BATCH = 32
LR, WD = 0.003, 0.01


class SmallCnn(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(1, 8, 3, padding=1)
        self.conv2 = torch.nn.Conv2d(8, 16, 3, stride=2, padding=1)
        self.fc = torch.nn.Linear(16 * 4 * 4, 10)

    def forward(self, x):
        h = torch.relu(self.conv2(torch.relu(self.conv1(x))))
        return self.fc(torch.flatten(h, 1))


def main():
    out, epochs = sys.argv[1], int(sys.argv[2])
    os.makedirs(out, exist_ok=True)
    here = os.path.dirname(os.path.abspath(__file__))
    rows = np.loadtxt(gzip.open(os.path.join(here, "data", "digits.csv.gz")), delimiter=",", dtype=np.float32)
    order = np.random.default_rng(0).permutation(len(rows))
    rows = rows[order]
    x = (rows[:, :64] / 16.0).reshape(-1, 1, 8, 8).astype(np.float32)
    y = rows[:, 64].astype(np.int64)
    n_train = 1437
    np.savez(os.path.join(out, "train.npz"), image=x[:n_train], label=y[:n_train])
    np.savez(os.path.join(out, "test.npz"), image=x[n_train:], label=y[n_train:])
    torch.manual_seed(0)
    model = SmallCnn()
    torch.onnx.export(model, torch.zeros(BATCH, 1, 8, 8), os.path.join(out, "cnn.onnx"), input_names=["image"], output_names=["logits"],
                      opset_version=17, do_constant_folding=False)
    opt = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=WD)
    xt, yt = torch.from_numpy(x[:n_train]), torch.from_numpy(y[:n_train])
    means = []
    for _ in range(epochs):
        losses = []
        for b in range(n_train // BATCH):
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(xt[b * BATCH:(b + 1) * BATCH]), yt[b * BATCH:(b + 1) * BATCH])
            loss.backward()
            opt.step()
            losses.append(loss.item())
        means.append(np.mean(losses))
    with torch.no_grad():
        acc = (model(torch.from_numpy(x[n_train:])).argmax(1) == torch.from_numpy(y[n_train:])).float().mean().item()
    np.save(os.path.join(out, "epoch_losses.npy"), np.array(means, dtype=np.float64))
    print("torch: epoch losses", " ".join("%.4f" % m for m in means), "test accuracy %.4f" % acc)


if __name__ == "__main__":
    main()
