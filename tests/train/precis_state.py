"""Readers for the training tests: a precis state file (runtime/exec/state_file.h) and the state
file a checkpoint's manifest names (tools/precis/checkpoint.h)."""
import json
import struct

import numpy as np

# DataType codes (ONNX) -> numpy
DTYPES = {1: np.float32, 6: np.int32, 7: np.int64, 9: np.bool_, 10: np.float16, 11: np.float64}


def read_state_file(path):
    data = open(path, "rb").read()
    assert data[:8] == b"PRECISST", path
    version, count, _signature = struct.unpack_from("<IIQ", data, 8)
    assert version == 1, version
    pos = 24
    out = {}
    for _ in range(count):
        (name_len,) = struct.unpack_from("<I", data, pos)
        pos += 4
        name = data[pos:pos + name_len].decode()
        pos += name_len
        dtype, rank = struct.unpack_from("<BI", data, pos)
        pos += 5
        dims = struct.unpack_from("<%dq" % rank, data, pos)
        pos += 8 * rank
        (nbytes,) = struct.unpack_from("<Q", data, pos)
        pos += 8
        out[name] = np.frombuffer(data[pos:pos + nbytes], dtype=DTYPES[dtype]).reshape(dims)
        pos += nbytes
    assert pos + 8 == len(data), (pos, len(data))
    return out


def checkpoint_state_path(ckpt_dir):
    manifest = json.load(open(ckpt_dir + "/manifest.json"))
    return ckpt_dir + "/" + manifest["state_file"]


def read_checkpoint(ckpt_dir):
    return read_state_file(checkpoint_state_path(ckpt_dir))
