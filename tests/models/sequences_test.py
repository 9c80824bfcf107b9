"""Sequences and optionals resolved at compile time (passes/sequences.h), against onnxruntime.

usage: sequences_test.py PRECIS WORKDIR

Models:
  - scripted: a torch.jit.script module exported by Debian's python3-torch (/usr/bin/python3): a
    Python loop over x.size(0) appending relu(linear(x[i])) * 2 to a list and torch.stack-ing it
    (Loop carrying a sequence: SequenceEmpty, SequenceInsert, ConcatFromSequence new_axis=1),
    and torch.split + torch.cat (SplitToSequence, SequenceAt). FP32 within 1e-5 of onnxruntime,
    FP16/BF16 within relative L2 1e-2 / 4e-2. The loop is unrolled, so the plan has no Loop step.
    Exported with a dynamic first axis (the trip count known only at run time), the loop is kept:
    its list appends become a scan output (passes/sequences.h), the plan runs at 6, 3 and 1 rows
    from one compile (within 1e-5 of onnxruntime) and also with --shape x=6x8 (unrolled); with
    --shape x=1500x8 (a known trip count past the unrolling limit) it is kept too.
  - appends: a scripted loop over a dynamic axis appending to a list that starts with one
    element, read as torch.stack(outs, 1), torch.cat(outs), outs[-1] and len(outs)
    (ConcatFromSequence with and without a new axis, SequenceAt, SequenceLength over the kept
    loop's stack), at 5 and 1 rows, FP32 within 1e-5 and FP16 within relative L2 1e-2 of
    onnxruntime. The scripted-if model exported with a dynamic axis (its body reads the list) is
    still refused, naming the trip count.
  - list: the appends model's list returned as the model output (a container output: the plan
    outputs the stack, the session gives the elements) at 4 and 1 rows, each element within 1e-5
    of onnxruntime and none past the count.
  - split_list: torch.split(x * 2, 2) over a dynamic axis returned as the list (SplitToSequence
    whose chunk count is decided at run time: a padded stack and each chunk's dims) at 5, 4 and 1
    rows in FP32 and BF16 (inputs BF16 holds exactly), equal to onnxruntime.
  - growing: a scripted loop appending tanh(x[:i+1, :i+1]) * 2 to a list returned as the output
    (the body's shapes follow the iteration number: the plan binds it per iteration and pads the
    stack to the last element) at 4, 1 and 6 rows from one plan, FP32 within 1e-6 and BF16 within
    2^-7 of onnxruntime; the same loop over x[i:] (shapes that shrink) is refused, saying why.
  - scripted_if: a scripted running sum over a list (`if i > 0: h = h + outs[i - 1]`): an If inside
    the Loop body, copied per iteration and decided once unrolled; within 1e-5 of onnxruntime.
  - positions: a sequence input of three 2x3 tensors (--shape seq=[2x3,2x3,2x3]) and a position
    given as an input: SequenceInsert, SequenceErase and SequenceAt at every position ONNX allows
    (negative ones too), each result sequence a plan output seq_out[0], seq_out[1]... against
    onnxruntime exactly; positions outside the sequence are refused when the plan runs. Again
    over elements of different shapes (--shape seq=[2x3,2x1,2x4], an inserted 2x2): each result
    then has dims that depend on the position, which the plan computes from it when it runs.
  - split: SplitToSequence with split lengths given as an input (three pieces), reversed with
    SequenceAt and concatenated, at two splits, against onnxruntime exactly.
  - branches: an If with a run-time condition whose branches give two-element sequences
    (SequenceConstruct) read by ConcatFromSequence, at both conditions, against onnxruntime.
  - optional: OptionalHasElement / OptionalGetElement of an optional tensor input, compiled with
    the input present and absent (--shape opt=none), against numpy (the values are exact).
  - optional_output: an If with a run-time condition giving an optional sequence and an optional
    tensor, each present in one branch only, and OptionalHasElement of the first: at both
    conditions the present one has its values (exact), the absent one writes nothing and is
    reported absent.
Also checked: a sequence input without --shape is a compile error that says how to give it.
"""
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

