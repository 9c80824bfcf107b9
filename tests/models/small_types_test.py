"""The 8-, 4- and 2-bit storage types (runtime/base/small_types.h) against ml_dtypes, the library
ONNX's reference implementation converts with.

usage: small_types_test.py PRECIS WORKDIR

For each of float8 e4m3fn, e4m3fnuz, e5m2, e5m2fnuz, float4 e2m1, int4, uint4, int2 and uint2:
  - decoding: a tensor holding every code of the type (from a TensorProto file, packed as ONNX
    packs 4- and 2-bit types) cast to float32 must give ml_dtypes' value of each code;
  - encoding: float32 values cast to the type and back, with saturate 1 and 0 (float8), must give
    ml_dtypes' result (saturate: np.clip to the finite range first, as onnx.numpy_helper's
    saturate_cast; int4/int2: truncated and wrapped, as ONNX's conformance data has it): every midpoint between neighbouring values (ties to even), values just
    beside each midpoint, the largest value and beyond, subnormals, zeros, Inf, NaN and random
    values over 20 decades.
Values compare exactly (NaN equal to NaN).
"""
import os
import subprocess
import sys

import ml_dtypes
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from checks import Checks

TYPES = {
    "float8e4m3fn": (TensorProto.FLOAT8E4M3FN, ml_dtypes.float8_e4m3fn, True),
    "float8e4m3fnuz": (TensorProto.FLOAT8E4M3FNUZ, ml_dtypes.float8_e4m3fnuz, True),
    "float8e5m2": (TensorProto.FLOAT8E5M2, ml_dtypes.float8_e5m2, True),
    "float8e5m2fnuz": (TensorProto.FLOAT8E5M2FNUZ, ml_dtypes.float8_e5m2fnuz, True),
    "float4e2m1": (TensorProto.FLOAT4E2M1, ml_dtypes.float4_e2m1fn, False),
    "int4": (TensorProto.INT4, ml_dtypes.int4, False),
    "uint4": (TensorProto.UINT4, ml_dtypes.uint4, False),
    "int2": (TensorProto.INT2, ml_dtypes.int2, False),
    "uint2": (TensorProto.UINT2, ml_dtypes.uint2, False),
}


def codes(np_type):
    """Every code of the type, as an ml_dtypes array."""
    ints = {ml_dtypes.int4: (-8, 8), ml_dtypes.uint4: (0, 16), ml_dtypes.int2: (-2, 2), ml_dtypes.uint2: (0, 4)}
    if np_type in ints:
        return np.arange(*ints[np_type]).astype(np_type)
    count = 16 if np_type == ml_dtypes.float4_e2m1fn else 256
    return np.arange(count, dtype=np.uint8).view(np_type)


INTS = (ml_dtypes.int4, ml_dtypes.uint4, ml_dtypes.int2, ml_dtypes.uint2)


def encode_reference(x, np_type, saturate, is_float8):
    if np_type in INTS:
        # ml_dtypes' float -> int4 gives 0 out of range; ONNX's conformance data (Cast FLOAT to
        # INT4: -9 -> 7) wraps the integer, which is ml_dtypes' int64 -> int4. NaN and Inf (ONNX
        # leaves them undefined) give 0 in Precis.
        ok = np.isfinite(x) & (np.abs(x) < 9e18)
        ints = np.where(ok, np.trunc(np.where(ok, x, 0)), 0).astype(np.int64)
        return ints.astype(np_type).astype(np.float32)
    if is_float8 and saturate:
        info = ml_dtypes.finfo(np_type)
        x = np.clip(x, float(info.min), float(info.max))
    return x.astype(np_type).astype(np.float32)


