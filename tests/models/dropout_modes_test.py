"""Dropout in inference plans, as exporters write it.

usage: dropout_modes_test.py PRECIS WORKDIR

torchvision's attention blocks export Dropout(x, ratio=0, training_mode=true): that is the
identity, and the plan must compile and give onnxruntime's result (the input, and an all-true
mask) exactly. With a ratio above 0 in training mode an inference plan would have to drop values:
compiling must fail with a message naming the node and the ratio (exit 1, no crash).
With training_mode and the ratio given as inputs (ONNX's test_training_dropout cases), the plan
compiles and checks them when it runs: training_mode false, or true with ratio 0, gives the
input and an all-true mask exactly; training_mode true with ratio 0.3 fails the run naming the
node and the ratio.
"""
import os
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper


def model(path, ratio):
    inits = [numpy_helper.from_array(np.array(ratio, np.float32), "ratio"), numpy_helper.from_array(np.array(True), "training")]
    nodes = [helper.make_node("Dropout", ["x", "ratio", "training"], ["d", "mask"], name="attn_drop"),
             helper.make_node("Relu", ["d"], ["y"], name="relu")]
    graph = helper.make_graph(nodes, "dropout", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8]),
                               helper.make_tensor_value_info("mask", TensorProto.BOOL, [2, 8])], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)


def main():
    precis, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    failures = []
    x = np.random.default_rng(0).standard_normal((2, 8)).astype(np.float32)
    np.save(os.path.join(work, "x.npy"), x)

    path = os.path.join(work, "ratio0.onnx")
    model(path, 0.0)
    want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"x": x})
    for precision in ("fp32", "fp16"):
        plan, out = os.path.join(work, f"ratio0_{precision}.plan"), os.path.join(work, f"out_{precision}")
        r = subprocess.run([precis, "compile", path, "-o", plan, "--quiet", "--precision", precision], capture_output=True, text=True)
        if r.returncode:
            failures.append(f"{precision}: ratio 0 with training_mode true does not compile: {r.stderr.strip()}")
            continue
        r = subprocess.run([precis, "run", plan, "--input", "x=" + os.path.join(work, "x.npy"), "--output-dir", out], capture_output=True, text=True)
        if r.returncode:
            failures.append(f"{precision}: run failed: {r.stderr.strip()}")
            continue
        y, mask = np.load(os.path.join(out, "y.npy")), np.load(os.path.join(out, "mask.npy"))
        # FP32: the identity then Relu, bit for bit; FP16: the input rounded to FP16 once.
        tol = 0 if precision == "fp32" else 2.0 ** -11
        ok = np.allclose(y, want[0], rtol=tol, atol=0) and mask.dtype == np.bool_ and mask.all() and want[1].all()
        print(f"{'ok:  ' if ok else 'FAIL:'} {precision}: ratio 0, training_mode true: identity (max |y - ort| {np.abs(y - want[0]).max():.3g}, mask all true {bool(mask.all())})")
        if not ok:
            failures.append(f"{precision}: ratio 0 is not the identity")

    path = os.path.join(work, "ratio01.onnx")
    model(path, 0.1)
    r = subprocess.run([precis, "compile", path, "-o", os.path.join(work, "ratio01.plan"), "--quiet"], capture_output=True, text=True)
    message = r.stderr.strip()
    ok = r.returncode == 1 and "attn_drop" in message and "ratio 0.1" in message and "cannot drop values" in message
    print(f"{'ok:  ' if ok else 'FAIL:'} ratio 0.1, training_mode true: refused (exit {r.returncode}): {message}")
    if not ok:
        failures.append("ratio 0.1 in training mode was not refused with a message naming the node and the ratio")

    # training_mode and ratio as graph inputs.
    nodes = [helper.make_node("Dropout", ["x", "r", "t"], ["y", "mask"], name="runtime_drop")]
    graph = helper.make_graph(nodes, "dropout_inputs", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8]),
                                                        helper.make_tensor_value_info("r", TensorProto.FLOAT, []),
                                                        helper.make_tensor_value_info("t", TensorProto.BOOL, [])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8]), helper.make_tensor_value_info("mask", TensorProto.BOOL, [2, 8])])
    path, plan = os.path.join(work, "inputs.onnx"), os.path.join(work, "inputs.plan")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
    r = subprocess.run([precis, "compile", path, "-o", plan, "--quiet"], capture_output=True, text=True)
    if r.returncode:
        failures.append(f"training_mode and ratio as inputs do not compile: {r.stderr.strip()}")
    else:
        for ratio, training, identity in ((0.5, False, True), (0.0, True, True), (0.3, True, False)):
            rf, tf, out = os.path.join(work, "r.npy"), os.path.join(work, "t.npy"), os.path.join(work, f"inputs_out_{ratio}_{training}")
            np.save(rf, np.array(ratio, np.float32))
            np.save(tf, np.array(training))
            r = subprocess.run([precis, "run", plan, "--input", "x=" + os.path.join(work, "x.npy"), "--input", f"r={rf}", "--input", f"t={tf}",
                                "--output-dir", out], capture_output=True, text=True)
            if identity:
                ok = r.returncode == 0 and np.array_equal(np.load(os.path.join(out, "y.npy")), x) and np.load(os.path.join(out, "mask.npy")).all()
            else:
                ok = r.returncode != 0 and "runtime_drop" in r.stderr and "ratio 0.3" in r.stderr
            print(f"{'ok:  ' if ok else 'FAIL:'} inputs ratio {ratio}, training_mode {training}: "
                  f"{'identity' if identity else 'refused when it runs'} {r.stderr.strip()[-200:]}")
            if not ok:
                failures.append(f"inputs ratio {ratio}, training_mode {training}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
