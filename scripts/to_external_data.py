#!/usr/bin/env python3
"""Rewrites an ONNX model so that its initializers live in one external data file beside it.

Run with the project venv (it has onnx==1.22.0):

    .venv/bin/python scripts/to_external_data.py IN.onnx OUT.onnx

writes OUT.onnx and OUT.onnx.data (the `location` recorded in the model is the bare file name,
so the pair can be moved together). Tensors smaller than --size-threshold bytes stay inline, as
onnx.save_model does. IN and OUT may be the same path.
"""

import argparse
import os
import sys


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("input", help="model with inline weights")
    parser.add_argument("output", help="model to write; its data goes to OUTPUT.data")
    parser.add_argument("--size-threshold", type=int, default=1024,
                        help="tensors below this many bytes stay inline (default 1024)")
    return parser.parse_args(argv)


def main(argv):
    args = parse_args(argv)
    try:
        import onnx
    except ImportError as e:
        sys.exit(f"to_external_data: {e}; run with the project venv (.venv/bin/python)")
    model = onnx.load_model(args.input, load_external_data=True)
    location = os.path.basename(args.output) + ".data"
    data_path = os.path.join(os.path.dirname(os.path.abspath(args.output)), location)
    # onnx appends to an existing data file instead of replacing it, so start from none.
    if os.path.exists(data_path):
        os.remove(data_path)
    onnx.save_model(model, args.output, save_as_external_data=True, all_tensors_to_one_file=True,
                    location=location, size_threshold=args.size_threshold)
    print(f"to_external_data: {args.input} -> {args.output} "
          f"({os.path.getsize(args.output) / 1e6:.2f} MB) + {location} "
          f"({os.path.getsize(data_path) / 1e6:.1f} MB)")


if __name__ == "__main__":
    main(sys.argv[1:])
