#!/usr/bin/env python3
"""Self-test of check_layers.py on small trees made here: a tree that follows the table passes, a
deliberately wrong include (a CUDA file including a CPU header, the compiler including a backend)
fails and names the arrow, an include of a missing file fails, a kernel reading the opset fails, and a table whose arrow points up
is rejected."""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
CHECK = os.path.join(HERE, 'check_layers.py')
TABLE = os.path.join(HERE, 'layers.txt')


def tree(files):
    root = tempfile.mkdtemp()
    for path, text in files.items():
        os.makedirs(os.path.join(root, os.path.dirname(path)), exist_ok=True)
        with open(os.path.join(root, path), 'w') as f:
            f.write(text)
    return root


def run(root, table=TABLE):
    p = subprocess.run([sys.executable, CHECK, root, table], capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


BASE = {
    'runtime/base/status.h': '#pragma once\n',
    'runtime/exec/step.h': '#include "runtime/base/status.h"\n',
    'runtime/cpu/kernel.h': '#include "runtime/exec/step.h"\n',
    'runtime/cuda/kernel.cu': '#include "runtime/exec/step.h"\n',
    'compiler/ir/graph.h': '#include "runtime/base/status.h"\n',
}

failures = 0


def expect(cond, what, out):
    global failures
    if not cond:
        failures += 1
        print(f'FAIL: {what}\n{out}')


rc, out = run(tree(BASE))
expect(rc == 0 and 'no arrow points up' in out, 'a tree that follows the table passes', out)

bad = dict(BASE)
bad['runtime/cuda/kernel.cu'] = '#include "runtime/cpu/kernel.h"\n'
rc, out = run(tree(bad))
expect(rc == 1 and 'runtime/cuda/kernel.cu:1: cuda -> cpu' in out, 'a CUDA file including a CPU header fails', out)

bad = dict(BASE)
bad['compiler/ir/graph.h'] = '#include "runtime/cpu/kernel.h"\n'
rc, out = run(tree(bad))
expect(rc == 1 and 'ir -> cpu' in out, 'the compiler including a backend fails', out)

bad = dict(BASE)
bad['runtime/exec/step.h'] = '#include "runtime/exec/gone.h"\n'
rc, out = run(tree(bad))
expect(rc == 1 and 'no file of the tree' in out, 'an include of a missing file fails', out)

bad = dict(BASE)
bad['runtime/cpu/kernel.h'] = '#include "runtime/exec/step.h"\nint legacy = args.attrs.Int("opset", 13);\n'
rc, out = run(tree(bad))
expect(rc == 1 and 'runtime/cpu/kernel.h:2: reads the opset' in out, 'a kernel reading the opset fails', out)

upward = tree({'t.txt': 'base runtime/base exec\nexec runtime/exec base\n'})
rc, out = run(tree(BASE), os.path.join(upward, 't.txt'))
expect(rc != 0 and 'not below it' in out, 'a table with an upward arrow is rejected', out)

print(f'{6 - failures} passed, {failures} failed')
sys.exit(1 if failures else 0)