TORCH_EXPORT = r"""
import sys, torch
from typing import List
torch.manual_seed(0)
path, dynamic = sys.argv[1], sys.argv[2] == "dynamic"

class Scripted(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)
    def forward(self, x):
        outs = []
        for i in range(x.size(0)):
            outs.append(torch.relu(self.lin(x[i])) * 2.0)
        parts = torch.split(x, [3, 5], dim=1)
        return torch.stack(outs), torch.cat([parts[1], parts[0]], dim=1)

class Appends(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)
    def forward(self, x):
        outs = [x[0] * 0.5]
        for i in range(x.size(0)):
            outs.append(torch.relu(self.lin(x[i])) * 2.0)
        n = torch.full([1], len(outs), dtype=torch.int64)
        return torch.stack(outs, 1), torch.cat(outs, 0), outs[-1], n

class ListOut(torch.nn.Module):
    # The list itself is the output: a sequence whose length is known only when the plan runs.
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)
    def forward(self, x) -> List[torch.Tensor]:
        outs = [x[0] * 0.5]
        for i in range(x.size(0)):
            outs.append(torch.relu(self.lin(x[i])) * 2.0)
        return outs

class SplitList(torch.nn.Module):
    # torch.split into chunks of 2 rows over a dynamic axis: the chunk count (and the last
    # chunk's rows) are decided when the plan runs.
    def forward(self, x) -> List[torch.Tensor]:
        return torch.split(x * 2.0, 2)

class Growing(torch.nn.Module):
    # Elements whose shape follows the iteration number (x[:i+1, :i+1]): the body's dims change
    # per iteration; the list is a stack padded to the last element and each element's dims.
    def forward(self, x) -> List[torch.Tensor]:
        outs: List[torch.Tensor] = []
        for i in range(x.size(0)):
            outs.append(torch.tanh(x[: i + 1, : i + 1]) * 2.0)
        return outs

class Shrinking(torch.nn.Module):
    # x[i:]: shapes that shrink as the iteration number grows (refused, with the reason).
    def forward(self, x) -> List[torch.Tensor]:
        outs: List[torch.Tensor] = []
        for i in range(x.size(0)):
            outs.append(x[i:] * 2.0)
        return outs

class ScriptedIf(torch.nn.Module):
    # A running sum over a list: the body's `if i > 0:` reads the element appended last.
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)
    def forward(self, x):
        outs = []
        for i in range(x.size(0)):
            h = torch.tanh(self.lin(x[i]))
            if i > 0:
                h = h + outs[i - 1]
            outs.append(h)
        return torch.stack(outs)

if sys.argv[2] in ("if", "if_dynamic"):
    kw = {"dynamic_axes": {"x": {0: "n"}}} if sys.argv[2] == "if_dynamic" else {}
    torch.onnx.export(torch.jit.script(ScriptedIf()), (torch.randn(5, 8),), path, opset_version=17, input_names=["x"], output_names=["y"], **kw)
elif sys.argv[2] == "list":
    torch.onnx.export(torch.jit.script(ListOut()), (torch.randn(4, 8),), path, opset_version=17, input_names=["x"],
                      output_names=["outs"], dynamic_axes={"x": {0: "n"}})
elif sys.argv[2] == "split_list":
    torch.onnx.export(torch.jit.script(SplitList()), (torch.randn(5, 3),), path, opset_version=17, input_names=["x"],
                      output_names=["parts"], dynamic_axes={"x": {0: "n"}})
elif sys.argv[2] in ("growing", "shrinking"):
    m = Growing() if sys.argv[2] == "growing" else Shrinking()
    torch.onnx.export(torch.jit.script(m), (torch.randn(4, 4),), path, opset_version=17, input_names=["x"],
                      output_names=["outs"], dynamic_axes={"x": {0: "n", 1: "m"}})
elif sys.argv[2] == "appends":
    torch.onnx.export(torch.jit.script(Appends()), (torch.randn(4, 8),), path, opset_version=17, input_names=["x"],
                      output_names=["stacked", "joined", "last", "count"], dynamic_axes={"x": {0: "n"}})
else:
    kw = {"dynamic_axes": {"x": {0: "n"}}} if dynamic else {}
    torch.onnx.export(torch.jit.script(Scripted()), (torch.randn(4, 8),), path, opset_version=17, input_names=["x"],
                      output_names=["y", "z"], **kw)
"""

n_, vi = helper.make_node, helper.make_tensor_value_info


def seq_vi(name, elem, shape):
    return helper.make_tensor_sequence_value_info(name, elem, shape)


