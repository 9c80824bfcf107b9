"""Prepares the model tests: models, fixed-seed inputs and onnxruntime reference outputs.

Run with the project venv (.venv/bin/python, which has onnx, onnxruntime and numpy):

    .venv/bin/python scripts/make_model_tests.py CACHE_DIR [NAME ...]

For each model it writes CACHE_DIR/NAME/{model.onnx, input_K.npy, expected_K.npy, meta.json}.
meta.json names the inputs (in order, with the shapes given to `precis --shape`) and outputs.
Sources:
- the nine ONNX "light" models shipped in the onnx wheel, whose large weights are stored as
  ConstantOfShape(0.02) stubs: each stub is replaced by a random initializer of the same shape
  (fixed seed; He-scaled for weights, positive for BatchNormalization variances), so that the
  outputs are meaningful;
- torchvision exports (resnet50, mobilenet_v2, mobilenet_v3_small (squeeze-and-excitation,
  Hardswish), vit_b_16; shufflenet_v2, googlenet, mnasnet and densenet121 with BatchNorm
  statistics re-estimated on random images in train mode) and the transformer encoder / causal
  decoder, exported by scripts/export_torchvision.py and scripts/export_transformers.py with
  /usr/bin/python3 into CACHE_DIR/exports/ when missing.
Reference outputs come from onnxruntime's CPU provider on the original model.
"""
import json
import os
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LIGHT = ["bvlc_alexnet", "densenet121", "inception_v1", "inception_v2", "resnet50", "shufflenet",
         "squeezenet", "vgg19", "zfnet512"]
EXPORTS = {
    # name: (export command, {input: shape}, input kind)
    "resnet50": (["scripts/export_torchvision.py", "resnet50"], {"input": [1, 3, 224, 224]}, "image"),
    "mobilenet_v2": (["scripts/export_torchvision.py", "mobilenet_v2"], {"input": [1, 3, 224, 224]}, "image"),
    "mobilenet_v3_small": (["scripts/export_torchvision.py", "mobilenet_v3_small"], {"input": [1, 3, 224, 224]}, "image"),
    "vit_b_16": (["scripts/export_torchvision.py", "vit_b_16"], {"input": [1, 3, 224, 224]}, "image"),
    # BatchNorm statistics re-estimated on random images (a trained network's activation scale).
    "shufflenet_v2": (["scripts/export_torchvision.py", "shufflenet_v2_x1_0", "--recalibrate-bn", "4"], {"input": [1, 3, 224, 224]}, "image"),
    "googlenet": (["scripts/export_torchvision.py", "googlenet", "--recalibrate-bn", "4"], {"input": [1, 3, 224, 224]}, "image"),
    "mnasnet": (["scripts/export_torchvision.py", "mnasnet0_5", "--recalibrate-bn", "4"], {"input": [1, 3, 224, 224]}, "image"),
    "densenet121": (["scripts/export_torchvision.py", "densenet121", "--recalibrate-bn", "4"], {"input": [1, 3, 224, 224]}, "image"),
    "encoder": (["scripts/export_transformers.py", "encoder"], {"input": [2, 64, 256]}, "image"),
    "decoder": (["scripts/export_transformers.py", "decoder"], {"tokens": [2, 32]}, "tokens"),
}


def light_with_random_weights(name):
    path = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light", f"light_{name}.onnx")
    model = onnx.load(path)
    g = model.graph
    inits = {t.name: t for t in g.initializer}
    rng = np.random.default_rng(1234)
    bn_var = {n.input[4] for n in g.node if n.op_type == "BatchNormalization" and len(n.input) > 4}
    bn_scale = {n.input[1] for n in g.node if n.op_type == "BatchNormalization"}
    keep = []
    for node in g.node:
        shape_name = node.input[0] if node.op_type == "ConstantOfShape" and node.input else ""
        if not shape_name.endswith("__SHAPE") or shape_name not in inits:
            keep.append(node)
            continue
        shape = [int(d) for d in numpy_helper.to_array(inits[shape_name])]
        out = node.output[0]
        if out in bn_var:
            arr = rng.uniform(0.5, 1.5, shape)
        elif out in bn_scale:
            arr = rng.uniform(0.8, 1.2, shape)
        else:
            fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else shape[0]
            arr = rng.standard_normal(shape) * np.sqrt(2.0 / max(fan_in, 1))
        g.initializer.append(numpy_helper.from_array(arr.astype(np.float32), out))
    del g.node[:]
    g.node.extend(keep)
    used = {i for n in g.node for i in n.input}
    kept_inits = [t for t in g.initializer if t.name in used or t.name in {o.name for o in g.output}]
    del g.initializer[:]
    g.initializer.extend(kept_inits)
    # Old-IR graphs list initializers as inputs too: drop the ones whose stubs are gone.
    kept_inputs = [i for i in g.input if i.name in used]
    del g.input[:]
    g.input.extend(kept_inputs)
    init_names = {t.name for t in g.initializer}
    real_inputs = [i for i in g.input if i.name not in init_names]
    shapes = {i.name: [d.dim_value for d in i.type.tensor_type.shape.dim] for i in real_inputs}
    return model, shapes, "image"


