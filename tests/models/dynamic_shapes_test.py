"""Dynamic plans: models with symbolic dims compiled once (no --shape) and run at several shapes,
against onnxruntime.

usage: dynamic_shapes_test.py PRECIS WORKDIR

Models (random weights, fixed seeds), each exported with dynamic axes {0: batch, 1: seq}:
  - encoder: a 2-layer torch.nn.TransformerEncoder (d_model 32, 4 heads, batch_first) between two
    Linear layers, exported by Debian's python3-torch (/usr/bin/python3). Its attention reshapes
    come from Shape -> Gather -> Unsqueeze -> Concat -> Reshape, which the compiler turns into
    symbolic dims ("batch", "batch*seq"). Run at three sequence lengths and two batch sizes from
    one plan per precision.
  - lstm, gru: 2-layer bidirectional torch.nn.LSTM / torch.nn.GRU and a Linear head (the initial
    states come from ConstantOfShape over the batch dim).
  - positions: a hand-built model adding a position embedding gathered with Range(0, seq, 1), the
    limit taken from Shape(x).
  - convnet: strided convolutions, BatchNorm, a strided max pool and a global average pool over
    symbolic height and width ({0: batch, 2: height, 3: width}): output sizes are floor divisions
    ((height+1)/2 and so on); run at 32x32, 33x47, 64x40 and 7x9.
  - decoder: a causal self-attention block over token ids (torch): a 64-long position table and
    causal mask sliced to the sequence ([:t], [:t, :t], Slice bounds computed at run time), heads
    split with view(b, t, 4, 8); run up to the buffers' full length 64.
Every plan must say it is dynamic (compile summary "dynamic in batch, seq").
Tolerances: FP32 within 1e-5 absolute and relative of onnxruntime (the same FP32 operations,
summed in other orders); 16-bit plans within relative L2 1e-2 (FP16) and 4e-2 (BF16), the model
tests' bounds for 16-bit storage.
Also checked: bounds (--shape seq=1..16 --shape batch=1..2: runs within them match onnxruntime,
seq 17 is refused, a bound naming no symbol is a compile error); `precis run --random --dim
batch=3 --dim seq=5` gives outputs of that shape; an input
of the wrong static dim is refused naming the plan's shape; the decoder at seq 65, past its
64-long buffers, is refused at run time (the Slice bounds give 64, the plan's shape 65) instead of
reading past them; a Reshape whose target is a graph input (values that decide a shape) compiles
to one plan that matches onnxruntime at four targets ([9, 4], [0, -1], [-1, 2], [36, 1]) and
refuses [5, -1] at run time; a tf_crop_and_resize Resize whose roi is a graph input matches
onnxruntime within 1e-5 at two rois (one reaching outside the image: extrapolation); Resize with
antialias (linear, cubic; downsampling by 4, 2.5, and upsampling in the other dim) within 1e-5 of
ONNX's reference implementation in float64.
"""
import os
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

