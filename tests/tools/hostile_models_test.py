"""Models that declare more than any machine has must be refused before anything is allocated.

Each model is written with the onnx library and compiled with `precis compile` under a 4 GiB
address-space limit (so an attempt to allocate the declared size fails loudly instead of
succeeding lazily): the compile must exit 1 (not a signal), print one line starting with
"precis compile:" that names the problem, and write no plan.

usage: hostile_models_test.py PATH/TO/precis SCRATCH_DIR
"""
import os
import resource
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def model(nodes, inputs, initializers=()):
    graph = helper.make_graph(nodes, "g", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def x(shape):
    return helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)


def raw(name, dims, nbytes):
    t = TensorProto(name=name, data_type=TensorProto.FLOAT, dims=dims)
    t.raw_data = b"\0" * nbytes
    return t


def int64s(name, values):
    return numpy_helper.from_array(np.array(values, dtype=np.int64), name)


def cases(tmp):
    big = [1000000, 1000000]  # 10^12 elements
    ext = TensorProto(name="W", data_type=TensorProto.FLOAT, dims=[1000, 1000], data_location=TensorProto.EXTERNAL)
    for key, value in (("location", "w.bin"), ("offset", "0"), ("length", str(4 * 1000 * 1000))):
        ext.external_data.add(key=key, value=value)
    with open(os.path.join(tmp, "w.bin"), "wb") as f:
        f.write(b"\0" * 100)
    one = numpy_helper.from_array(np.ones((1, 1), np.float32), "one")
    scalar = lambda name, v: numpy_helper.from_array(np.array(v, np.float32), name)
    add = helper.make_node("Add", ["x", "c"], ["y"])
    return [
        ("initializer_1e12", model([helper.make_node("Add", ["x", "W"], ["y"])], [x([1])], [raw("W", big, 16)]),
         "the shape needs 4000000000000"),
        ("constant_1e12", model([helper.make_node("Constant", [], ["c"], value=raw("v", big, 16)), add], [x([1])]),
         "the shape needs 4000000000000"),
        ("external_past_file", model([helper.make_node("Add", ["x", "W"], ["y"])], [x([1000, 1000])], [ext]),
         "lies outside 'w.bin'"),
        ("input_1e12", model([helper.make_node("Relu", ["x"], ["y"])], [x(big)]), "bytes of activation memory"),
        ("input_overflow", model([helper.make_node("Relu", ["x"], ["y"])], [x([2**40, 2**40])]), "more than 2^50 elements"),
        ("constant_of_shape_1e12", model([helper.make_node("ConstantOfShape", ["s"], ["c"]), add], [x([1])], [int64s("s", big)]),
         "bytes of activation memory"),
        ("expand_1e12", model([helper.make_node("Expand", ["one", "s"], ["c"]), add], [x([1])], [int64s("s", big), one]),
         "bytes of activation memory"),
        ("tile_1e12", model([helper.make_node("Tile", ["one", "r"], ["c"]), add], [x([1])], [int64s("r", big), one]),
         "bytes of activation memory"),
        ("range_1e13", model([helper.make_node("Range", ["a", "b", "d"], ["c"]), add], [x([1])],
                             [scalar("a", 0), scalar("b", 1e13), scalar("d", 1)]), "beyond what Precis plans"),
        ("reshape_overflow", model([helper.make_node("Reshape", ["x", "s"], ["y"])], [x([4])], [int64s("s", [2**62, 4])]),
         "precis compile: "),
    ]


def limit_memory():
    resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def main():
    precis, tmp = sys.argv[1], sys.argv[2]
    os.makedirs(tmp, exist_ok=True)
    failures = 0
    for name, m, message in cases(tmp):
        path = os.path.join(tmp, name + ".onnx")
        plan = os.path.join(tmp, name + ".plan")
        with open(path, "wb") as f:
            f.write(m.SerializeToString())
        if os.path.exists(plan):
            os.remove(plan)
        r = subprocess.run([precis, "compile", path, "-o", plan, "--quiet"], capture_output=True, text=True,
                           timeout=120, preexec_fn=limit_memory)
        err = r.stderr.strip()
        problems = []
        if r.returncode != 1:
            problems.append(f"exit status {r.returncode}" + (" (killed by a signal)" if r.returncode < 0 else ""))
        if not err.startswith("precis compile: ") or "\n" in err:
            problems.append("stderr is not one 'precis compile:' line")
        if message not in err:
            problems.append(f"stderr lacks '{message}'")
        if os.path.exists(plan):
            problems.append("a plan was written")
        if problems:
            failures += 1
            print(f"FAIL {name}: {'; '.join(problems)}: {err[:400]}")
        else:
            print(f"ok   {name}: {err}")
    if failures:
        print(f"{failures} failure(s)")
        return 1
    print("all passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
