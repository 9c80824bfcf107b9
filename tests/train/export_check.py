#!/usr/bin/env python3
"""Checks of precis export (checkpoint_test.sh), run by the venv's python (onnx, onnxruntime).

usage: export_check.py SOURCE.onnx TRAINED.onnx INITIAL.onnx STATE_FILE X.npy PRECIS_LOGITS.npy
- TRAINED keeps SOURCE's inputs, outputs, opsets and nodes; each initializer named like a state
  tensor equals it bitwise, every other initializer is SOURCE's; the trained ones moved;
- INITIAL (export without a checkpoint) has SOURCE's initializer values bitwise;
- onnxruntime on TRAINED matches precis run of TRAINED: rel L2 <= 1e-5 (FP32 on both sides,
  different summation orders)."""
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from precis_state import read_state_file  # noqa: E402


def inits(model):
    return {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}


def main(source_path, trained_path, initial_path, state_path, x_path, logits_path):
    source, trained, initial = onnx.load(source_path), onnx.load(trained_path), onnx.load(initial_path)
    state = read_state_file(state_path)
    g0, g1 = source.graph, trained.graph
    assert g0.input == g1.input and g0.output == g1.output and list(source.opset_import) == list(trained.opset_import), "interface changed"
    assert g0.node == g1.node, "nodes changed"
    a, b, c = inits(source), inits(trained), inits(initial)
    assert a.keys() == b.keys() == c.keys()
    trained_names = [n for n in b if n in state]
    assert trained_names, "no initializer came from the state"
    for n in b:
        if n in state:
            assert b[n].dtype == state[n].dtype and b[n].tobytes() == state[n].tobytes(), n
            assert not np.array_equal(b[n], a[n]), n + " did not change in training"
        else:
            assert b[n].tobytes() == a[n].tobytes(), n
        assert c[n].tobytes() == a[n].tobytes(), n + " (initial export)"
    x = np.load(x_path)
    want = ort.InferenceSession(trained_path, providers=["CPUExecutionProvider"]).run(None, {g1.input[0].name: x})[0]
    got = np.load(logits_path)
    rel = float(np.linalg.norm(got.astype(np.float64) - want) / np.linalg.norm(want))
    print("export: %d trained initializers equal the state bitwise; onnxruntime vs precis run rel L2 %.2e" % (len(trained_names), rel))
    assert rel <= 1e-5, rel


if __name__ == "__main__":
    main(*sys.argv[1:7])
