#!/usr/bin/python3
"""Exports a torchvision architecture to ONNX with random weights, for tests and benchmarks.

Run with the system interpreter, which has Debian's python3-torch and python3-torchvision
(`apt-get install python3-torchvision`); the project venv does not have torch:

    /usr/bin/python3 scripts/export_torchvision.py vit_b_16 /tmp/vit.onnx --batch 1 --opset 17

Weights are random (torch.manual_seed(0)), so nothing is downloaded and two exports of the same
model are identical. The graph has one input "input" (NCHW float32) and one output "output",
both with a dynamic batch axis named "batch".
"""

import argparse
import os
import sys
import time

# Each entry: torchvision constructor name -> (channels, height, width) of its input. Add new
# architectures here; anything torchvision.models builds with weights=None works.
MODELS = {
    "resnet50": (3, 224, 224),
    "mobilenet_v2": (3, 224, 224),
    "mobilenet_v3_small": (3, 224, 224),
    "efficientnet_b0": (3, 224, 224),
    "vit_b_16": (3, 224, 224),
    "shufflenet_v2_x1_0": (3, 224, 224),
    "googlenet": (3, 224, 224),
    "mnasnet0_5": (3, 224, 224),
    "densenet121": (3, 224, 224),
}


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", choices=sorted(MODELS), help="torchvision architecture")
    parser.add_argument("output", help="path of the .onnx file to write")
    parser.add_argument("--batch", type=int, default=1, help="batch size of the example input")
    parser.add_argument("--opset", type=int, default=17, help="ONNX opset version")
    parser.add_argument("--seed", type=int, default=0, help="seed for the random weights")
    parser.add_argument("--recalibrate-bn", type=int, default=0, metavar="N",
                        help="before export, re-estimate BatchNorm statistics over N batches of 8 random images in train mode "
                             "(so activations have a trained network's scale instead of random weights' drift)")
    return parser.parse_args(argv)


def build_model(name, seed):
    try:
        import torch
        import torchvision
    except ImportError as e:
        sys.exit(f"export_torchvision: {e}; run with /usr/bin/python3 after "
                 "`apt-get install python3-torchvision`")
    torch.manual_seed(seed)
    constructor = getattr(torchvision.models, name)
    kwargs = {"aux_logits": False, "init_weights": True} if name == "googlenet" else {}
    return torch, constructor(weights=None, **kwargs).eval()


def recalibrate_batchnorm(torch, model, batches, shape):
    """Running statistics as a trained network has them: the mean and variance of each
    BatchNorm's input over random images (cumulative average, momentum None), in train mode."""
    norms = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    for m in norms:
        m.reset_running_stats()
        m.momentum = None
    model.train()
    with torch.no_grad():
        for _ in range(batches):
            model(torch.randn(8, *shape))
    model.eval()
    return len(norms)


def main(argv):
    args = parse_args(argv)
    if args.batch < 1:
        sys.exit("export_torchvision: --batch must be >= 1")
    torch, model = build_model(args.model, args.seed)
    if args.recalibrate_bn > 0:
        n = recalibrate_batchnorm(torch, model, args.recalibrate_bn, MODELS[args.model])
        print(f"export_torchvision: {args.model}: {n} BatchNorm statistics re-estimated over {args.recalibrate_bn} batches")
    example = torch.randn(args.batch, *MODELS[args.model])
    out_dir = os.path.dirname(os.path.abspath(args.output))
    os.makedirs(out_dir, exist_ok=True)
    # Write to a temporary name first so that an interrupted export never leaves a truncated
    # model where a cache looks for a finished one.
    tmp_path = args.output + ".partial"
    start = time.monotonic()
    # No torch.no_grad() here: with grad disabled, eval-mode nn.MultiheadAttention takes its fused
    # fast path (aten::_native_multi_head_attention), which torch 1.13 cannot export.
    torch.onnx.export(
        model, example, tmp_path,
        opset_version=args.opset,
        input_names=["input"], output_names=["output"],
        dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}},
        do_constant_folding=True)
    os.replace(tmp_path, args.output)
    size_mb = os.path.getsize(args.output) / 1e6
    print(f"export_torchvision: {args.model} opset {args.opset} -> {args.output} "
          f"({size_mb:.1f} MB, {time.monotonic() - start:.1f} s)")


if __name__ == "__main__":
    main(sys.argv[1:])
