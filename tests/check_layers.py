#!/usr/bin/python3
"""Checks that the #include graph of server/ follows server/LAYERS.

Every module (foo.c and foo.h) must be listed in LAYERS; an `#include "bar.h"`
in a module may name a module of its own layer or of a layer below, never one
above; and the includes must form no cycle. Each offence is printed with the
line that causes it, as file:line: text, and the exit status is 1.

    tests/check_layers.py                 check server/
    tests/check_layers.py --root DIR      check DIR (a directory with LAYERS)
    tests/check_layers.py --dot           print the layer graph as Graphviz dot
"""
import argparse
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)\.h"')


def read_layers(path):
    """Returns {module: layer number}, bottom layer 0, and the layers in order."""
    layers = []
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].split()
            if line:
                layers.append(line)
    return {m: i for i, mods in enumerate(layers) for m in mods}, layers


def read_includes(root):
    """Returns {module: [(target, file, line number, line text)]} for server/'s C files."""
    graph = {}
    for name in sorted(os.listdir(root)):
        stem, ext = os.path.splitext(name)
        if ext not in (".c", ".h"):
            continue
        edges = graph.setdefault(stem, [])
        with open(os.path.join(root, name)) as f:
            for number, text in enumerate(f, 1):
                m = INCLUDE.match(text)
                if m:
                    edges.append((os.path.basename(m.group(1)), name, number, text.strip()))
    return graph


def find_cycle(graph):
    """Returns one cycle as a list of edges, or None (depth-first search)."""
    state, stack = {}, []

    def visit(module):
        state[module] = "open"
        for edge in graph.get(module, []):
            target = edge[0]
            if target == module:
                continue
            stack.append(edge)
            if state.get(target) == "open":
                start = next(i for i, e in enumerate(stack) if graph_owner[id(e)] == target)
                return stack[start:]
            if target not in state:
                found = visit(target)
                if found:
                    return found
            stack.pop()
        state[module] = "done"
        return None

    graph_owner = {id(e): m for m, edges in graph.items() for e in edges}
    for module in sorted(graph):
        if module not in state:
            found = visit(module)
            if found:
                return found
    return None


def check(root):
    layer, _ = read_layers(os.path.join(root, "LAYERS"))
    graph = read_includes(root)
    problems = []
    for module in sorted(graph):
        if module not in layer:
            problems.append(f"{root}/LAYERS: module '{module}' is not listed")
    for module, edges in sorted(graph.items()):
        for target, name, number, text in edges:
            if target not in graph:
                problems.append(f"{root}/{name}:{number}: {text}: no module '{target}' in {root}")
            elif module in layer and target in layer and layer[target] > layer[module]:
                problems.append(
                    f"{root}/{name}:{number}: {text}: '{module}' (layer {layer[module]}) "
                    f"includes '{target}' of a higher layer ({layer[target]})")
    cycle = find_cycle(graph)
    if cycle:
        path = " -> ".join([cycle[0][1].rsplit(".", 1)[0]] + [e[0] for e in cycle])
        problems.append(f"include cycle {path}, closed by {root}/{cycle[-1][1]}:{cycle[-1][2]}: "
                        f"{cycle[-1][3]}")
    return problems, graph


def dot(root):
    """The layers as a dot graph: one rank per layer, an edge per module include."""
    layer, layers = read_layers(os.path.join(root, "LAYERS"))
    graph = read_includes(root)
    out = ["digraph layers {", '  rankdir=BT; newrank=true;',
           '  node [shape=box, style="rounded,filled", fillcolor="#f4f4f4", fontname="Helvetica"];',
           '  edge [color="#888888", arrowsize=0.6];']
    # One row per layer, held in order by a column of labels ("layer 0" at the bottom).
    for i, mods in enumerate(layers):
        out.append(f'  "layer {i}" [shape=plaintext, style="", fontcolor="#888888"];')
        out.append(f'  subgraph layer{i} {{ rank=same; "layer {i}"; ' +
                   " ".join(f'"{m}";' for m in mods) + " }")
        if i > 0:
            out.append(f'  "layer {i}" -> "layer {i - 1}" [style=invis];')
    for module in sorted(graph):
        for target in sorted({e[0] for e in graph[module]}):
            if target != module and target in graph:
                out.append(f'  "{module}" -> "{target}";')
    out.append("}")
    return "\n".join(out) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", default=os.path.join(os.path.dirname(__file__), "..", "server"))
    parser.add_argument("--dot", action="store_true")
    args = parser.parse_args()
    root = os.path.normpath(args.root)
    if args.dot:
        sys.stdout.write(dot(root))
        return 0
    problems, graph = check(root)
    for p in problems:
        print(p)
    print(f"check_layers: {len(graph)} modules, "
          f"{sum(len(e) for e in graph.values())} includes, {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