TORCH_EXPORT = r"""
import sys, torch
torch.manual_seed(0)
which, path = sys.argv[1], sys.argv[2]

class Encoder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Linear(16, 32)
        layer = torch.nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64, dropout=0.0, batch_first=True)
        self.enc = torch.nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
        self.head = torch.nn.Linear(32, 8)
    def forward(self, x):
        return self.head(self.enc(self.emb(x)))

class Recurrent(torch.nn.Module):
    def __init__(self, cell):
        super().__init__()
        self.rnn = cell(16, 24, num_layers=2, batch_first=True, bidirectional=True)
        self.head = torch.nn.Linear(48, 5)
    def forward(self, x):
        y, _ = self.rnn(x)
        return self.head(y)

class Decoder(torch.nn.Module):
    # A causal self-attention block over token ids: the position table and the causal mask are
    # 64-long buffers sliced to the sequence ([:t], [:t, :t]), the heads split with x.shape.
    def __init__(self):
        super().__init__()
        self.tok = torch.nn.Embedding(50, 32)
        self.pos = torch.nn.Parameter(torch.randn(64, 32) * 0.1)
        self.register_buffer("mask", torch.tril(torch.ones(64, 64)))
        self.qkv = torch.nn.Linear(32, 96)
        self.proj = torch.nn.Linear(32, 32)
        self.head = torch.nn.Linear(32, 16)
    def forward(self, tokens):
        b, t = tokens.shape
        x = self.tok(tokens) + self.pos[:t]
        q, k, v = self.qkv(x).split(32, dim=2)
        q = q.view(b, t, 4, 8).transpose(1, 2)
        k = k.view(b, t, 4, 8).transpose(1, 2)
        v = v.view(b, t, 4, 8).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (8 ** -0.5)
        att = att.masked_fill(self.mask[:t, :t] == 0, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, 32)
        return self.head(x + self.proj(y))

class ConvNet(torch.nn.Module):
    # Strided convolutions and a max pool over symbolic height and width (floor divisions).
    def __init__(self):
        super().__init__()
        self.body = torch.nn.Sequential(
            torch.nn.Conv2d(3, 8, 3, stride=2, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
            torch.nn.MaxPool2d(3, stride=2, padding=1), torch.nn.Conv2d(8, 16, 3, padding=1), torch.nn.ReLU(),
            torch.nn.Conv2d(16, 16, 3, stride=2, padding=1), torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(16, 10))
    def forward(self, x):
        return self.body(x)

if which == "convnet":
    torch.onnx.export(ConvNet().eval(), (torch.randn(2, 3, 32, 32),), path, opset_version=17, input_names=["x"], output_names=["y"],
                      dynamic_axes={"x": {0: "batch", 2: "height", 3: "width"}, "y": {0: "batch"}})
elif which == "decoder":
    torch.onnx.export(Decoder().eval(), (torch.randint(0, 50, (2, 7)),), path, opset_version=17, input_names=["x"], output_names=["y"],
                      dynamic_axes={"x": {0: "batch", 1: "seq"}, "y": {0: "batch", 1: "seq"}})
else:
    m = Encoder() if which == "encoder" else Recurrent(torch.nn.LSTM if which == "lstm" else torch.nn.GRU)
    torch.onnx.export(m.eval(), (torch.randn(2, 7, 16),), path, opset_version=17, input_names=["x"], output_names=["y"],
                      dynamic_axes={"x": {0: "batch", 1: "seq"}, "y": {0: "batch", 1: "seq"}})
"""

SHAPES = {"encoder": [(1, 3), (1, 7), (1, 32), (2, 3), (2, 7), (2, 32)],
          "lstm": [(1, 3), (2, 9), (3, 1)], "gru": [(1, 3), (2, 9), (3, 1)], "positions": [(1, 1), (2, 5), (3, 12)],
          "decoder": [(1, 1), (2, 9), (1, 64)], "convnet": [(1, 3, 32, 32), (2, 3, 33, 47), (1, 3, 64, 40), (1, 3, 7, 9)]}
DYNAMIC = {"convnet": "dynamic in batch, height, width"}