def exported(name, cache):
    cmd, shapes, kind = EXPORTS[name]
    out = os.path.join(cache, "exports", f"{name}.onnx")
    if not os.path.exists(out):
        subprocess.run(["/usr/bin/python3", os.path.join(ROOT, cmd[0]), *cmd[1:], out], check=True, cwd=ROOT)
    return onnx.load(out), shapes, kind


def strengthen(model):
    """Makes the comparison meaningful on random weights: all-zero float weights (torchvision
    zero-initializes ViT's head) become small random values, and the logits before a final
    Softmax and the features entering the last Gemm/MatMul become extra outputs, since a
    saturated softmax or a near-zero output compares equal whatever the network computed."""
    rng = np.random.default_rng(99)
    g = model.graph
    for k, t in enumerate(g.initializer):
        if t.data_type == onnx.TensorProto.FLOAT:
            a = numpy_helper.to_array(t)
            if a.size > 1 and not a.any():
                g.initializer[k].CopyFrom(numpy_helper.from_array((rng.standard_normal(a.shape) * 0.02).astype(np.float32), t.name))
    outputs = {o.name for o in g.output}
    extra = []
    softmax = [n for n in g.node if n.op_type == "Softmax" and n.output[0] in outputs]
    if softmax:
        extra.append(softmax[-1].input[0])
    products = [n for n in g.node if n.op_type in ("Gemm", "MatMul")]
    if products:
        extra.append(products[-1].input[0])
    for name in extra:
        if name not in outputs and name not in {t.name for t in g.initializer}:
            g.output.append(onnx.helper.make_empty_tensor_value_info(name))
            outputs.add(name)
    return model


def make_inputs(model, shapes, kind, rng):
    elem = {i.name: i.type.tensor_type.elem_type for i in model.graph.input}
    feeds = {}
    for name, shape in shapes.items():
        if elem[name] == onnx.TensorProto.INT64:
            feeds[name] = rng.integers(0, 1000, size=shape, dtype=np.int64)
        else:
            feeds[name] = rng.standard_normal(shape).astype(np.float32)
    return feeds


def prepare(name, cache):
    model, shapes, kind = (light_with_random_weights(name[len("light_"):]) if name.startswith("light_")
                           else exported(name, cache))
    model = strengthen(model)
    d = os.path.join(cache, name)
    os.makedirs(d, exist_ok=True)
    model_path = os.path.join(d, "model.onnx")
    onnx.save(model, model_path)
    feeds = make_inputs(model, shapes, kind, np.random.default_rng(42))
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 2
    sess = ort.InferenceSession(model_path, opts, providers=["CPUExecutionProvider"])
    outputs = sess.run(None, feeds)
    names = [o.name for o in sess.get_outputs()]
    for k, (n, v) in enumerate(feeds.items()):
        np.save(os.path.join(d, f"input_{k}.npy"), v)
    for k, v in enumerate(outputs):
        np.save(os.path.join(d, f"expected_{k}.npy"), v)
    meta = {"inputs": [{"name": n, "shape": list(v.shape)} for n, v in feeds.items()], "outputs": names}
    with open(os.path.join(d, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
    print(f"make_model_tests: {name}: {len(feeds)} inputs, {len(outputs)} outputs")


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    cache = os.path.abspath(sys.argv[1])
    names = sys.argv[2:] or [f"light_{n}" for n in LIGHT] + list(EXPORTS)
    for name in names:
        d = os.path.join(cache, name)
        if os.path.exists(os.path.join(d, "meta.json")):
            continue
        prepare(name, cache)


if __name__ == "__main__":
    main()
