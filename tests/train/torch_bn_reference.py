#!/usr/bin/env python3
"""PyTorch references for training BatchNormalization: a small CNN (Conv -> BatchNorm -> Relu ->
Conv -> BatchNorm -> Relu -> Flatten -> Linear) exported to ONNX in both forms torch writes:
cnn_train.onnx (TrainingMode.TRAINING: BatchNormalization with training_mode=1 and 3 outputs) and
cnn_eval.onnx (an eval-mode model exported with TrainingMode.PRESERVE: the inference form; a plain
eval export would fold BatchNorm into the convolutions), constant folding off. Then STEPS steps of
SGD with momentum in train mode on one batch: the loss of each step, the weights, momentum
buffers and running statistics after them, and the loss in eval mode after the last step.

usage: /usr/bin/python3 torch_bn_reference.py OUT_DIR   (Debian's python3-torch)"""
import os
import sys

import numpy as np
import torch

STEPS = 2
LR, MOMENTUM = 0.1, 0.9


class Cnn(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(2, 4, 3, padding=1)
        self.bn1 = torch.nn.BatchNorm2d(4)
        self.conv2 = torch.nn.Conv2d(4, 3, 3, stride=2, padding=1)
        self.bn2 = torch.nn.BatchNorm2d(3, momentum=0.3)
        self.fc = torch.nn.Linear(3 * 3 * 3, 5)

    def forward(self, x):
        h = torch.relu(self.bn1(self.conv1(x)))
        h = torch.relu(self.bn2(self.conv2(h)))
        return self.fc(torch.flatten(h, 1))


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(5)
    model = Cnn()
    # Non-trivial initial statistics and affine parameters, so that every term of the update shows.
    with torch.no_grad():
        for bn in (model.bn1, model.bn2):
            bn.running_mean.uniform_(-0.5, 0.5)
            bn.running_var.uniform_(0.5, 2.0)
            bn.weight.uniform_(0.5, 1.5)
            bn.bias.uniform_(-0.3, 0.3)
    x = torch.randn(6, 2, 6, 6) * 2 + 0.5
    y = torch.tensor([0, 3, 1, 4, 4, 2], dtype=torch.int64)
    common = dict(input_names=["x"], output_names=["logits"], opset_version=17, do_constant_folding=False)
    # Exporting runs the model, and in train mode that moves the running statistics (the training
    # form's initializers hold moved ones): every export and the training below start from the
    # saved state, and the initial statistics are written for the test to load into that plan.
    initial = {k: v.clone() for k, v in model.state_dict().items()}
    for name, b in initial.items():
        if "running" in name:
            np.save(os.path.join(out, "initial." + name + ".npy"), b.numpy())
    torch.onnx.export(model.train(), x, os.path.join(out, "cnn_train.onnx"), training=torch.onnx.TrainingMode.TRAINING, **common)
    model.load_state_dict(initial)
    torch.onnx.export(model.eval(), x, os.path.join(out, "cnn_eval.onnx"), training=torch.onnx.TrainingMode.PRESERVE, **common)
    model.load_state_dict(initial)
    np.save(os.path.join(out, "x.npy"), x.numpy())
    np.save(os.path.join(out, "label.npy"), y.numpy())
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM)
    losses = []
    for _ in range(STEPS):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    np.save(os.path.join(out, "losses.npy"), np.array(losses, dtype=np.float32))
    model.eval()
    with torch.no_grad():
        np.save(os.path.join(out, "eval_loss.npy"), np.array([torch.nn.functional.cross_entropy(model(x), y).item()], dtype=np.float32))
    for name, p in model.named_parameters():
        np.save(os.path.join(out, name + ".npy"), p.detach().numpy())
        np.save(os.path.join(out, name + ".momentum_buffer.npy"), opt.state[p]["momentum_buffer"].numpy())
    for name, b in model.named_buffers():
        if "running" in name:
            np.save(os.path.join(out, name + ".npy"), b.numpy())
    print("torch BatchNorm references written to", out)


if __name__ == "__main__":
    main()