def torch_model(which, path, work):
    script = os.path.join(work, "torch_export.py")
    with open(script, "w") as f:
        f.write(TORCH_EXPORT)
    r = subprocess.run(["/usr/bin/python3", script, which, path], capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(f"exporting {which} with Debian's python3-torch failed: {r.stderr[-2000:]}")


def positions_model(path):
    rng = np.random.default_rng(3)
    n, vi = helper.make_node, helper.make_tensor_value_info
    nodes = [n("Shape", ["x"], ["shape"]), n("Gather", ["shape", "one"], ["seq"], axis=0), n("Range", ["zero", "seq", "one"], ["pos"]),
             n("Gather", ["table", "pos"], ["emb"], axis=0), n("Add", ["x", "emb"], ["sum"]), n("MatMul", ["sum", "w"], ["y"])]
    inits = [numpy_helper.from_array(np.array(0, np.int64), "zero"), numpy_helper.from_array(np.array(1, np.int64), "one"),
             numpy_helper.from_array(rng.standard_normal((64, 16)).astype(np.float32), "table"),
             numpy_helper.from_array((rng.standard_normal((16, 6)) * 0.3).astype(np.float32), "w")]
    graph = helper.make_graph(nodes, "positions", [vi("x", TensorProto.FLOAT, ["batch", "seq", 16])], [vi("y", TensorProto.FLOAT, ["batch", "seq", 6])],
                              inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    onnx.save(model, path)


def data_reshape_model(path):
    n, vi = helper.make_node, helper.make_tensor_value_info
    graph = helper.make_graph([n("Reshape", ["x", "target"], ["y"])], "data_reshape",
                              [vi("x", TensorProto.FLOAT, ["batch", 12]), vi("target", TensorProto.INT64, [2])], [vi("y", TensorProto.FLOAT, None)])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


def crop_resize_model(path):
    n, vi = helper.make_node, helper.make_tensor_value_info
    sizes = helper.make_tensor("sizes", TensorProto.INT64, [4], [1, 2, 5, 6])
    node = n("Resize", ["x", "roi", "", "sizes"], ["y"], mode="linear", coordinate_transformation_mode="tf_crop_and_resize",
             extrapolation_value=-1.0)
    graph = helper.make_graph([node], "crop_resize", [vi("x", TensorProto.FLOAT, [1, 2, 8, 8]), vi("roi", TensorProto.FLOAT, [8])],
                              [vi("y", TensorProto.FLOAT, [1, 2, 5, 6])], initializer=[sizes])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)


def antialias_model(path, mode, scales):
    n, vi = helper.make_node, helper.make_tensor_value_info
    sc = helper.make_tensor("scales", TensorProto.FLOAT, [4], scales)
    node = n("Resize", ["x", "", "scales"], ["y"], mode=mode, antialias=1)
    graph = helper.make_graph([node], "antialias", [vi("x", TensorProto.FLOAT, [1, 2, 20, 23])], [vi("y", TensorProto.FLOAT, None)],
                              initializer=[sc])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), path)


