"""RNN, GRU and LSTM against onnxruntime, over the attributes the conformance cases leave out.

usage: recurrent_test.py PRECIS WORKDIR

Each case is a one-node model with random weights (fixed seed) run by Precis (FP32 plan, FP16 and
BF16 plans) and by onnxruntime's CPU provider on the same inputs: directions (forward, reverse,
bidirectional), sequence_lens shorter than the sequence (padding steps must give zeros in Y and
leave Y_h at the last valid step), initial states, layout 1, clip, activation lists with alpha
and beta, GRU's linear_before_reset, LSTM's peepholes, input_forget and Y_c.

Tolerances: FP32 plans within 1e-5 absolute and relative (both compute in FP32; the sums run in
different orders); 16-bit plans within relative L2 1e-2 (FP16) and 4e-2 (BF16) of onnxruntime's
FP32 result, the model tests' bounds for 16-bit storage of operands and outputs (the recurrent
state itself stays FP32 inside the kernel).
"""
import os
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

SEQ, BATCH, INPUT, HIDDEN = 5, 3, 4, 6
GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}
OUTPUTS = {"RNN": ["Y", "Y_h"], "GRU": ["Y", "Y_h"], "LSTM": ["Y", "Y_h", "Y_c"]}

CASES = [
    # (name, op, attributes, options): options pick optional inputs
    ("rnn_bidirectional_seqlens", "RNN", {"direction": "bidirectional"}, {"B", "seq", "h0"}),
    ("rnn_reverse_leakyrelu", "RNN", {"direction": "reverse", "activations": ["LeakyRelu"], "activation_alpha": [0.3]}, {"B"}),
    ("rnn_layout1_clip", "RNN", {"layout": 1, "clip": 0.5}, {"B", "h0", "seq"}),
    ("gru_bidirectional_seqlens", "GRU", {"direction": "bidirectional"}, {"B", "seq", "h0"}),
    ("gru_linear_before_reset", "GRU", {"linear_before_reset": 1}, {"B", "h0"}),
    ("gru_activations_alpha_beta", "GRU", {"activations": ["HardSigmoid", "ScaledTanh"], "activation_alpha": [0.3, 0.9],
                                          "activation_beta": [0.4, 1.1]}, {"B"}),
    ("gru_reverse_layout1", "GRU", {"direction": "reverse", "layout": 1}, {"B", "seq", "h0"}),
    ("lstm_bidirectional_seqlens", "LSTM", {"direction": "bidirectional"}, {"B", "seq", "h0", "c0", "P"}),
    ("lstm_input_forget_clip", "LSTM", {"input_forget": 1, "clip": 0.7}, {"B", "h0", "c0"}),
    ("lstm_layout1_reverse", "LSTM", {"layout": 1, "direction": "reverse"}, {"B", "seq", "h0", "c0", "P"}),
    ("lstm_activations", "LSTM", {"activations": ["Sigmoid", "Softsign", "Elu"], "activation_alpha": [0.5]}, {"B"}),
]