def positions_model(path, op, same):
    shape = [2, 3] if same else [2, None]
    inputs = [seq_vi("seq", TensorProto.FLOAT, shape), vi("pos", TensorProto.INT64, [])]
    if op == "SequenceInsert":
        inputs.insert(1, vi("t", TensorProto.FLOAT, [2, 3 if same else 2]))
        nodes = [n_("SequenceInsert", ["seq", "t", "pos"], ["seq_out"])]
        outputs = [seq_vi("seq_out", TensorProto.FLOAT, shape)]
    elif op == "SequenceErase":
        nodes = [n_("SequenceErase", ["seq", "pos"], ["seq_out"])]
        outputs = [seq_vi("seq_out", TensorProto.FLOAT, shape)]
    else:
        nodes = [n_("SequenceAt", ["seq", "pos"], ["at"]), n_("SequenceLength", ["seq"], ["length"])]
        outputs = [vi("at", TensorProto.FLOAT, shape), vi("length", TensorProto.INT64, [])]
    graph = helper.make_graph(nodes, op, inputs, outputs)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


def split_model(path):
    nodes = [n_("SplitToSequence", ["x", "split"], ["s"], axis=1),
             n_("SequenceAt", ["s", "two"], ["a"]), n_("SequenceAt", ["s", "one"], ["b"]), n_("SequenceAt", ["s", "zero"], ["c"]),
             n_("Concat", ["a", "b", "c"], ["y"], axis=1), n_("Mul", ["y", "y"], ["y2"])]
    inits = [numpy_helper.from_array(np.array(v, np.int64), k) for k, v in (("zero", 0), ("one", 1), ("two", 2))]
    graph = helper.make_graph(nodes, "split", [vi("x", TensorProto.FLOAT, [2, 9]), vi("split", TensorProto.INT64, [3])],
                              [vi("y2", TensorProto.FLOAT, [2, 9])], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


def branches_model(path):
    def branch(name, op):
        nodes = [n_(op, ["x", "x"], [name + "_a"]), n_("Neg", ["x"], [name + "_b"]),
                 n_("SequenceConstruct", [name + "_a", name + "_b"], [name + "_seq"])]
        return helper.make_graph(nodes, name, [], [seq_vi(name + "_seq", TensorProto.FLOAT, [3, 4])])
    nodes = [n_("If", ["cond"], ["s"], then_branch=branch("then", "Add"), else_branch=branch("else", "Mul")),
             n_("ConcatFromSequence", ["s"], ["y"], axis=0, new_axis=1)]
    graph = helper.make_graph(nodes, "branches", [vi("cond", TensorProto.BOOL, []), vi("x", TensorProto.FLOAT, [3, 4])],
                              [vi("y", TensorProto.FLOAT, [2, 3, 4])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


def optional_model(path):
    opt = helper.make_value_info("opt", helper.make_optional_type_proto(helper.make_tensor_type_proto(TensorProto.FLOAT, [4])))
    then_g = helper.make_graph([n_("OptionalGetElement", ["opt"], ["v"]), n_("Add", ["v", "x"], ["then_y"])], "then", [],
                               [vi("then_y", TensorProto.FLOAT, [4])])
    else_g = helper.make_graph([n_("Identity", ["x"], ["else_y"])], "else", [], [vi("else_y", TensorProto.FLOAT, [4])])
    nodes = [n_("OptionalHasElement", ["opt"], ["has"]), n_("If", ["has"], ["y"], then_branch=then_g, else_branch=else_g)]
    graph = helper.make_graph(nodes, "optional", [opt, vi("x", TensorProto.FLOAT, [4])], [vi("y", TensorProto.FLOAT, [4])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), path)


def optional_output_model(path):
    # If with a run-time condition: then gives an empty optional, else an optional sequence (two
    # elements) or an optional tensor; OptionalHasElement reads the first.
    seq_t = helper.make_sequence_type_proto(helper.make_tensor_type_proto(TensorProto.FLOAT, [3]))
    opt_seq = helper.make_optional_type_proto(seq_t)
    opt_t = helper.make_optional_type_proto(helper.make_tensor_type_proto(TensorProto.FLOAT, [3]))
    then_g = helper.make_graph([n_("Optional", [], ["then_o"], type=seq_t),
                                n_("Optional", ["x"], ["then_t"])], "then", [],
                               [helper.make_value_info("then_o", opt_seq), helper.make_value_info("then_t", opt_t)])
    else_g = helper.make_graph([n_("Add", ["x", "x"], ["a"]), n_("Neg", ["x"], ["b"]), n_("SequenceConstruct", ["a", "b"], ["s"]),
                                n_("Optional", ["s"], ["else_o"]), n_("Optional", [], ["else_t"], type=helper.make_tensor_type_proto(TensorProto.FLOAT, [3]))],
                               "else", [], [helper.make_value_info("else_o", opt_seq), helper.make_value_info("else_t", opt_t)])
    nodes = [n_("If", ["cond"], ["o", "t"], then_branch=then_g, else_branch=else_g), n_("OptionalHasElement", ["o"], ["has"])]
    graph = helper.make_graph(nodes, "optional_output", [vi("cond", TensorProto.BOOL, []), vi("x", TensorProto.FLOAT, [3])],
                              [helper.make_value_info("o", opt_seq), helper.make_value_info("t", opt_t), vi("has", TensorProto.BOOL, [])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), path)


def main():
    precis, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    failures = []

    def check(ok, what):
        print(f"{'ok:  ' if ok else 'FAIL:'} {what}")
        if not ok:
            failures.append(what)

    def compile_plan(model, plan, *args):
        return subprocess.run([precis, "compile", model, "-o", plan, *args], capture_output=True, text=True)

    def run_plan(plan, feeds, tag):
        out = os.path.join(work, tag + "_out")
        shutil.rmtree(out, ignore_errors=True)  # no file of an earlier run may pass for an output
        args = [precis, "run", plan, "--output-dir", out]
        for name, value in feeds.items():
            f = os.path.join(work, f"{tag}_{name.replace('[', '_').replace(']', '')}.npy")
            np.save(f, value)
            args += ["--input", f"{name}={f}"]
        r = subprocess.run(args, capture_output=True, text=True)
        return r, out

    def load(out, name):
        path = os.path.join(out, name + ".npy")
        return np.load(path) if os.path.exists(path) else None

    # Scripted loop and split from torch.
    script = os.path.join(work, "torch_export.py")
    with open(script, "w") as f:
        f.write(TORCH_EXPORT)
    for kind in ("static", "dynamic", "if", "if_dynamic", "appends", "list", "split_list", "growing", "shrinking"):
        path = os.path.join(work, f"scripted_{kind}.onnx")
        r = subprocess.run(["/usr/bin/python3", script, path, kind], capture_output=True, text=True)
        if r.returncode:
            raise RuntimeError(f"exporting the scripted model with Debian's python3-torch failed: {r.stderr[-2000:]}")
    path = os.path.join(work, "scripted_static.onnx")
    ops = {n.op_type for n in onnx.load(path).graph.node}
    check({"Loop", "SequenceEmpty", "SplitToSequence", "ConcatFromSequence"} <= ops, f"the torch export uses sequences ({sorted(ops)})")
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    x = np.random.default_rng(1).standard_normal((4, 8)).astype(np.float32)
    want = sess.run(None, {"x": x})
    for precision, bound in (("fp32", None), ("fp16", 1e-2), ("bf16", 4e-2)):
        plan = os.path.join(work, f"scripted_{precision}.plan")
        r = compile_plan(path, plan, "--precision", precision)
        if r.returncode:
            check(False, f"scripted {precision}: compile: {r.stderr.strip()[-500:]}")
            continue
        check("1 loop unrolled" in r.stdout, f"scripted {precision}: the compile summary says the loop was unrolled")
        rr, out = run_plan(plan, {"x": x}, f"scripted_{precision}")
        for name, w in zip(("y", "z"), want):
            got = load(out, name)
            if rr.returncode or got is None or got.shape != w.shape:
                check(False, f"scripted {precision}: output {name}: {rr.stderr.strip()[-300:]} shape {None if got is None else got.shape}")
                continue
            got = got.astype(np.float64)
            if bound is None:
                check(np.allclose(got, w, rtol=1e-5, atol=1e-5), f"scripted fp32: {name} within 1e-5 of onnxruntime (max err {np.abs(got - w).max():.2e})")
            else:
                rel = np.linalg.norm(got - w) / np.linalg.norm(w)
                check(rel <= bound, f"scripted {precision}: {name} relative L2 {rel:.2e} <= {bound}")
    dyn = os.path.join(work, "scripted_dynamic.onnx")
    r = compile_plan(dyn, os.path.join(work, "scripted_dyn.plan"))
    check(r.returncode == 0 and "1 loop kept" in r.stdout,
          f"a loop over a run-time count appending to a list is kept, the appends a scan output: {r.stdout.strip()[-300:]} {r.stderr.strip()[-300:]}")
    for rows in (6, 3, 1):
        xr = np.random.default_rng(rows).standard_normal((rows, 8)).astype(np.float32)
        wr = ort.InferenceSession(dyn, providers=["CPUExecutionProvider"]).run(None, {"x": xr})
        rr, out = run_plan(os.path.join(work, "scripted_dyn.plan"), {"x": xr}, f"scripted_dyn_{rows}")
        got = [load(out, name) for name in ("y", "z")]
        check(rr.returncode == 0 and all(g is not None and g.shape == w.shape and np.allclose(g, w, rtol=1e-5, atol=1e-5) for g, w in zip(got, wr)),
              f"the kept loop at {rows} rows matches onnxruntime {rr.stderr.strip()[-300:]}")
    path = os.path.join(work, "scripted_appends.onnx")
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    for precision, bound in (("fp32", None), ("fp16", 1e-2)):
        plan = os.path.join(work, f"appends_{precision}.plan")
        r = compile_plan(path, plan, "--precision", precision)
        if r.returncode or "1 loop kept" not in r.stdout:
            check(False, f"appends {precision}: compile keeps the loop: {r.stdout.strip()[-300:]} {r.stderr.strip()[-500:]}")
            continue
        for rows in (5, 1):
            xr = np.random.default_rng(10 + rows).standard_normal((rows, 8)).astype(np.float32)
            want = sess.run(None, {"x": xr})
            rr, out = run_plan(plan, {"x": xr}, f"appends_{precision}_{rows}")
            for name, w in zip(("stacked", "joined", "last", "count"), want):
                got = load(out, name)
                if rr.returncode or got is None or got.shape != w.shape:
                    check(False, f"appends {precision} {rows} rows: {name}: {rr.stderr.strip()[-300:]} shape {None if got is None else got.shape} vs {w.shape}")
                    continue
                if name == "count" or bound is None:
                    check(np.allclose(got, w, rtol=1e-5, atol=1e-5), f"appends {precision} {rows} rows: {name} within 1e-5 of onnxruntime")
                else:
                    rel = np.linalg.norm(got.astype(np.float64) - w) / np.linalg.norm(w)
                    check(rel <= bound, f"appends {precision} {rows} rows: {name} relative L2 {rel:.2e} <= {bound}")
    # The list as the model's output: the plan outputs the stack, the session gives the elements.
    path = os.path.join(work, "scripted_list.onnx")
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    plan = os.path.join(work, "list.plan")
    r = compile_plan(path, plan)
    check(r.returncode == 0 and "1 loop kept" in r.stdout, f"list output: compile keeps the loop {r.stdout.strip()[-300:]} {r.stderr.strip()[-500:]}")
    for rows in (4, 1):
        xr = np.random.default_rng(20 + rows).standard_normal((rows, 8)).astype(np.float32)
        want = sess.run(None, {"x": xr})[0]
        rr, out = run_plan(plan, {"x": xr}, f"list_{rows}")
        got = [load(out, f"outs[{i}]") for i in range(len(want) + 1)]
        ok = rr.returncode == 0 and got[-1] is None and f"outs: a sequence of {len(want)} element(s)" in rr.stdout
        ok = ok and all(g is not None and g.shape == w.shape and np.allclose(g, w, rtol=1e-5, atol=1e-5) for g, w in zip(got, want))
        check(ok, f"list output at {rows} rows: {len(want)} elements, each within 1e-5 of onnxruntime {rr.stdout.strip()[-200:]} {rr.stderr.strip()[-300:]}")
    # torch.split over a dynamic axis returned as the list: one padded stack and each chunk's dims.
    path = os.path.join(work, "scripted_split_list.onnx")
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    for precision in ("fp32", "bf16"):
        plan = os.path.join(work, f"split_list_{precision}.plan")
        r = compile_plan(path, plan, "--precision", precision)
        check(r.returncode == 0, f"split list {precision}: compiles {r.stderr.strip()[-500:]}")
        for rows in (5, 4, 1):
            xr = np.random.default_rng(30 + rows).standard_normal((rows, 3)).astype(np.float32)
            if precision == "bf16":  # values BF16 holds exactly, so x * 2 is exact in either precision
                xr = (np.round(xr * 8) / 8).astype(np.float32)
            want = sess.run(None, {"x": xr})[0]
            rr, out = run_plan(plan, {"x": xr}, f"split_list_{precision}_{rows}")
            got = [load(out, f"parts[{i}]") for i in range(len(want) + 1)]
            ok = rr.returncode == 0 and got[-1] is None and f"parts: a sequence of {len(want)} element(s)" in rr.stdout
            ok = ok and all(g is not None and g.shape == w.shape and np.array_equal(g.astype(np.float32), w) for g, w in zip(got, want))
            check(ok, f"split list {precision} at {rows} rows: {len(want)} chunks of shapes {[w.shape for w in want]}, equal to onnxruntime "
                      f"{rr.stdout.strip()[-200:]} {rr.stderr.strip()[-300:]}")
    # Elements whose shape follows the iteration number: one plan, run at several sizes.
    path = os.path.join(work, "scripted_growing.onnx")
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    for precision in ("fp32", "bf16"):
        plan = os.path.join(work, f"growing_{precision}.plan")
        r = compile_plan(path, plan, "--precision", precision)
        check(r.returncode == 0 and "1 loop kept" in r.stdout, f"growing {precision}: compiles, the loop kept {r.stderr.strip()[-500:]}")
        for rows in (4, 1, 6):
            xr = np.random.default_rng(40 + rows).standard_normal((rows, rows)).astype(np.float32)
            want = sess.run(None, {"x": xr})[0]
            rr, out = run_plan(plan, {"x": xr}, f"growing_{precision}_{rows}")
            got = [load(out, f"outs[{i}]") for i in range(len(want) + 1)]
            ok = rr.returncode == 0 and got[-1] is None and f"outs: a sequence of {len(want)} element(s)" in rr.stdout
            ok = ok and all(g is not None and g.shape == w.shape for g, w in zip(got, want))
            # FP32: tanh within 1e-6 of onnxruntime; BF16: within BF16's rounding of |2 tanh| <= 2
            # (2^-8 relative, 2^-7 absolute), whether or not the plan runs this small chain in 16 bits.
            tol = 1e-6 if precision == "fp32" else 2.0 ** -7
            err = max((float(np.abs(g.astype(np.float64) - w).max()) for g, w in zip(got, want) if g is not None and g.shape == w.shape), default=-1.0)
            check(ok and err <= tol, f"growing {precision} at {rows} rows: {len(want)} elements of shapes 1x1..{rows}x{rows}, "
                                     f"max error {err:.2e} <= {tol:.1e} {rr.stdout.strip()[-200:]} {rr.stderr.strip()[-300:]}")
    r = compile_plan(os.path.join(work, "scripted_shrinking.onnx"), os.path.join(work, "shrinking.plan"))
    check(r.returncode != 0 and "may shrink as it grows" in r.stderr,
          f"a loop whose body's shapes shrink with the iteration number is refused, saying why: {r.stderr.strip()[-300:]}")
    r = compile_plan(os.path.join(work, "scripted_if_dynamic.onnx"), os.path.join(work, "scripted_if_dyn.plan"))
    check(r.returncode != 0 and "trip count" in r.stderr,
          f"a loop over a run-time count whose body reads the list is refused: {r.stderr.strip()[-300:]}")
    # With the trip count given: 6 rows unroll the loop; 1,500 (past the unrolling limit of 1,024)
    # keep it as over a run-time count.
    for rows, seed, kept in ((1500, 5, True), (6, 2, False)):
        plan = os.path.join(work, f"scripted_dyn{rows}.plan")
        r = compile_plan(dyn, plan, "--shape", f"x={rows}x8")
        xr = np.random.default_rng(seed).standard_normal((rows, 8)).astype(np.float32)
        wr = ort.InferenceSession(dyn, providers=["CPUExecutionProvider"]).run(None, {"x": xr})
        rr, out = run_plan(plan, {"x": xr}, f"scripted_dyn{rows}")
        got = load(out, "y")
        check(r.returncode == 0 and ("1 loop kept" in r.stdout) == kept and rr.returncode == 0 and got is not None and
              got.shape == wr[0].shape and np.allclose(got, wr[0], rtol=1e-5, atol=1e-5),
              f"the dynamic export with --shape x={rows}x8 ({'kept' if kept else 'unrolled'}) matches onnxruntime "
              f"{r.stderr.strip()[-300:]} {rr.stderr.strip()[-300:]}")

    # A loop whose body has an If reading the list (nested subgraphs copied per iteration; each
    # copy's condition, i > 0, is known once unrolled, so the branch taken is inlined).
    path, plan = os.path.join(work, "scripted_if.onnx"), os.path.join(work, "scripted_if.plan")
    ops = {n.op_type for n in onnx.load(path).graph.node[-2].attribute[0].g.node} if onnx.load(path).graph.node[-2].op_type == "Loop" else set()
    check("If" in ops and "SequenceInsert" in ops, f"the scripted-if export has an If in its Loop body ({sorted(ops)})")
    r = compile_plan(path, plan)
    x5 = np.random.default_rng(4).standard_normal((5, 8)).astype(np.float32)
    w5 = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"x": x5})[0]
    rr, out = run_plan(plan, {"x": x5}, "scripted_if")
    got = load(out, "y")
    check(r.returncode == 0 and rr.returncode == 0 and got is not None and got.shape == w5.shape and np.allclose(got, w5, rtol=1e-5, atol=1e-5),
          f"a loop with `if i > 0: h = h + outs[i - 1]` matches onnxruntime {r.stderr.strip()[-300:]} {rr.stderr.strip()[-300:]}")

    # Positions given at run time over a sequence input.
    rng = np.random.default_rng(3)
    for same, op, valid, invalid in ((same, *c) for same in (True, False)
                                     for c in (("SequenceInsert", range(-3, 4), (4, -4)), ("SequenceErase", range(-3, 3), (3, -4)),
                                               ("SequenceAt", range(-3, 3), (3, -4)))):
        widths = (3, 3, 3, 3) if same else (3, 1, 4, 2)
        seq = [rng.standard_normal((2, w)).astype(np.float32) for w in widths[:3]]
        t = rng.standard_normal((2, widths[3])).astype(np.float32)
        name = op + ("" if same else "_shapes")
        path, plan = os.path.join(work, name + ".onnx"), os.path.join(work, name + ".plan")
        positions_model(path, op, same)
        r = compile_plan(path, plan, "--shape", "seq=[" + ",".join(f"2x{w}" for w in widths[:3]) + "]")
        op = name
        if r.returncode:
            check(False, f"{op}: compile: {r.stderr.strip()[-500:]}")
            continue
        sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        feeds = {f"seq[{k}]": v for k, v in enumerate(seq)}
        if op.startswith("SequenceInsert"):
            feeds["t"] = t
        ok = True
        for p in valid:
            feeds["pos"] = np.array(p, np.int64)
            ort_feeds = {"seq": seq, "pos": feeds["pos"], **({"t": t} if op.startswith("SequenceInsert") else {})}
            want = sess.run(None, ort_feeds)
            rr, out = run_plan(plan, feeds, f"{op}_{p}")
            if op.startswith("SequenceAt"):
                got = [load(out, "at"), load(out, "length")]
                ok &= rr.returncode == 0 and np.array_equal(got[0], want[0]) and int(got[1]) == int(want[1])
            else:
                got = [load(out, f"seq_out[{k}]") for k in range(len(want[0]))]
                extra = load(out, f"seq_out[{len(want[0])}]")
                ok &= rr.returncode == 0 and extra is None and all(g is not None and np.array_equal(g, w) for g, w in zip(got, want[0]))
            if not ok:
                check(False, f"{op} at position {p}: {rr.stderr.strip()[-300:]}")
                break
        check(ok, f"{op} at every valid run-time position {list(valid)} equals onnxruntime")
        for p in invalid:
            feeds["pos"] = np.array(p, np.int64)
            rr, _ = run_plan(plan, feeds, f"{op}_bad_{p}")
            check(rr.returncode != 0 and "out of range" in rr.stderr.lower() + rr.stdout.lower(),
                  f"{op} at position {p} (outside the sequence) is refused at run time: {rr.stderr.strip()[-200:]}")
    r = compile_plan(os.path.join(work, "SequenceAt.onnx"), os.path.join(work, "noshape.plan"))
    check(r.returncode != 0 and "--shape seq=[" in r.stderr, f"a sequence input without --shape is refused with how to give it: {r.stderr.strip()[-300:]}")
    # `precis bench` fills integer inputs with 0..9; over a one-element sequence its first position
    # (4, from its fixed seed) is out of range, so it says so and runs with position 0.
    r = compile_plan(os.path.join(work, "SequenceAt.onnx"), os.path.join(work, "one.plan"), "--shape", "seq=[2x3]")
    rb = subprocess.run([precis, "bench", os.path.join(work, "one.plan"), "--iterations", "2"], capture_output=True, text=True)
    check(r.returncode == 0 and rb.returncode == 0 and "median" in rb.stdout and "integer inputs set to 0" in rb.stderr,
          f"bench over a run-time position falls back to position 0: {rb.stderr.strip()[-300:]}")

    # Split lengths given at run time.
    path, plan = os.path.join(work, "split.onnx"), os.path.join(work, "split.plan")
    split_model(path)
    r = compile_plan(path, plan)
    check(r.returncode == 0, f"split: compiles {r.stderr.strip()[-300:]}")
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    xs = rng.standard_normal((2, 9)).astype(np.float32)
    for split in ([2, 3, 4], [5, 0, 4]):
        sp = np.array(split, np.int64)
        want = sess.run(None, {"x": xs, "split": sp})[0]
        rr, out = run_plan(plan, {"x": xs, "split": sp}, f"split_{split[0]}")
        got = load(out, "y2")
        check(rr.returncode == 0 and got is not None and np.array_equal(got, want), f"split {split} at run time equals onnxruntime {rr.stderr.strip()[-300:]}")

    # Branches that give sequences.
    path, plan = os.path.join(work, "branches.onnx"), os.path.join(work, "branches.plan")
    branches_model(path)
    r = compile_plan(path, plan)
    check(r.returncode == 0, f"branches: compiles {r.stderr.strip()[-300:]}")
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    xb = rng.standard_normal((3, 4)).astype(np.float32)
    for c in (True, False):
        want = sess.run(None, {"cond": np.array(c), "x": xb})[0]
        rr, out = run_plan(plan, {"cond": np.array(c), "x": xb}, f"branches_{c}")
        got = load(out, "y")
        check(rr.returncode == 0 and got is not None and np.array_equal(got, want), f"If giving sequences, condition {c}, equals onnxruntime {rr.stderr.strip()[-300:]}")

    # Optional input, present and absent.
    path = os.path.join(work, "optional.onnx")
    optional_model(path)
    xo, vo = rng.standard_normal(4).astype(np.float32), rng.standard_normal(4).astype(np.float32)
    r = compile_plan(path, os.path.join(work, "optional_present.plan"))
    rr, out = run_plan(os.path.join(work, "optional_present.plan"), {"opt": vo, "x": xo}, "optional_present")
    got = load(out, "y")
    check(r.returncode == 0 and rr.returncode == 0 and got is not None and np.array_equal(got, vo + xo), f"optional present: y = opt + x {r.stderr.strip()[-300:]}")
    r = compile_plan(path, os.path.join(work, "optional_absent.plan"), "--shape", "opt=none")
    rr, out = run_plan(os.path.join(work, "optional_absent.plan"), {"x": xo}, "optional_absent")
    got = load(out, "y")
    check(r.returncode == 0 and rr.returncode == 0 and got is not None and np.array_equal(got, xo), f"optional absent: y = x {r.stderr.strip()[-300:]}")

    # Optionals whose presence the condition decides when the plan runs.
    path, plan = os.path.join(work, "optional_output.onnx"), os.path.join(work, "optional_output.plan")
    optional_output_model(path)
    x3 = rng.standard_normal(3).astype(np.float32)
    r = compile_plan(path, plan)
    check(r.returncode == 0, f"optional outputs decided at run time: compiles {r.stderr.strip()[-300:]}")
    for c in (True, False):
        rr, out = run_plan(plan, {"cond": np.array(c), "x": x3}, f"optional_output_{c}")
        got = {name: load(out, name) for name in ("o[0]", "o[1]", "t", "has")}
        if c:  # then: o absent, t = x
            ok = got["o[0]"] is None and got["o[1]"] is None and np.array_equal(got["t"], x3) and "o: absent" in rr.stdout
        else:  # else: o = [x + x, -x], t absent
            ok = got["t"] is None and np.array_equal(got["o[0]"], x3 + x3) and np.array_equal(got["o[1]"], -x3) and "t: absent" in rr.stdout
        ok = ok and rr.returncode == 0 and got["has"] is not None and bool(got["has"]) == (not c)
        check(ok, f"optional outputs, condition {c}: present where the branch gives them, with their values {rr.stdout.strip()[-300:]} {rr.stderr.strip()[-300:]}")

    if failures:
        print(f"\n{len(failures)} failures")
        sys.exit(1)
    print("\nall sequence checks passed")


if __name__ == "__main__":
    main()
