#!/usr/bin/env python3
"""Regenerates the committed seed corpora of plan_fuzz, state_fuzz, tensor_fuzz and elf_fuzz.

  .venv/bin/python tests/fuzz/make_seeds.py build/bin/precis [tests/fuzz]

Needs onnx and numpy (the project's .venv), flatc and a built `precis`. Writes:
  plan_seeds/    tiny plans from `precis compile`: tiny_convnet in FP32/FP16/BF16 (weights
                 stripped: the fuzz target opens plans with synthetic weights), small one-family
                 models (inference) and an MLP and a small convnet (training); the precision report,
                 the source model and the steps' node names are taken out of the metadata (through
                 flatc's JSON form), so that mutations land on what the loader reads.
  state_seeds/   state files (runtime/exec/state_file.h) of a few tensors each.
  tensor_seeds/  .npy (header versions 1-3, several dtypes), .npz and TensorProto .pb files.
  elf_seeds/     the generated-code objects (x86-64-v3 and -v4) of a plan with fused elementwise
                 kernels, cut out of the plan file.
Regression inputs (names starting with "crash-": found by a fuzz target; "regress-": written by
hand for a bug found by reading) are kept; everything else is rewritten.
"""
import json
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FBS = os.path.join(ROOT, "runtime", "plan", "plan.fbs")


def hash_bytes(data, seed=0xCBF29CE484222325):
    """runtime/base/hash.h HashBytes."""
    prime, mask = 0x100000001B3, (1 << 64) - 1
    h, n, i = seed, len(data), 0
    while i + 8 <= n:
        h = ((h ^ int.from_bytes(data[i:i + 8], "little")) * prime) & mask
        h ^= h >> 29
        i += 8
    for b in data[i:]:
        h = ((h ^ b) * prime) & mask
    return ((h ^ n) * prime) & mask


def fresh_dir(path):
    os.makedirs(path, exist_ok=True)
    for name in os.listdir(path):
        if not name.startswith(("crash-", "regress-")):
            os.remove(os.path.join(path, name))


# --- plans -----------------------------------------------------------------------------------

HEADER = struct.Struct("<8sII6Q")  # runtime/plan/plan_format.h FileHeader


def slim_plan(plan_path, out_path, tmp):
    """Drops the report and the source model from a plan's metadata and reseals it."""
    data = open(plan_path, "rb").read()
    magic, version, header_bytes, meta_off, meta_size, const_off, const_size, _, _ = HEADER.unpack_from(data)
    meta_bin = os.path.join(tmp, "meta.bin")
    open(meta_bin, "wb").write(data[meta_off:meta_off + meta_size])
    subprocess.run(["flatc", "--json", "--raw-binary", "--strict-json", "-o", tmp, FBS, "--", meta_bin], check=True)
    meta = json.load(open(os.path.join(tmp, "meta.json")))
    for field in ("report_json", "report_text", "source_model", "training_config", "producer"):
        meta.pop(field, None)
    for program in meta.get("programs", []):
        for step in program.get("steps", []):
            step.pop("node", None)  # only named in messages
    json.dump(meta, open(os.path.join(tmp, "meta.json"), "w"))
    subprocess.run(["flatc", "--binary", "-o", tmp, FBS, os.path.join(tmp, "meta.json")], check=True)
    new_meta = open(os.path.join(tmp, "meta.bin"), "rb").read()
    constants = data[const_off:const_off + const_size]
    new_const_off = (64 + len(new_meta) + 63) // 64 * 64
    body = new_meta + bytes(new_const_off - 64 - len(new_meta)) + constants
    size = 64 + len(body)
    header = HEADER.pack(magic, version, header_bytes, 64, len(new_meta), new_const_off, len(constants), size, hash_bytes(body))
    open(out_path, "wb").write(header + body)


def model(nodes, inputs, outputs, initializers=(), opset=17):
    graph = helper.make_graph(nodes, "seed", inputs, outputs, list(initializers))
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="make_seeds")
    m.ir_version = 8
    return m


