#!/usr/bin/env python3
"""The analyzer's layers (docs/design.md): each folder of analyzer/ may use
only its own and lower folders, by header and by symbol.

usage: check_layers.py ANALYZER_DIR NM LIB...

Headers: every #include "x.h" naming a header of another folder must name
one of a lower folder. Symbols: every symbol an object of a layer's library
leaves undefined and another analyzer library defines must be defined by a
lower layer's library (a call upward is a circle between folders). Fails
when a folder of analyzer/ is not in LAYERS, so a new folder gets a place.

Files: inside a folder, no two source files call each other, directly or
through others (a circle of calls between the objects of one library): what
two files share goes into a leaf file both call (analyses/series.c,
render/frames_json.c).

Renderers read the models only: render/ includes no header of RENDER_BARRED
and uses no symbol their libraries define, though they are lower; what a
renderer prints, the model (model/, check/) copies or computes when it is
built (docs/design.md, "Where a renderer gets its figures")."""
import os
import re
import subprocess
import sys

# Lowest first; cli is the command (the executable's main.c is in it), lib
# the analysis library over it (analyzer/lib/).
LAYERS = ["base", "torchalloc", "read", "symbolize", "replay", "analyses", "model", "check", "follow", "top", "render", "tui",
          "launch", "cli", "lib"]
# Below the models, out of the renderers' reach (symbolize/ is not: the
# report model hands out its frame tables, struct cmt_frames).
RENDER_BARRED = ["read", "replay", "analyses"]


def barred(layer, target):
    return layer == "render" and target in RENDER_BARRED


def header_problems(root, render_reads):
    problems = []
    folders = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)))
    for d in folders:
        if d not in LAYERS:
            problems.append(f"analyzer/{d}/ is in no layer: give it a place in {sys.argv[0]} and docs/design.md")
    where = {}
    for d in LAYERS:
        for f in os.listdir(os.path.join(root, d)) if os.path.isdir(os.path.join(root, d)) else []:
            if f.endswith(".h"):
                where.setdefault(f, d)
    for d in LAYERS:
        path = os.path.join(root, d)
        if not os.path.isdir(path):
            continue
        for f in sorted(os.listdir(path)):
            if not f.endswith((".c", ".h")):
                continue
            with open(os.path.join(path, f), encoding="utf-8") as fh:
                for n, line in enumerate(fh, 1):
                    m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
                    if not m:
                        continue
                    target = where.get(os.path.basename(m.group(1)))
                    if target and LAYERS.index(target) > LAYERS.index(d):
                        problems.append(f"analyzer/{d}/{f}:{n}: includes {target}/{m.group(1)}, a higher layer")
                    elif target and barred(d, target):
                        render_reads.setdefault(f, []).append(
                            f"analyzer/{d}/{f}:{n}: includes {target}/{m.group(1)}: renderers read the models only")
    return problems


def symbols(nm, lib):
    out = subprocess.run([nm, "--defined-only", "-g", lib], capture_output=True, text=True, check=True).stdout
    defined = {l.split()[-1] for l in out.splitlines() if len(l.split()) == 3}
    out = subprocess.run([nm, "-u", lib], capture_output=True, text=True, check=True).stdout
    undefined = {}
    obj = None
    for l in out.splitlines():
        if l.endswith(":") and l.strip():
            obj = l[:-1]
        elif l.strip():
            undefined.setdefault(l.split()[-1], set()).add(obj)
    return defined, undefined


def symbol_problems(root, nm, libs, render_reads):
    by_layer = {}
    for lib in libs:
        layer = os.path.basename(os.path.dirname(lib))
        if layer not in LAYERS:
            return [f"{lib}: not the library of a layer"]
        by_layer[layer] = symbols(nm, lib)
    problems = []
    definer = {}
    for layer, (defined, _) in by_layer.items():
        for s in defined:
            definer.setdefault(s, layer)
    for layer, (_, undefined) in sorted(by_layer.items(), key=lambda kv: LAYERS.index(kv[0])):
        for s, objs in sorted(undefined.items()):
            d = definer.get(s)
            if d and LAYERS.index(d) > LAYERS.index(layer):
                problems.append(f"{layer}: {', '.join(sorted(objs))} uses {s}, defined in {d} (a higher layer)")
            elif d and barred(layer, d):
                for o in sorted(objs):
                    src = os.path.basename(o)[:-2] if o.endswith(".o") else os.path.basename(o)
                    render_reads.setdefault(src, []).append(
                        f"{layer}: {os.path.basename(o)} uses {s}, defined in {d}: renderers read the models only")
    # Every folder that exists has its library checked.
    missing = [l for l in LAYERS if l not in by_layer and os.path.isdir(os.path.join(root, l))]
    if missing:
        problems.append(f"libraries of {sorted(missing)} not given")
    return problems


def object_symbols(nm, lib):
    """Per object of an archive: the global symbols it defines and those it
    leaves undefined."""
    out = subprocess.run([nm, "-g", lib], capture_output=True, text=True, check=True).stdout
    defines, uses = {}, {}
    obj = None
    for l in out.splitlines():
        if l.endswith(":") and l.strip():
            obj = os.path.basename(l[:-1])
            defines.setdefault(obj, set())
            uses.setdefault(obj, set())
            continue
        f = l.split()
        if obj is None or not f:
            continue
        if len(f) == 3 and f[1] not in "Uwv":
            defines[obj].add(f[2])
        elif len(f) == 2 and f[0] in ("U", "w", "v"):
            uses[obj].add(f[1])
    return defines, uses


def source_name(obj):
    """x.c.o (meson's object of x.c) -> x.c."""
    return obj[:-2] if obj.endswith(".c.o") else obj


def circles(edges):
    """The strongly connected components of more than one node (Tarjan's,
    iteratively), each sorted; edges: node -> {node: symbol}."""
    index, low, on, stack, found = {}, {}, set(), [], []
    counter = 0
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, {}))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges.get(w, {})))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    found.append(sorted(comp))
    return found


def file_problems(nm, libs):
    """Circles of calls between the files of one folder."""
    problems = []
    for lib in libs:
        layer = os.path.basename(os.path.dirname(lib))
        defines, uses = object_symbols(nm, lib)
        definer = {}
        for obj, syms in defines.items():
            for s in syms:
                definer.setdefault(s, obj)
        edges = {}
        for obj, syms in uses.items():
            for s in sorted(syms):
                d = definer.get(s)
                if d and d != obj:
                    edges.setdefault(source_name(obj), {}).setdefault(source_name(d), s)
        for comp in circles(edges):
            inside = set(comp)
            calls = [f"{a} uses {s} ({b})" for a in comp for b, s in sorted(edges.get(a, {}).items()) if b in inside]
            problems.append(f"analyzer/{layer}/: {', '.join(comp)} call each other in a circle: {'; '.join(calls)}")
    return problems


def main():
    root, nm, libs = sys.argv[1], sys.argv[2], sys.argv[3:]
    render_reads = {}
    problems = header_problems(root, render_reads) + symbol_problems(root, nm, libs, render_reads)
    problems += file_problems(nm, libs)
    for f in sorted(render_reads):
        problems += render_reads[f]
    for p in problems:
        print(p)
    if problems:
        print(f"{len(problems)} layering problem(s): a folder uses a higher one, a renderer a lower one than the models, or the files of a folder call each other in a circle (docs/design.md, Layers)")
        return 1
    print(f"layers: {len(LAYERS)} folders, headers and symbols point down only, renderers to the models, no circle between the files of a folder")
    return 0


if __name__ == "__main__":
    sys.exit(main())
