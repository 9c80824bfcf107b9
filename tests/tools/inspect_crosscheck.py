"""Cross-checks `precis inspect --json` against the onnx Python library on real models.

The reference is computed here independently from the ModelProto: header fields, opsets, graph
inputs (initializer-backed inputs are constants, so they are not inputs), outputs, the operator
histogram over all graphs (Constant nodes become constants, so they count as parameters, not
nodes), parameter elements and bytes per dtype, and the subgraph count.

usage: inspect_crosscheck.py PRECIS MODEL.onnx [MODEL.onnx ...]
"""
import collections
import json
import subprocess
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper

DTYPE = {1: "f32", 2: "u8", 3: "i8", 4: "u16", 5: "i16", 6: "i32", 7: "i64", 8: "string",
         9: "bool", 10: "f16", 11: "f64", 12: "u32", 13: "u64", 16: "bf16"}


def tensor_stats(t):
    arr = numpy_helper.to_array(t)
    if t.data_type == 8:
        return arr.size, sum(len(s) if isinstance(s, bytes) else len(s.encode()) for s in arr.flat)
    size = {"bf16": 2, "f16": 2}.get(DTYPE[t.data_type])
    return arr.size, arr.size * (size or arr.itemsize)


def constant_tensor(node):
    a = node.attribute[0]
    if a.name == "value":
        return a.t
    if a.name == "value_float":
        return numpy_helper.from_array(np.array(a.f, dtype=np.float32))
    if a.name == "value_floats":
        return numpy_helper.from_array(np.array(list(a.floats), dtype=np.float32))
    if a.name == "value_int":
        return numpy_helper.from_array(np.array(a.i, dtype=np.int64))
    if a.name == "value_ints":
        return numpy_helper.from_array(np.array(list(a.ints), dtype=np.int64))
    raise ValueError("unexpected Constant form " + a.name)


def reference(model):
    ops = collections.Counter()
    params = collections.defaultdict(lambda: [0, 0, 0])
    subgraphs = 0

    def add(t):
        n, b = tensor_stats(t)
        p = params[DTYPE[t.data_type]]
        p[0] += n; p[1] += b; p[2] += 1

    def walk(g):
        nonlocal subgraphs
        for t in g.initializer:
            add(t)
        for n in g.node:
            if n.op_type == "Constant" and n.domain in ("", "ai.onnx") and len(n.attribute) == 1:
                add(constant_tensor(n))
                continue
            ops[(n.domain + "::" if n.domain not in ("", "ai.onnx") else "") + n.op_type] += 1
            for a in n.attribute:
                for sub in ([a.g] if a.type == onnx.AttributeProto.GRAPH else list(a.graphs)):
                    subgraphs += 1
                    walk(sub)

    walk(model.graph)
    inits = {t.name for t in model.graph.initializer}
    return {
        "ir_version": model.ir_version,
        "producer_name": model.producer_name,
        "opsets": {(o.domain or "ai.onnx"): o.version for o in model.opset_import},
        "inputs": [i.name for i in model.graph.input if i.name not in inits],
        "outputs": [o.name for o in model.graph.output],
        "operators": dict(ops),
        "parameters": {k: {"elements": v[0], "bytes": v[1], "tensors": v[2]} for k, v in params.items()},
        "subgraphs": subgraphs,
    }


def main():
    precis, models = sys.argv[1], sys.argv[2:]
    failures = 0
    for path in models:
        out = subprocess.run([precis, "inspect", "--json", path], capture_output=True, text=True)
        if out.returncode != 0:
            print(f"FAIL {path}: precis exited {out.returncode}: {out.stderr.strip()}")
            failures += 1
            continue
        got = json.loads(out.stdout)
        got_cmp = {
            "ir_version": got["ir_version"], "producer_name": got["producer_name"],
            "opsets": got["opsets"], "inputs": [i["name"] for i in got["inputs"]],
            "outputs": [o["name"] for o in got["outputs"]], "operators": got["operators"],
            "parameters": got["parameters"], "subgraphs": len(got["subgraphs"]),
        }
        want = reference(onnx.load(path))
        diffs = [k for k in want if want[k] != got_cmp[k]]
        if diffs:
            failures += 1
            for k in diffs:
                print(f"FAIL {path}: {k}: precis {got_cmp[k]} vs onnx {want[k]}")
        else:
            print(f"ok   {path}")
    print(f"{len(models) - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
