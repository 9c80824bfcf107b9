#!/usr/bin/env python3
"""The precis side of optimizer_test.sh (run by the venv's python: onnx, numpy).

  optimizer_check.py model WORK
      writes WORK/model.onnx, whose loss is ReduceSum(W * grad_W * x) + ReduceSum(B * grad_B * x)
      with x = 1 and grad_W, grad_B constants (frozen), so dL/dW = grad_W and dL/dB = grad_B
      exactly on every step; WORK/init.npz (the initial weights and the gradients, read by
      optim_reference.py) and WORK/data.npz (x).
  optimizer_check.py compare WORK
      for each NAME of WORK/configs.tsv, compares the weights and optimizer state of precis's
      checkpoint after 100 steps (WORK/ck_NAME), and the lr of each step in its metrics log
      (WORK/NAME.jsonl), with torch's (WORK/ref_NAME.npz): rel L2 <= 1e-6 each
      (FP32 on both sides with the same formulas; what remains is rounding order, measured
      below 1e-7)."""
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from precis_state import read_checkpoint  # noqa: E402

TOLERANCE = 1e-6


def make_model(work):
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(2024)
    init = {"W": rng.standard_normal((4, 5)), "B": rng.standard_normal(5), "grad_W": rng.standard_normal((4, 5)), "grad_B": rng.standard_normal(5)}
    init = {k: v.astype(np.float32) for k, v in init.items()}
    nodes = []
    for n in ("W", "B"):
        nodes += [helper.make_node("Mul", [n, "grad_" + n], [n + "_g"]), helper.make_node("Mul", [n + "_g", "x"], [n + "_gx"]),
                  helper.make_node("ReduceSum", [n + "_gx"], [n + "_sum"], keepdims=0)]
    nodes.append(helper.make_node("Add", ["W_sum", "B_sum"], ["objective"]))
    graph = helper.make_graph(nodes, "fixed_gradients", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                              [helper.make_tensor_value_info("objective", TensorProto.FLOAT, [])],
                              [numpy_helper.from_array(v, k) for k, v in init.items()])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), work + "/model.onnx")
    np.savez(work + "/init.npz", **init)
    np.savez(work + "/data.npz", x=np.ones(1, np.float32))


def rel_l2(got, want):
    return float(np.linalg.norm(got.astype(np.float64) - want) / np.linalg.norm(want))


def compare(work, name, ckpt, log):
    ref = dict(np.load(work + "/ref_" + name + ".npz"))
    state = read_checkpoint(ckpt)
    worst = 0.0
    failed = []
    for key, want in ref.items():
        if key == "lrs":
            continue
        got = state[key]
        err = rel_l2(got, want)
        worst = max(worst, err)
        if err > TOLERANCE:
            failed.append("%s rel L2 %.2e" % (key, err))
    lrs = np.array([json.loads(line)["lr"] for line in open(log) if '"step"' in line])
    lr_err = float(np.max(np.abs(lrs - ref["lrs"]) / ref["lrs"])) if len(lrs) == len(ref["lrs"]) else float("inf")
    if lr_err > TOLERANCE:
        failed.append("lr per step max rel %.2e" % lr_err)
    steps = int(state["optimizer.step"])
    if steps != 100:
        failed.append("optimizer.step %d" % steps)
    print("%-32s weights/state max rel L2 %.2e, lr max rel %.2e%s" % (name, worst, lr_err, "  FAIL: " + "; ".join(failed) if failed else ""))
    return not failed


if __name__ == "__main__":
    if sys.argv[1] == "model":
        make_model(sys.argv[2])
    else:
        work = sys.argv[2]
        names = [line.split("\t")[0] for line in open(work + "/configs.tsv")]
        results = [compare(work, n, work + "/ck_" + n, work + "/" + n + ".jsonl") for n in names]
        print("%d of %d settings match torch.optim" % (sum(results), len(results)))
        sys.exit(0 if all(results) else 1)