def probe_values(values):
    finite = np.unique(values[np.isfinite(values)])
    mids = (finite[:-1] + finite[1:]) / 2
    rng = np.random.default_rng(5)
    big = float(np.max(np.abs(finite)))
    extra = [0.0, -0.0, np.inf, -np.inf, np.nan, big, -big, big * 1.01, big * 1.1, big * 2, 1e30, -1e30, 1e-30, -1e-30]
    rand = rng.standard_normal(2000) * 10.0 ** rng.uniform(-10, 10, 2000)
    probe = np.concatenate([finite, mids, np.nextafter(mids.astype(np.float32), np.float32(np.inf)),
                            np.nextafter(mids.astype(np.float32), np.float32(-np.inf)), extra, rand])
    return probe.astype(np.float32)


def compile_and_run(precis, model, x_file, stem):
    """Compiles `model` to STEM.plan and runs it on input x (a .pb or .npy file); returns output y
    as an array, or (None, the error)."""
    path, plan = stem + ".onnx", stem + ".plan"
    onnx.save(model, path)
    r = subprocess.run([precis, "compile", path, "-o", plan, "--quiet"], capture_output=True, text=True)
    r = r if r.returncode else subprocess.run([precis, "run", plan, "--input", f"x={x_file}", "--output-dir", stem], capture_output=True, text=True)
    if r.returncode:
        return None, r.stderr.strip()[-300:]
    return np.load(os.path.join(stem, "y.npy")), ""


def main():
    precis, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    check = Checks()
    for name, (code, np_type, is_float8) in TYPES.items():
        # Decoding every code.
        all_codes = codes(np_type)
        want = all_codes.astype(np.float32)
        model = helper.make_model(helper.make_graph([helper.make_node("Cast", ["x"], ["y"], to=TensorProto.FLOAT)], "decode",
                                                    [helper.make_tensor_value_info("x", code, [len(all_codes)])],
                                                    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [len(all_codes)])]),
                                  opset_imports=[helper.make_opsetid("", 23)])
        pb = os.path.join(work, f"{name}_decode.pb")
        with open(pb, "wb") as f:
            f.write(numpy_helper.from_array(all_codes, "x").SerializeToString())
        got, err = compile_and_run(precis, model, pb, os.path.join(work, f"{name}_decode"))
        if got is None:
            check(False, f"{name} decode: {err}")
            continue
        same = (got == want) | (np.isnan(got) & np.isnan(want))
        check(bool(same.all()), f"{name:<15} decode all {len(all_codes)} codes" + ("" if same.all() else f": first difference at code {int(np.argmin(same))}: {got[~same][:3]} vs {want[~same][:3]}"))
        # Encoding.
        x = probe_values(want.astype(np.float64))
        for saturate in ((1, 0) if is_float8 else (1,)):
            attrs = {"saturate": saturate} if is_float8 else {}
            nodes = [helper.make_node("Cast", ["x"], ["q"], to=code, **attrs), helper.make_node("Cast", ["q"], ["y"], to=TensorProto.FLOAT)]
            model = helper.make_model(helper.make_graph(nodes, "encode", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [len(x)])],
                                                        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [len(x)])]),
                                      opset_imports=[helper.make_opsetid("", 23)])
            xin = os.path.join(work, f"{name}_encode{saturate}_x.npy")
            np.save(xin, x)
            got, err = compile_and_run(precis, model, xin, os.path.join(work, f"{name}_encode{saturate}"))
            if got is None:
                check(False, f"{name} encode saturate={saturate}: {err}")
                continue
            with np.errstate(all="ignore"):
                ref = encode_reference(x, np_type, saturate, is_float8)
            same = (got == ref) | (np.isnan(got) & np.isnan(ref))
            bad = np.flatnonzero(~same)
            check(bool(same.all()), f"{name:<15} encode saturate={saturate}: {len(x)} values" +
                  ("" if same.all() else f", {len(bad)} differ, e.g. {x[bad[:3]]} -> {got[bad[:3]]}, ml_dtypes {ref[bad[:3]]}"))
    check.finish()


if __name__ == "__main__":
    main()