def f32(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def const(name, array):
    return numpy_helper.from_array(np.asarray(array), name)


def inference_models():
    """One small model per kernel family; every op depends on the input so nothing folds away."""
    rng = np.random.default_rng(7)
    w = lambda *s: rng.uniform(-1, 1, s).astype(np.float32)
    x4 = [f32("x", [1, 2, 4, 4])]
    y = lambda *s: [f32("y", list(s))]
    n = helper.make_node
    models = {}
    models["mlp"] = model(
        [n("MatMul", ["x", "W"], ["h"]), n("Add", ["h", "b"], ["a"]), n("Relu", ["a"], ["r"]), n("Softmax", ["r"], ["y"], axis=-1)],
        [f32("x", [2, 3])], y(2, 4), [const("W", w(3, 4)), const("b", w(4))])
    unary = ["Sigmoid", "Tanh", "Exp", "Abs", "Neg", "Sqrt", "Erf", "Softplus", "Elu", "HardSigmoid", "LeakyRelu", "Gelu",
             "Floor", "Reciprocal", "Sin", "Selu", "HardSwish", "Mish", "Sign", "Round"]
    nodes, prev = [], "x"
    for i, op in enumerate(unary):
        out = "y" if i == len(unary) - 1 else "u%d" % i
        nodes.append(n(op, [prev], [out]))
        prev = out
    models["unary"] = model(nodes, [f32("x", [2, 5])], y(2, 5), opset=20)
    models["shape"] = model(
        [n("Transpose", ["x"], ["t"], perm=[0, 2, 3, 1]), n("Reshape", ["t", "s"], ["r"]),
         n("Slice", ["r", "st", "en", "ax"], ["sl"]), n("Concat", ["sl", "sl"], ["c"], axis=1),
         n("Gather", ["c", "gi"], ["g"], axis=1), n("Split", ["g"], ["p0", "p1"], axis=2, num_outputs=2),
         n("Mul", ["p0", "p1"], ["m"]), n("Tile", ["m", "rep"], ["ti"]), n("Pad", ["ti", "pads"], ["pd"], mode="reflect"),
         n("Expand", ["pd", "es"], ["y"])],
        x4, y(2, 4, 6, 6),
        [const("s", np.array([4, 4, 2], np.int64)), const("st", np.array([1], np.int64)), const("en", np.array([3], np.int64)),
         const("ax", np.array([1], np.int64)), const("gi", np.array([3, 0, 1], np.int64)), const("rep", np.array([1, 1, 2], np.int64)),
         const("pads", np.array([0, 1, 1, 0, 1, 1], np.int64)), const("es", np.array([2, 1, 1, 1], np.int64))],
        opset=18)
    models["reduce"] = model(
        [n("ReduceSum", ["x", "axes"], ["rs"], keepdims=1), n("ReduceMax", ["x"], ["rm"], axes=[2], keepdims=0),
         n("ArgMax", ["x"], ["am"], axis=3), n("CumSum", ["x", "cax"], ["cs"], exclusive=1),
         n("TopK", ["cs", "k"], ["tv", "ti"], axis=3), n("LogSoftmax", ["tv"], ["ls"], axis=1),
         n("Cast", ["am"], ["amf"], to=TensorProto.FLOAT), n("Add", ["rs", "amf"], ["s1"]), n("Unsqueeze", ["rm", "uax"], ["rmu"]),
         n("Add", ["s1", "rmu"], ["s2"]), n("ReduceMean", ["ls"], ["lm"], axes=[3], keepdims=1), n("Sub", ["s2", "lm"], ["y"])],
        x4, y(1, 2, 4, 1),
        [const("axes", np.array([3], np.int64)), const("cax", np.array(3, np.int64)), const("k", np.array([2], np.int64)),
         const("uax", np.array([3], np.int64))], opset=13)
    models["norm"] = model(
        [n("LayerNormalization", ["x", "g", "b"], ["ln"], axis=-1), n("InstanceNormalization", ["ln", "ic", "ib"], ["in"]),
         n("LRN", ["in"], ["lrn"], size=3), n("GroupNormalization", ["lrn", "gs", "gb"], ["gn"], num_groups=1),
         n("BatchNormalization", ["gn", "ic", "ib", "ib", "ic"], ["y"])],
        x4, y(1, 2, 4, 4),
        [const("g", w(4)), const("b", w(4)), const("ic", np.abs(w(2)) + 0.5), const("ib", w(2)), const("gs", w(2)), const("gb", w(2))],
        opset=21)
    models["pool"] = model(
        [n("AveragePool", ["x"], ["ap"], kernel_shape=[2, 2], pads=[1, 1, 0, 0], count_include_pad=1),
         n("MaxPool", ["ap"], ["mp"], kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1),
         n("ConvTranspose", ["mp", "wt"], ["ct"], strides=[2, 2], group=2),
         n("LpPool", ["ct"], ["lp"], kernel_shape=[2, 2], p=2), n("GlobalMaxPool", ["lp"], ["y"])],
        x4, y(1, 2, 1, 1), [const("wt", w(2, 1, 2, 2))])
    models["logic"] = model(
        [n("Less", ["x", "z"], ["lt"]), n("Not", ["lt"], ["nt"]), n("Equal", ["x", "z"], ["eq"]), n("Or", ["nt", "eq"], ["o"]),
         n("Where", ["o", "x", "z"], ["wh"]), n("Clip", ["wh", "lo", "hi"], ["cl"]), n("Max", ["cl", "x"], ["mx"]),
         n("Pow", ["mx", "two"], ["pw"]), n("PRelu", ["pw", "sl"], ["y"])],
        [f32("x", [2, 3])], y(2, 3),
        [const("z", np.zeros(3, np.float32)), const("lo", np.array(-0.5, np.float32)), const("hi", np.array(0.5, np.float32)),
         const("two", np.array(2.0, np.float32)), const("sl", w(3))])
    models["resize"] = model(
        [n("Resize", ["x", "", "sc"], ["rz"], mode="linear"), n("DepthToSpace", ["rz"], ["d2s"], blocksize=2, mode="CRD"),
         n("SpaceToDepth", ["d2s"], ["s2d"], blocksize=2), n("Resize", ["s2d", "", "", "sz"], ["y"], mode="nearest")],
        x4, y(1, 2, 3, 5), [const("sc", np.array([1, 2, 2, 2], np.float32)), const("sz", np.array([1, 2, 3, 5], np.int64))])
    models["matmul"] = model(
        [n("Gemm", ["x", "W", "c"], ["g"], transB=1, alpha=0.5), n("Einsum", ["g", "E"], ["e"], equation="ij,jk->ik"),
         n("MatMul", ["e", "M"], ["y"])],
        [f32("x", [2, 3])], y(2, 2), [const("W", w(4, 3)), const("c", w(4)), const("E", w(4, 3)), const("M", w(3, 2))])
    models["index"] = model(
        [n("GatherElements", ["x", "ge"], ["g"], axis=1), n("ScatterElements", ["x", "ge", "g"], ["sc"], axis=1, reduction="add"),
         n("ScatterND", ["sc", "nd", "up"], ["snd"]), n("Trilu", ["snd"], ["tr"], upper=1),
         n("GatherND", ["tr", "gnd"], ["gn"]), n("Softmax", ["gn"], ["sm"]), n("Hardmax", ["sm"], ["y"])],
        [f32("x", [3, 3])], y(2, 3),
        [const("ge", np.array([[0, 2, 1], [1, 1, 0], [2, 0, 2]], np.int64)), const("nd", np.array([[1]], np.int64)),
         const("up", w(1, 3)), const("gnd", np.array([[0], [2]], np.int64))], opset=18)
    models["conv"] = model(
        [n("Conv", ["x", "cw", "cb"], ["c"], pads=[1, 1, 1, 1], dilations=[1, 1], group=2), n("Relu", ["c"], ["r"]),
         n("Conv", ["r", "cw2"], ["y"], strides=[2, 2], auto_pad="SAME_UPPER")],
        x4, y(1, 3, 2, 2), [const("cw", w(4, 1, 3, 3)), const("cb", w(4)), const("cw2", w(3, 4, 1, 1))])
    # Control flow: a Loop (constant trip count, a scan output) whose body holds an If on the
    # iteration's parity reading a weight two levels up, then a Scan with a reversed axis.
    vb = lambda name, elem, shape: helper.make_tensor_value_info(name, elem, shape)
    then_g = helper.make_graph([n("MatMul", ["h_in", "LW"], ["t_out"])], "then", [], [f32("t_out", [2, 2])])
    else_g = helper.make_graph([n("Sigmoid", ["h_in"], ["e_out"])], "else", [], [f32("e_out", [2, 2])])
    body = helper.make_graph(
        [n("Mod", ["i", "two"], ["par"]), n("Equal", ["par", "zero"], ["even"]),
         n("If", ["even"], ["h_out"], then_branch=then_g, else_branch=else_g), n("Identity", ["c_in"], ["c_out"]),
         n("ReduceSum", ["h_out"], ["s"], keepdims=0)],
        "body", [vb("i", TensorProto.INT64, []), vb("c_in", TensorProto.BOOL, []), f32("h_in", [2, 2])],
        [vb("c_out", TensorProto.BOOL, []), f32("h_out", [2, 2]), f32("s", [])])
    scan_body = helper.make_graph([n("Add", ["acc", "xt"], ["acc2"]), n("Neg", ["acc2"], ["o"])], "scan",
                                  [f32("acc", [2]), f32("xt", [2])], [f32("acc2", [2]), f32("o", [2])])
    models["control_flow"] = model(
        [n("Loop", ["M", "", "x"], ["hf", "sums"], body=body),
         n("Scan", ["init", "hf"], ["acc_f", "y"], body=scan_body, num_scan_inputs=1, scan_input_directions=[1])],
        [f32("x", [2, 2])], y(2, 2),
        [const("LW", w(2, 2)), const("M", np.array(3, np.int64)), const("two", np.array(2, np.int64)),
         const("zero", np.array(0, np.int64)), const("init", np.zeros(2, np.float32))])
    # A dynamic plan (symbolic dims bound at run time): Shape arithmetic into a Reshape, Range.
    models["dynamic"] = model(
        [n("MatMul", ["x", "DW"], ["mm"]), n("Shape", ["x"], ["s"]), n("Gather", ["s", "zero"], ["b"], axis=0),
         n("Gather", ["s", "one"], ["t"], axis=0), n("Mul", ["b", "t"], ["bt"]), n("Unsqueeze", ["bt", "ax0"], ["btu"]),
         n("Concat", ["btu", "three"], ["target"], axis=0), n("Reshape", ["mm", "target"], ["r"]),
         n("Range", ["zero", "t", "one"], ["pos"]), n("Cast", ["pos"], ["posf"], to=TensorProto.FLOAT),
         n("ReduceSum", ["posf"], ["ps"], keepdims=0), n("Concat", ["x", "x"], ["c"], axis=1),
         n("ReduceSum", ["c", "ax1"], ["cs"], keepdims=0), n("Add", ["cs", "ps"], ["y"])],
        [f32("x", ["batch", "seq", 4])], [f32("r", ["batch*seq", 3]), f32("y", ["batch", 4])],
        [const("DW", w(4, 3)), const("zero", np.array(0, np.int64)), const("one", np.array(1, np.int64)),
         const("ax0", np.array([0], np.int64)), const("ax1", np.array([1], np.int64)), const("three", np.array([3], np.int64))])
    # Values that decide shapes (value symbols bound from the inputs' elements at run time, plan
    # fields value_symbols and the eq/neg/div/min/max atoms): a Reshape target, Slice bounds, pads.
    models["values"] = model(
        [n("Reshape", ["x", "target"], ["r"]), n("Slice", ["x", "starts", "ends", "axes"], ["s"]),
         n("Pad", ["x", "pads"], ["p"], mode="reflect")],
        [f32("x", [4, 6]), helper.make_tensor_value_info("target", TensorProto.INT64, [2]),
         helper.make_tensor_value_info("starts", TensorProto.INT64, [1]), helper.make_tensor_value_info("ends", TensorProto.INT64, [1]),
         helper.make_tensor_value_info("axes", TensorProto.INT64, [1]), helper.make_tensor_value_info("pads", TensorProto.INT64, [4])],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in ("r", "s", "p")], [])
    # Data dims (plan fields data_symbols, data_symbol_bounds): NonZero into GatherND, and
    # NonMaxSuppression, each count bound when its step runs.
    models["data"] = model(
        [n("NonZero", ["x"], ["nz"]), n("Transpose", ["nz"], ["pairs"], perm=[1, 0]), n("GatherND", ["x", "pairs"], ["picked"]),
         n("NonMaxSuppression", ["boxes", "scores", "max_out"], ["sel"])],
        [f32("x", [3, 4]), f32("boxes", [1, 5, 4]), f32("scores", [1, 1, 5])],
        [f32("picked", None), helper.make_tensor_value_info("sel", TensorProto.INT64, None)], [const("max_out", np.array([3], np.int64))])
    return models