def main():
    precis, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    failures = []

    def check(ok, what):
        print(f"{'ok:  ' if ok else 'FAIL:'} {what}")
        if not ok:
            failures.append(what)

    for name in SHAPES:
        path = os.path.join(work, name + ".onnx")
        if name == "positions":
            positions_model(path)
        else:
            torch_model(name, path, work)
        sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        for precision, bound in (("fp32", None), ("fp16", 1e-2), ("bf16", 4e-2)):
            plan = os.path.join(work, f"{name}_{precision}.plan")
            r = subprocess.run([precis, "compile", path, "-o", plan, "--precision", precision], capture_output=True, text=True)
            if r.returncode:
                check(False, f"{name} {precision}: compile: {r.stderr.strip()[-500:]}")
                continue
            want_dynamic = DYNAMIC.get(name, "dynamic in batch, seq")
            check(want_dynamic in r.stdout, f"{name} {precision}: the plan is {want_dynamic}")
            for k, shape in enumerate(SHAPES[name]):
                b, t = shape[0], shape[-1]
                rng = np.random.default_rng(100 * b + t)
                if name == "decoder":
                    x = rng.integers(0, 50, (b, t)).astype(np.int64)
                elif name == "convnet":
                    x = rng.standard_normal(shape).astype(np.float32)
                else:
                    x = rng.standard_normal((b, t, 16)).astype(np.float32)
                f = os.path.join(work, f"{name}_x_{k}.npy")
                np.save(f, x)
                out = os.path.join(work, f"{name}_{precision}_{k}")
                r = subprocess.run([precis, "run", plan, "--input", f"x={f}", "--output-dir", out], capture_output=True, text=True)
                if r.returncode:
                    check(False, f"{name} {precision} {b}x{t}: run: {r.stderr.strip()[-500:]}")
                    continue
                want = sess.run(None, {"x": x})[0].astype(np.float64)
                got = np.load(os.path.join(out, "y.npy")).astype(np.float64)
                if got.shape != want.shape:
                    check(False, f"{name} {precision} {b}x{t}: shape {got.shape} vs {want.shape}")
                    continue
                rel = float(np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-30))
                ok = np.allclose(got, want, rtol=1e-5, atol=1e-5) if bound is None else rel <= bound
                check(ok, f"{name:<9} {precision} {'x'.join(map(str, x.shape)):<10} max abs {np.abs(got - want).max():.3g} rel L2 {rel:.3g}")

    plan = os.path.join(work, "encoder_fp32.plan")
    out = os.path.join(work, "random_run")
    r = subprocess.run([precis, "run", plan, "--random", "--dim", "batch=3", "--dim", "seq=5", "--output-dir", out], capture_output=True, text=True)
    shape = np.load(os.path.join(out, "y.npy")).shape if r.returncode == 0 else None
    check(shape == (3, 5, 8), f"precis run --random --dim batch=3 --dim seq=5: output shape {shape} {r.stderr.strip()[-300:]}")
    bad = os.path.join(work, "bad_x.npy")
    np.save(bad, np.zeros((2, 4, 15), np.float32))
    r = subprocess.run([precis, "run", plan, "--input", f"x={bad}"], capture_output=True, text=True)
    check(r.returncode != 0 and "must have shape [batch, seq, 16]" in r.stderr, f"wrong static dim refused: {r.stderr.strip()[-300:]}")
    # Bounds: --shape seq=1..16 --shape batch=1..2 (the arena planned once, for the maximum).
    bounded = os.path.join(work, "encoder_bounded.plan")
    r = subprocess.run([precis, "compile", os.path.join(work, "encoder.onnx"), "-o", bounded, "--shape", "seq=1..16", "--shape", "batch=1..2"],
                       capture_output=True, text=True)
    check(r.returncode == 0 and "arena planned once, for the maximum" in r.stdout, f"bounded compile: {(r.stdout + r.stderr).strip()[-300:]}")
    sess = ort.InferenceSession(os.path.join(work, "encoder.onnx"), providers=["CPUExecutionProvider"])
    for b, t in ((2, 16), (1, 5)):
        x = np.random.default_rng(7 * b + t).standard_normal((b, t, 16)).astype(np.float32)
        f = os.path.join(work, "bounded_x.npy")
        np.save(f, x)
        out = os.path.join(work, f"bounded_{b}_{t}")
        r = subprocess.run([precis, "run", bounded, "--input", f"x={f}", "--output-dir", out], capture_output=True, text=True)
        ok = r.returncode == 0 and np.allclose(np.load(os.path.join(out, "y.npy")), sess.run(None, {"x": x})[0], rtol=1e-5, atol=1e-5)
        check(ok, f"bounded plan batch {b} seq {t} {r.stderr.strip()[-200:]}")
    np.save(f, np.zeros((1, 17, 16), np.float32))
    r = subprocess.run([precis, "run", bounded, "--input", f"x={f}"], capture_output=True, text=True)
    check(r.returncode != 0 and "seq = 17 is outside the plan's bounds 1..16" in r.stderr, f"bounded plan refuses seq 17: {r.stderr.strip()[-300:]}")
    r = subprocess.run([precis, "compile", os.path.join(work, "encoder.onnx"), "-o", bounded, "--shape", "length=1..16"], capture_output=True, text=True)
    check(r.returncode != 0 and "no symbolic dim 'length'" in r.stderr, f"bound on no symbol refused: {r.stderr.strip()[-300:]}")
    long = os.path.join(work, "long_tokens.npy")
    np.save(long, np.zeros((1, 65), np.int64))
    r = subprocess.run([precis, "run", os.path.join(work, "decoder_fp32.plan"), "--input", f"x={long}"], capture_output=True, text=True)
    check(r.returncode != 0 and "the run-time bounds give dim" in r.stderr, f"decoder past its buffers refused: {r.stderr.strip()[-300:]}")
    # A Reshape whose target is a graph input: the values bind symbols at run time.
    path = os.path.join(work, "data_reshape.onnx")
    data_reshape_model(path)
    plan = os.path.join(work, "data_reshape.plan")
    r = subprocess.run([precis, "compile", path, "-o", plan], capture_output=True, text=True)
    check(r.returncode == 0 and "target[0]" in r.stdout, f"Reshape to a run-time value compiles as a dynamic plan: {(r.stdout + r.stderr).strip()[-300:]}")
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    x = np.random.default_rng(3).standard_normal((3, 12)).astype(np.float32)
    xf = os.path.join(work, "data_reshape_x.npy")
    np.save(xf, x)
    for target in ([9, 4], [0, -1], [-1, 2], [36, 1]):
        tf, out = os.path.join(work, "data_reshape_t.npy"), os.path.join(work, "data_reshape_out")
        np.save(tf, np.array(target, np.int64))
        r = subprocess.run([precis, "run", plan, "--input", f"x={xf}", "--input", f"target={tf}", "--output-dir", out], capture_output=True, text=True)
        want = sess.run(None, {"x": x, "target": np.array(target, np.int64)})[0]
        got = np.load(os.path.join(out, "y.npy")) if r.returncode == 0 else None
        check(got is not None and got.shape == want.shape and np.array_equal(got, want), f"Reshape to target {target}: {None if got is None else got.shape} vs onnxruntime {want.shape} {r.stderr.strip()[-200:]}")
    np.save(tf, np.array([5, -1], np.int64))
    r = subprocess.run([precis, "run", plan, "--input", f"x={xf}", "--input", f"target={tf}"], capture_output=True, text=True)
    check(r.returncode != 0 and "Reshape" in r.stderr, f"Reshape of 36 elements to [5, -1] refused: {r.stderr.strip()[-300:]}")
    # Resize tf_crop_and_resize whose roi is a graph input: the kernel reads it when it runs.
    path = os.path.join(work, "crop_resize.onnx")
    crop_resize_model(path)
    plan = os.path.join(work, "crop_resize.plan")
    r = subprocess.run([precis, "compile", path, "-o", plan], capture_output=True, text=True)
    check(r.returncode == 0, f"Resize with a run-time roi compiles: {r.stderr.strip()[-300:]}")
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    x = np.random.default_rng(4).standard_normal((1, 2, 8, 8)).astype(np.float32)
    np.save(xf, x)
    for roi in ([0, 0, 0.1, 0.2, 1, 1, 0.9, 0.7], [0, 0, -0.2, 0.3, 1, 1, 1.1, 0.6]):  # the second reaches outside: extrapolation
        rf, out = os.path.join(work, "crop_resize_roi.npy"), os.path.join(work, "crop_resize_out")
        np.save(rf, np.array(roi, np.float32))
        r = subprocess.run([precis, "run", plan, "--input", f"x={xf}", "--input", f"roi={rf}", "--output-dir", out], capture_output=True, text=True)
        want = sess.run(None, {"x": x, "roi": np.array(roi, np.float32)})[0]
        got = np.load(os.path.join(out, "y.npy")) if r.returncode == 0 else None
        err = float(np.max(np.abs(got - want))) if got is not None and got.shape == want.shape else None
        check(err is not None and err <= 1e-5, f"Resize tf_crop_and_resize, roi {roi} given at run time: max error {err} against onnxruntime {r.stderr.strip()[-200:]}")
    # Resize with antialias (downsampling by 4 and by 2.5: 8 and 6 linear taps, 16 and 10 cubic
    # ones per dim) against ONNX's reference implementation in float64.
    from onnx.reference import ReferenceEvaluator
    x = np.random.default_rng(5).standard_normal((1, 2, 20, 23)).astype(np.float32)
    np.save(xf, x)
    for mode in ("linear", "cubic"):
        for scales in ([1, 1, 0.25, 0.4], [1, 1, 0.4, 1.5]):
            path, plan = os.path.join(work, "antialias.onnx"), os.path.join(work, "antialias.plan")
            antialias_model(path, mode, scales)
            r = subprocess.run([precis, "compile", path, "-o", plan], capture_output=True, text=True)
            out = os.path.join(work, "antialias_out")
            if r.returncode == 0:
                r = subprocess.run([precis, "run", plan, "--input", f"x={xf}", "--output-dir", out], capture_output=True, text=True)
            want = ReferenceEvaluator(onnx.load(path)).run(None, {"x": x.astype(np.float64)})[0]
            got = np.load(os.path.join(out, "y.npy")) if r.returncode == 0 else None
            err = float(np.max(np.abs(got - want))) if got is not None and got.shape == want.shape else None
            check(err is not None and err <= 1e-5, f"Resize {mode} antialias, scales {scales}: max error {err} against ONNX's reference in float64 "
                  f"{r.stderr.strip()[-200:]}")
    # Dynamic plans for the CUDA target (dims bound from input shapes): they compile and, run on
    # the CPU here, give the CPU plan's values at every shape (the GPU run is tests/cuda's bundle,
    # make_bundle.py --dynamic). Shapes decided by input values or by data are refused for CUDA.
    for name, shapes in (("encoder", [(1, 3), (2, 7)]), ("convnet", [(1, 3, 32, 32), (2, 3, 33, 47)])):
        cuda_plan = os.path.join(work, f"{name}_cuda_fp16.plan")
        r = subprocess.run([precis, "compile", os.path.join(work, name + ".onnx"), "-o", cuda_plan, "--device", "cuda", "--precision", "fp16"],
                           capture_output=True, text=True)
        check(r.returncode == 0 and "shapes     dynamic" in r.stdout, f"{name}: dynamic CUDA plan compiles {r.stderr.strip()[-300:]}")
        if r.returncode:
            continue
        sess = ort.InferenceSession(os.path.join(work, name + ".onnx"), providers=["CPUExecutionProvider"])
        for shape in shapes:
            x = np.random.default_rng(sum(shape)).standard_normal(shape if name == "convnet" else (shape[0], shape[1], 16)).astype(np.float32)
            f, out = os.path.join(work, "cuda_x.npy"), os.path.join(work, "cuda_out")
            np.save(f, x)
            r = subprocess.run([precis, "run", cuda_plan, "--input", f"x={f}", "--output-dir", out], capture_output=True, text=True)
            want = sess.run(None, {"x": x})[0].astype(np.float64)
            got = np.load(os.path.join(out, "y.npy")).astype(np.float64) if r.returncode == 0 else None
            rel = float(np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-30)) if got is not None and got.shape == want.shape else None
            check(rel is not None and rel <= 1e-2, f"{name} CUDA fp16 plan on the CPU at {x.shape}: rel L2 {rel} against onnxruntime {r.stderr.strip()[-200:]}")
    r = subprocess.run([precis, "compile", os.path.join(work, "data_reshape.onnx"), "-o", os.path.join(work, "cuda_refused.plan"), "--device", "cuda"],
                       capture_output=True, text=True)
    check(r.returncode != 0 and "values of input 'target'" in r.stderr and "CUDA target" in r.stderr,
          f"a CUDA plan whose shapes follow input values is refused: {r.stderr.strip()[-300:]}")
    print(f"{len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
