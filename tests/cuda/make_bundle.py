"""Prepares GPU test bundles on a development machine (no GPU needed) for tests/cuda/gpu_check.sh.

usage: make_bundle.py BUILD_DIR OUT_DIR [--ops] [--models NAME,...|all] [--precisions fp32,fp16,bf16]
                      [--codegen] [--dynamic] [--cache DIR] [--max-part-mb 60]

Writes under OUT_DIR:
  support/        FlatBuffers headers and the generated plan header: the runtime-only build on a
                  GPU machine needs nothing else but the CUDA toolkit and cuDNN.
  ops-PREC/       --ops: every ONNX backend node test (onnx wheel) that passes on the CPU, compiled for
                  CUDA in PREC, with its inputs and the CPU backend's outputs (conformance_runner --export).
  model-NAME-PREC/ each model test (scripts/make_model_tests.py's cache) compiled for CUDA in PREC, its
                  inputs, and the CPU backend's outputs (precis run).
  model-NAME-PREC-codegen/ --codegen: the same compiled with `--codegen` (fused elementwise steps as
                  generated PTX/cubin kernels); the CPU outputs come from the fused program's
                  reference interpreter, so the GPU run checks the generated kernels against it.
  model-NAME-PREC-dynamic/ --dynamic: models whose inputs have symbolic dims, compiled for CUDA
                  without --shape (a dynamic plan), with two cases of different shapes (the cached
                  inputs and their first batch entry) and the CPU outputs of each: one plan, two
                  bindings, each with its own kernels and CUDA graph.
  parts.txt       the folders grouped into parts of at most --max-part-mb MiB (a GPU machine takes an
                  upload of 64 MiB at a time); folders larger than that alone are listed as not
                  transferable.
Each folder has a cases.txt that cuda_plan_check reads (format: tests/cuda/plan_check.cc).
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "models"))
from run_model_tests import MIXED_OPTIONS  # noqa: E402  (the same compile options as the model tests)


def dir_bytes(path):
    return sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(path) for f in fs)


def safe(name):
    return "".join("_" if c in "/\\: " else c for c in name) or "output"


def export_ops(build, out, precisions):
    import onnx
    wheel = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "node")
    for p in precisions:
        dest = os.path.join(out, f"ops-{p}")
        shutil.rmtree(dest, ignore_errors=True)
        print(f"ops {p}: exporting the passing node tests to {dest}", flush=True)
        r = subprocess.run([os.path.join(build, "bin", "conformance_runner"), "--precision", p, "--export", dest,
                            f"wheel-node={wheel}"], capture_output=True, text=True)
        summary = [l for l in r.stdout.splitlines() if l.startswith("wheel-node") or "passed" in l]
        print("  " + "\n  ".join(summary), flush=True)
        if not os.path.exists(os.path.join(dest, "cases.txt")):
            sys.exit(f"conformance_runner wrote no bundle for {p}: {r.stderr[-2000:]}")
        split_by_family(dest)


# Kernel family of each CUDA kernel name, from the file that registers it (runtime/cuda/kernels/):
# elementwise*, tensor*, reduce*, nn*, training. The GPU check runs each family's cases in a
# process of its own, so that a fault in one family does not poison the others.
def kernel_families():
    kernels = os.path.join(HERE, "..", "..", "runtime", "cuda", "kernels")
    families = {}
    for f in sorted(os.listdir(kernels)):
        if not f.endswith((".cu", ".cc")):
            continue
        family = f.split(".")[0].split("_")[0]
        for name in re.findall(r'Register\("([A-Za-z0-9]+)"', open(os.path.join(kernels, f)).read()):
            families.setdefault(name, family)
    return families


def split_by_family(dest):
    """Writes cases-FAMILY.txt beside cases.txt: a case goes to the family of its first operator
    that has a registered kernel (ops without one of their own, e.g. expanded functions, to 'other')."""
    families = kernel_families()
    groups = {}
    for line in open(os.path.join(dest, "cases.txt")):
        if not line.strip() or line.startswith("#"):
            continue
        ops = line.split("\t")[3].split(",")
        family = next((families[o] for o in ops if o in families), "other")
        groups.setdefault(family, []).append(line)
    for family, lines in sorted(groups.items()):
        with open(os.path.join(dest, f"cases-{family}.txt"), "w") as f:
            f.writelines(lines)
    print("  families: " + ", ".join(f"{k} {len(v)}" for k, v in sorted(groups.items())), flush=True)


def compile_cuda(precis, d, name, precision, dest, args):
    """Compiles the cached model for CUDA into dest/model.plan; an error text, or None."""
    extra = MIXED_OPTIONS.get((name, precision), ([],))[0] if precision != "fp32" else []
    r = subprocess.run([precis, "compile", os.path.join(d, "model.onnx"), "-o", os.path.join(dest, "model.plan"), "--precision", precision,
                        "--device", "cuda", "--quiet"] + args + extra, capture_output=True, text=True)
    return f"compile failed: {r.stderr.strip()[-500:]}" if r.returncode else None


def cpu_outputs(precis, dest, run_inputs, meta, prefix):
    """Runs dest/model.plan on the CPU backend and stores its outputs as PREFIXoutK.bin; returns the
    cases.txt OUTPUTS pairs, or an error text."""
    with tempfile.TemporaryDirectory() as tmp:
        r = subprocess.run([precis, "run", os.path.join(dest, "model.plan"), "--output-dir", tmp] + run_inputs, capture_output=True, text=True)
        if r.returncode != 0:
            return f"CPU run failed: {r.stderr.strip()[-500:]}"
        outs = []
        for k, oname in enumerate(meta["outputs"]):
            np.ascontiguousarray(np.load(os.path.join(tmp, safe(oname) + ".npy"))).tofile(os.path.join(dest, f"{prefix}out{k}.bin"))
            outs.append(f"{oname}={prefix}out{k}.bin")
        return outs


def export_model(precis, cache, name, precision, out, codegen=False):
    d = os.path.join(cache, name)
    meta = json.load(open(os.path.join(d, "meta.json")))
    dest = os.path.join(out, f"model-{name}-{precision}" + ("-codegen" if codegen else ""))
    shutil.rmtree(dest, ignore_errors=True)
    os.makedirs(dest)
    shapes, run_inputs, ins = [], [], []
    for k, inp in enumerate(meta["inputs"]):
        shapes += ["--shape", inp["name"] + "=" + "x".join(map(str, inp["shape"]))]
        src = os.path.join(d, f"input_{k}.npy")
        run_inputs += ["--input", f"{inp['name']}={src}"]
        np.ascontiguousarray(np.load(src)).tofile(os.path.join(dest, f"in{k}.bin"))
        ins.append(f"{inp['name']}=in{k}.bin")
    why = compile_cuda(precis, d, name, precision, dest, shapes + (["--codegen"] if codegen else []))
    outs = cpu_outputs(precis, dest, run_inputs, meta, "") if why is None else why
    if isinstance(outs, str):
        shutil.rmtree(dest)
        return outs
    with open(os.path.join(dest, "cases.txt"), "w") as f:
        f.write("\t".join(["model", name, precision, "-", "model.plan", ",".join(ins), ",".join(outs)]) + "\n")
    return None


def export_dynamic(precis, cache, name, precision, out):
    d = os.path.join(cache, name)
    meta = json.load(open(os.path.join(d, "meta.json")))
    model = onnx.load(os.path.join(d, "model.onnx"), load_external_data=False)
    if not any(dim.dim_param for inp in model.graph.input for dim in inp.type.tensor_type.shape.dim):
        return "static input dims: no dynamic plan"
    dest = os.path.join(out, f"model-{name}-{precision}-dynamic")
    shutil.rmtree(dest, ignore_errors=True)
    os.makedirs(dest)
    why = compile_cuda(precis, d, name, precision, dest, [])
    lines = []
    for case, take in (("full", None), ("batch1", 1)):
        if why is not None:
            break
        ins, run_inputs = [], []
        with tempfile.TemporaryDirectory() as tmp:
            for k, inp in enumerate(meta["inputs"]):
                arr = np.load(os.path.join(d, f"input_{k}.npy"))
                arr = np.ascontiguousarray(arr if take is None else arr[:take])
                arr.tofile(os.path.join(dest, f"{case}_in{k}.bin"))
                np.save(os.path.join(tmp, f"in{k}.npy"), arr)
                run_inputs += ["--input", f"{inp['name']}={os.path.join(tmp, f'in{k}.npy')}"]
                ins.append(f"{inp['name']}={case}_in{k}.bin:" + "x".join(str(n) for n in arr.shape))
            outs = cpu_outputs(precis, dest, run_inputs, meta, f"{case}_")
        if isinstance(outs, str):
            why = f"{case}: {outs}"
            break
        lines.append("\t".join(["model", f"{name}-{case}", precision, "-", "model.plan", ",".join(ins), ",".join(outs)]))
    if why is not None:
        shutil.rmtree(dest)
        return why
    with open(os.path.join(dest, "cases.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    return None


def main():
    args = sys.argv[1:]
    if len(args) < 2:
        sys.exit(__doc__)
    build, out = os.path.abspath(args[0]), os.path.abspath(args[1])
    opts = {"--models": "", "--precisions": "fp32,fp16,bf16", "--cache": os.path.join(HERE, "..", "..", ".cache", "model-tests"),
            "--max-part-mb": "60"}
    ops = codegen = dynamic = False
    i = 2
    while i < len(args):
        if args[i] == "--ops":
            ops = True
            i += 1
        elif args[i] == "--codegen":
            codegen = True
            i += 1
        elif args[i] == "--dynamic":
            dynamic = True
            i += 1
        elif args[i] in opts and i + 1 < len(args):
            opts[args[i]] = args[i + 1]
            i += 2
        else:
            sys.exit(f"unknown option {args[i]}\n" + __doc__)
    precisions = opts["--precisions"].split(",")
    os.makedirs(out, exist_ok=True)
    precis = os.path.join(build, "bin", "precis")

    # The runtime-only build's inputs: FlatBuffers headers and the generated plan header.
    support = os.path.join(out, "support")
    shutil.rmtree(support, ignore_errors=True)
    os.makedirs(support)
    shutil.copytree("/usr/include/flatbuffers", os.path.join(support, "flatbuffers"))
    shutil.copy(os.path.join(build, "generated", "runtime", "plan", "plan_generated.h"), support)

    # cuda_backend_test's end-to-end session: the bundled example compiled for CUDA in FP32.
    example = os.path.join(HERE, "..", "..", "examples", "tiny_convnet.onnx")
    subprocess.run([precis, "compile", example, "-o", os.path.join(support, "backend_test.plan"), "--shape", "image=1x3x32x32",
                    "--device", "cuda", "--quiet"], check=True)

    if ops:
        export_ops(build, out, precisions)
    cache = os.path.abspath(opts["--cache"])
    names = []
    if opts["--models"] == "all":
        names = sorted(n for n in os.listdir(cache) if os.path.exists(os.path.join(cache, n, "meta.json")))
    elif opts["--models"]:
        names = opts["--models"].split(",")
    for name in names:
        for p in precisions:
            why = export_model(precis, cache, name, p, out)
            print(f"model {name} {p}: {'ok' if why is None else why}", flush=True)
            if codegen:
                why = export_model(precis, cache, name, p, out, codegen=True)
                print(f"model {name} {p} codegen: {'ok' if why is None else why}", flush=True)
            if dynamic:
                why = export_dynamic(precis, cache, name, p, out)
                print(f"model {name} {p} dynamic: {'ok' if why is None else why}", flush=True)

    # Parts of at most --max-part-mb MiB each, support/ in every part's first folder list.
    limit = float(opts["--max-part-mb"]) * 2**20
    folders = sorted((dir_bytes(os.path.join(out, f)), f) for f in os.listdir(out)
                     if os.path.isdir(os.path.join(out, f)) and f != "support")
    base = dir_bytes(support)
    parts, too_big = [], []
    for size, f in folders:
        if size + base > limit:
            too_big.append((f, size))
            continue
        for part in parts:
            if part[0] + size <= limit:
                part[0] += size
                part[1].append(f)
                break
        else:
            parts.append([base + size, [f]])
    with open(os.path.join(out, "parts.txt"), "w") as fp:
        for k, (size, fs) in enumerate(parts, 1):
            fp.write(f"part{k}\t{size / 2**20:.1f}MiB\tsupport {' '.join(fs)}\n")
        for f, size in too_big:
            fp.write(f"not-transferable\t{size / 2**20:.1f}MiB\t{f}\n")
    print(open(os.path.join(out, "parts.txt")).read(), end="")


if __name__ == "__main__":
    main()
