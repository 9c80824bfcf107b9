#!/usr/bin/env python3
"""Copies CUDA sources for the fiber emulator (fiber_cuda.h), rewriting what a host compiler cannot
take: launches `k<<<grid, block, smem, stream>>>(args)` become `emu::Launch(k, grid, block, smem,
stream)(args)`, and the reduce family's dynamic shared memory declaration becomes a pointer to
the emulated block's shared memory. The originals are not touched.
Usage: fiber_rewrite.py ROOT OUT FILE...   (FILE relative to ROOT; written to OUT/FILE)"""
import os
import re
import sys

LAUNCH = re.compile(r'([A-Za-z_][\w:]*(?:<[\w:, ]*>)?)\s*<<<(.*?)>>>\s*\(', re.S)
SHARED = '#define PRECIS_REDUCE_SHARED(name) extern __shared__ __align__(16) unsigned char name[]'

root, out, files = sys.argv[1], sys.argv[2], sys.argv[3:]
for f in files:
    s = open(os.path.join(root, f)).read()
    s = s.replace('ForEachKernel<<<', 'ForEachKernel<Fn><<<')  # the one launch relying on deduction
    s = LAUNCH.sub(lambda m: 'emu::Launch(%s, %s)(' % (m.group(1), m.group(2)), s)
    s = s.replace(SHARED, '#define PRECIS_REDUCE_SHARED(name) PRECIS_EMU_SHARED(name)')
    os.makedirs(os.path.dirname(os.path.join(out, f)), exist_ok=True)
    open(os.path.join(out, f), 'w').write(s)