def make_case(work, name, op, attrs, options, rng, feeds=None, inits=None):
    dirs = 2 if attrs.get("direction") == "bidirectional" else 1
    layout = attrs.get("layout", 0)
    g = GATES[op]
    x_shape = [SEQ, BATCH, INPUT] if layout == 0 else [BATCH, SEQ, INPUT]
    state = [dirs, BATCH, HIDDEN] if layout == 0 else [BATCH, dirs, HIDDEN]
    given = feeds is not None
    if not given:
        inits = {"W": rng.uniform(-0.6, 0.6, (dirs, g * HIDDEN, INPUT)), "R": rng.uniform(-0.6, 0.6, (dirs, g * HIDDEN, HIDDEN))}
        feeds = {"X": rng.standard_normal(x_shape).astype(np.float32)}
    inputs = ["X", "W", "R"]
    if "B" in options:
        if not given:
            inits["B"] = rng.uniform(-0.3, 0.3, (dirs, 2 * g * HIDDEN))
    inputs.append("B" if "B" in options else "")
    if "seq" in options:
        if not given:
            feeds["seq"] = np.array([SEQ, 2, 4][:BATCH], np.int32)
    inputs.append("seq" if "seq" in options else "")
    if "h0" in options:
        if not given:
            feeds["h0"] = rng.standard_normal(state).astype(np.float32) * 0.5
    inputs.append("h0" if "h0" in options else "")
    if op == "LSTM":
        if "c0" in options:
            if not given:
                feeds["c0"] = rng.standard_normal(state).astype(np.float32) * 0.5
        inputs.append("c0" if "c0" in options else "")
        if "P" in options:
            if not given:
                inits["P"] = rng.uniform(-0.5, 0.5, (dirs, 3 * HIDDEN))
        inputs.append("P" if "P" in options else "")
    while inputs and not inputs[-1]:
        inputs.pop()
    node = helper.make_node(op, inputs, OUTPUTS[op], hidden_size=HIDDEN, **attrs)
    graph_inputs = [helper.make_tensor_value_info(k, TensorProto.INT32 if k == "seq" else TensorProto.FLOAT, list(v.shape))
                    for k, v in feeds.items()]
    graph = helper.make_graph([node], name, graph_inputs, [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in OUTPUTS[op]],
                              [numpy_helper.from_array(v.astype(np.float32), k) for k, v in inits.items()])
    path = os.path.join(work, name + ".onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)]), path)
    return path, feeds, inits


def reference(work, name, op, attrs, options, path, feeds, inits):
    """onnxruntime's outputs; layout 1 (which onnxruntime refuses) through the layout-0 model on
    transposed inputs, with the outputs transposed back."""
    if attrs.get("layout", 0) == 0:
        return dict(zip(OUTPUTS[op], ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, feeds)))
    swapped = {k: (np.swapaxes(v, 0, 1) if k != "seq" else v) for k, v in feeds.items()}
    path0, _, _ = make_case(work, name + "_layout0", op, {k: v for k, v in attrs.items() if k != "layout"}, options, None, swapped, inits)
    out = dict(zip(OUTPUTS[op], ort.InferenceSession(path0, providers=["CPUExecutionProvider"]).run(None, swapped)))
    return {k: (np.transpose(v, (2, 0, 1, 3)) if k == "Y" else np.swapaxes(v, 0, 1)) for k, v in out.items()}


def run_precis(precis, work, name, op, path, feeds, precision):
    plan = os.path.join(work, f"{name}_{precision}.plan")
    r = subprocess.run([precis, "compile", path, "-o", plan, "--quiet", "--precision", precision], capture_output=True, text=True)
    if r.returncode:
        return None, r.stderr.strip()
    args = [precis, "run", plan, "--output-dir", os.path.join(work, f"{name}_{precision}")]
    for k, v in feeds.items():
        f = os.path.join(work, f"{name}_{k}.npy")
        np.save(f, v)
        args += ["--input", f"{k}={f}"]
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode:
        return None, r.stderr.strip()
    return {o: np.load(os.path.join(work, f"{name}_{precision}", o + ".npy")) for o in OUTPUTS[op]}, ""


def main():
    precis, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    rng = np.random.default_rng(11)
    failures = []
    for name, op, attrs, options in CASES:
        path, feeds, inits = make_case(work, name, op, attrs, options, rng)
        want = reference(work, name, op, attrs, options, path, feeds, inits)
        if "seq" in feeds:  # padding steps of the shorter sequences are zero in onnxruntime's Y too
            assert np.any(want["Y"] == 0)
        for precision, bound in (("fp32", None), ("fp16", 1e-2), ("bf16", 4e-2)):
            got, err = run_precis(precis, work, name, op, path, feeds, precision)
            if got is None:
                failures.append(f"{name} {precision}: {err}")
                print(f"FAIL: {name} {precision}: {err}")
                continue
            for o in OUTPUTS[op]:
                w, g = want[o].astype(np.float64), got[o].astype(np.float64)
                rel = float(np.linalg.norm(g - w) / max(np.linalg.norm(w), 1e-30))
                ok = g.shape == w.shape and (np.allclose(g, w, rtol=1e-5, atol=1e-5) if bound is None else rel <= bound)
                if precision == "fp32" and o == "Y" and "seq" in feeds:
                    ok = ok and np.array_equal(g == 0, w == 0)  # the same padding steps are exactly zero
                print(f"{'ok:  ' if ok else 'FAIL:'} {name:<28} {precision} {o:<4} max abs {np.abs(g - w).max():.3g} rel L2 {rel:.3g}")
                if not ok:
                    failures.append(f"{name} {precision} {o}")
    print(f"{len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
