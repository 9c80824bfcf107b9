#!/usr/bin/env python3
"""Checks every quoted #include in the source tree against the layer table (layers.txt).

usage: check_layers.py ROOT [TABLE]
Prints each include that points against the table (file:line: layer -> layer) and exits 1 if there
is any, else prints the include graph by layer and exits 0. A file outside every layer's folders,
or an include that resolves to no file of the tree, is reported too (so the table cannot silently
stop covering the code).

Kernel form: no source file under runtime/ may read the ONNX opset (the string "opset" in
quotes): the emitter rewrites version differences into explicit attributes, and kernels see
only those (compiler/ops/step_attrs.cc)."""
import os
import re
import sys

SOURCE = re.compile(r'\.(c|cc|h|cu|cuh)$')
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
OPSET = re.compile(r'"opset"')
SKIP = {'build', '.git', '.venv'}


def read_table(path):
    layers, data = [], {}
    for raw in open(path):
        line = raw.split('#', 1)[0].split()
        if not line:
            continue
        if line[0] == '[data]':
            data[line[1]] = set(line[2:])
            continue
        name, folders, allowed = line[0], line[1].split(','), set(line[2:])
        layers.append((name, folders, allowed))
    names = [n for n, _, _ in layers]
    for name, _, allowed in layers:
        for a in allowed:
            if a not in names:
                sys.exit(f'layers.txt: layer {name} names unknown layer {a}')
            if names.index(a) >= names.index(name):
                sys.exit(f'layers.txt: layer {name} may include {a}, which is not below it')
    return layers, data


def layer_of(path, layers):
    best, best_len = None, -1
    for name, folders, _ in layers:
        for f in folders:
            if (path == f or path.startswith(f + '/')) and len(f) > best_len:
                best, best_len = name, len(f)
    return best


def resolve(root, includer, inc):
    """The include's path relative to ROOT: the project's include roots, then the includer's folder."""
    for base in ('', 'runtime/include/', os.path.dirname(includer) + '/'):
        cand = os.path.normpath(base + inc)
        if os.path.isfile(os.path.join(root, cand)):
            return cand
    return None


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    root = sys.argv[1]
    table = sys.argv[2] if len(sys.argv) == 3 else os.path.join(os.path.dirname(__file__), 'layers.txt')
    layers, data = read_table(table)
    allowed = {n: a for n, _, a in layers}
    problems, graph = [], {}
    for top in ('runtime', 'compiler', 'passes', 'tools', 'tests', 'bench'):
        for dirpath, dirnames, files in os.walk(os.path.join(root, top)):
            dirnames[:] = [d for d in dirnames if d not in SKIP]
            for f in sorted(files):
                if not SOURCE.search(f):
                    continue
                rel = os.path.relpath(os.path.join(dirpath, f), root)
                src = layer_of(rel, layers)
                if src is None:
                    problems.append(f'{rel}: in no layer of the table')
                    continue
                for n, line in enumerate(open(os.path.join(dirpath, f), errors='replace'), 1):
                    if rel.startswith('runtime/') and OPSET.search(line):
                        problems.append(f'{rel}:{n}: reads the opset (kernels take the kernel form of step_attrs.cc)')
                    m = INCLUDE.match(line)
                    if not m:
                        continue
                    target = resolve(root, rel, m.group(1))
                    if target is None:
                        if not m.group(1).endswith('_generated.h'):  # made by the build (flatc)
                            problems.append(f'{rel}:{n}: includes "{m.group(1)}", which is no file of the tree')
                        continue
                    dst = layer_of(target, layers)
                    if dst is None or dst == src:
                        continue
                    if dst in allowed[src] or src in data.get(target, ()):
                        graph.setdefault(src, set()).add(dst)
                        continue
                    problems.append(f'{rel}:{n}: {src} -> {dst} ("{m.group(1)}")')
    if problems:
        print('\n'.join(problems))
        print(f'{len(problems)} include(s) against the layer table {table}')
        return 1
    order = [n for n, _, _ in layers]
    for name in order:
        if name in graph:
            print(f'{name:8} -> ' + ' '.join(d for d in order if d in graph[name]))
    print('include graph follows the layer table: no arrow points up, no cycle')
    return 0


if __name__ == '__main__':
    sys.exit(main())