def training_models():
    rng = np.random.default_rng(11)
    w = lambda *s: (rng.uniform(-1, 1, s) * 0.5).astype(np.float32)
    n = helper.make_node
    mlp = model(
        [n("Gemm", ["x", "W1", "b1"], ["h"], transB=1), n("Relu", ["h"], ["r"]), n("Gemm", ["r", "W2", "b2"], ["logits"], transB=1)],
        [f32("x", [2, 3])], [f32("logits", [2, 3])], [const("W1", w(4, 3)), const("b1", w(4)), const("W2", w(3, 4)), const("b2", w(3))])
    conv = model(
        [n("Conv", ["x", "cw"], ["c"], pads=[1, 1, 1, 1]), n("BatchNormalization", ["c", "g", "b", "m", "v"], ["bn"]),
         n("Relu", ["bn"], ["r"]), n("Dropout", ["r", "ratio"], ["d"]), n("MaxPool", ["d"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
         n("Flatten", ["p"], ["f"]), n("Gemm", ["f", "fw", "fb"], ["logits"], transB=1)],
        [f32("x", [2, 1, 4, 4])], [f32("logits", [2, 3])],
        [const("cw", w(2, 1, 3, 3)), const("g", np.ones(2, np.float32)), const("b", np.zeros(2, np.float32)),
         const("m", np.zeros(2, np.float32)), const("v", np.ones(2, np.float32)), const("ratio", np.array(0.25, np.float32)),
         const("fw", w(3, 8)), const("fb", w(3))])
    return {"mlp": mlp, "conv": conv}


def make_plan_seeds(precis, out, tmp):
    def compile_and_slim(onnx_path, name, *args):
        raw = os.path.join(tmp, name + ".raw.plan")
        subprocess.run([precis, "compile", onnx_path, "-o", raw, "--quiet", *args], check=True)
        slim_plan(raw, os.path.join(out, name + ".plan"), tmp)

    convnet = os.path.join(ROOT, "examples", "tiny_convnet.onnx")
    for precision in ("fp32", "fp16", "bf16"):
        compile_and_slim(convnet, "tiny_convnet_" + precision, "--shape", "image=1x3x32x32", "--precision", precision, "--strip-weights")
    for name, m in inference_models().items():
        path = os.path.join(tmp, name + ".onnx")
        onnx.save(m, path)
        compile_and_slim(path, name + "_fp32")
        if name in ("mlp", "norm", "conv", "reduce", "control_flow", "dynamic"):
            compile_and_slim(path, name + "_fp16", "--precision", "fp16")
    train = training_models()
    for name, m in train.items():
        path = os.path.join(tmp, "train_" + name + ".onnx")
        onnx.save(m, path)
        compile_and_slim(path, "train_%s_sgd" % name, "--train", "--loss", "cross-entropy", "--label", "label",
                         "--optimizer", "sgd", "--momentum", "0.9")
    # Mixed precision: FP32 masters, dynamic loss scaling, predicated updates (the larger seeds).
    compile_and_slim(os.path.join(tmp, "train_mlp.onnx"), "train_mlp_adamw_fp16", "--train", "--loss", "cross-entropy", "--label",
                     "label", "--optimizer", "adamw", "--precision", "fp16", "--clip-grad-norm", "1.0")
    compile_and_slim(os.path.join(tmp, "train_mlp.onnx"), "train_mlp_mse_bf16", "--train", "--loss", "mse", "--label", "target",
                     "--precision", "bf16", "--lr-schedule", "cosine", "--warmup-steps", "2")


# --- state files -----------------------------------------------------------------------------

DTYPES = {np.float32: 1, np.uint8: 2, np.int8: 3, np.int64: 7, np.bool_: 9, np.float16: 10, np.float64: 11}


def state_file(tensors, signature=None):
    """runtime/exec/state_file.h layout; `tensors` is [(name, array)]."""
    key, body = b"", b""
    for name, a in tensors:
        code = DTYPES[a.dtype.type]
        key += name.encode() + b"\0" + bytes([code]) + b"".join(struct.pack("<q", d) for d in a.shape) + struct.pack("<q", -1)
        body += struct.pack("<I", len(name)) + name.encode() + struct.pack("<BI", code, a.ndim)
        body += b"".join(struct.pack("<q", d) for d in a.shape) + struct.pack("<Q", a.nbytes) + a.tobytes()
    if signature is None:
        signature = hash_bytes(key)
    data = b"PRECISST" + struct.pack("<IIQ", 1, len(tensors), signature) + body
    return data + struct.pack("<Q", hash_bytes(data))


def make_state_seeds(out):
    rng = np.random.default_rng(3)
    seeds = {
        "empty": [],
        "one_scalar": [("step", np.array(7, np.int64))],
        "weights": [("W", rng.standard_normal((2, 3)).astype(np.float32)), ("b", rng.standard_normal(3).astype(np.float32)),
                    ("W.m", np.zeros((2, 3), np.float32)), ("count", np.array([3], np.int64))],
        "mixed_dtypes": [("h", rng.standard_normal(4).astype(np.float16)), ("d", rng.standard_normal((1, 2)).astype(np.float64)),
                         ("flag", np.array([True, False])), ("q", np.arange(5, dtype=np.int8)), ("u", np.arange(3, dtype=np.uint8))],
        "zero_size": [("empty", np.zeros((0, 4), np.float32)), ("x", np.ones((1, 1, 1, 1), np.float32))],
    }
    for name, tensors in seeds.items():
        open(os.path.join(out, name + ".state"), "wb").write(state_file(tensors))


# --- tensor files ----------------------------------------------------------------------------

def npy_bytes(a, version=None):
    import io
    buf = io.BytesIO()
    if version is None:
        np.save(buf, a)
    else:
        np.lib.format.write_array(buf, a, version=version)
    return buf.getvalue()


def make_tensor_seeds(out, tmp):
    rng = np.random.default_rng(5)
    arrays = {
        "f32": rng.standard_normal((2, 3)).astype(np.float32), "f16": rng.standard_normal(4).astype(np.float16),
        "f64_scalar": np.array(1.5), "i64": np.arange(6, dtype=np.int64).reshape(3, 2), "u8": np.arange(4, dtype=np.uint8),
        "bool": np.array([[True], [False]]), "i8_empty": np.zeros((0, 3), np.int8), "u16": np.arange(3, dtype=np.uint16),
    }
    write = lambda name, data: open(os.path.join(out, name), "wb").write(data)
    for name, a in arrays.items():
        write(name + ".npy", npy_bytes(a))
    write("f32_v2.npy", npy_bytes(arrays["f32"], (2, 0)))
    write("i64_v3.npy", npy_bytes(arrays["i64"], (3, 0)))
    write("fortran.npy", npy_bytes(np.asfortranarray(arrays["i64"])))
    write("big_endian.npy", npy_bytes(arrays["f32"].astype(">f4")))
    path = os.path.join(tmp, "two.npz")
    np.savez(path, x=arrays["f32"], label=np.array([1, 0], np.int64))
    write("two.npz", open(path, "rb").read())
    np.savez_compressed(path, x=arrays["u8"])
    write("compressed.npz", open(path, "rb").read())
    protos = {
        "f32_raw": numpy_helper.from_array(arrays["f32"], "x"),
        "i64_raw": numpy_helper.from_array(arrays["i64"], "i"),
        "f16_raw": numpy_helper.from_array(arrays["f16"], "h"),
        "f32_fields": helper.make_tensor("x", TensorProto.FLOAT, [2, 2], [1.0, -2.0, 3.5, 0.25]),
        "i32_fields": helper.make_tensor("i", TensorProto.INT32, [3], [1, -2, 3]),
        "i64_fields": helper.make_tensor("i", TensorProto.INT64, [2, 1], [7, -9]),
        "f16_fields": helper.make_tensor("h", TensorProto.FLOAT16, [2], np.array([1.0, -0.5], np.float16).view(np.uint16).tolist()),
        "bf16_fields": helper.make_tensor("b", TensorProto.BFLOAT16, [2], [0x3F80, 0xBF00]),
        "bool_fields": helper.make_tensor("t", TensorProto.BOOL, [3], [1, 0, 1]),
        "f64_fields": helper.make_tensor("d", TensorProto.DOUBLE, [], [2.5]),
        "string": helper.make_tensor("s", TensorProto.STRING, [1], [b"text"]),
    }
    external = numpy_helper.from_array(arrays["f32"], "e")
    external.ClearField("raw_data")
    external.data_location = TensorProto.EXTERNAL
    for key, value in (("location", "weights.bin"), ("offset", "0"), ("length", "24")):
        entry = external.external_data.add()
        entry.key, entry.value = key, value
    protos["external"] = external
    for name, proto in protos.items():
        write(name + ".pb", proto.SerializeToString())


def make_elf_seeds(precis, out, tmp):
    n = helper.make_node
    m = model([n("Mul", ["x", "x"], ["a"]), n("Add", ["a", "b"], ["c"]), n("Relu", ["c"], ["r"]), n("Sqrt", ["r"], ["y"])],
              [f32("x", [2, 8])], [f32("y", [2, 8])], [const("b", np.linspace(-1, 1, 8).astype(np.float32))])
    path, plan = os.path.join(tmp, "fused.onnx"), os.path.join(tmp, "fused.plan")
    onnx.save(m, path)
    for precision in ("fp32", "fp16"):
        subprocess.run([precis, "compile", path, "-o", plan, "--quiet", "--precision", precision], check=True)
        data = open(plan, "rb").read()
        at, k = data.find(b"\x7fELF"), 0
        while at >= 0:
            shoff, = struct.unpack_from("<Q", data, at + 0x28)
            shentsize, shnum = struct.unpack_from("<HH", data, at + 0x3A)
            size = shoff + shentsize * shnum
            with open(os.path.join(out, "fused_%s_%d.o" % (precision, k)), "wb") as f:
                f.write(data[at:at + size])
            at, k = data.find(b"\x7fELF", at + size), k + 1
        if k != 2:
            sys.exit("expected two generated objects in %s, found %d" % (plan, k))


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    precis = os.path.abspath(sys.argv[1])
    out = os.path.abspath(sys.argv[2] if len(sys.argv) == 3 else os.path.dirname(os.path.abspath(__file__)))
    dirs = {kind: os.path.join(out, kind + "_seeds") for kind in ("plan", "state", "tensor", "elf")}
    for d in dirs.values():
        fresh_dir(d)
    with tempfile.TemporaryDirectory() as tmp:
        make_plan_seeds(precis, dirs["plan"], tmp)
        make_state_seeds(dirs["state"])
        make_tensor_seeds(dirs["tensor"], tmp)
        make_elf_seeds(precis, dirs["elf"], tmp)
    for kind, d in dirs.items():
        files = os.listdir(d)
        print("%s: %d seeds, %d bytes" % (d, len(files), sum(os.path.getsize(os.path.join(d, f)) for f in files)))


if __name__ == "__main__":
    main()
