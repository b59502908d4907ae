#!/usr/bin/env python3
"""The shim's layers (docs/design.md, "The shim's layers"): each folder of
preload/ may use only its own and lower folders, by header and by symbol,
as the analyzer's folders (check_layers.py).

usage: check_shim_layers.py PRELOAD_DIR NM LIB...

Headers: every #include "x.h" naming a header of another folder must name
one of a lower folder. Symbols: every symbol an object of a layer's library
leaves undefined and another of the shim's libraries defines must be
defined by a lower layer's library (a call upward is a circle between
folders). Fails when a folder of preload/ is not in LAYERS, so a new folder
gets a place, and when a library of a folder is not given.

One call upward is allowed, by name (UPWARD): the shim's "ensure loaded"
(shim/shim.h). The recorder's start and NVTX's injection can run before the
shim's constructor, so they make sure it has run; nothing else below shim/
names shim/."""
import os
import re
import subprocess
import sys

# Lowest first.
LAYERS = ["platform", "trace", "record", "python", "stacks", "device", "sampler", "torch", "phases", "hooks", "shim"]
# (symbol or header, the folder that defines it): the only uses upward.
UPWARD = {("cmt_shim_ensure_loaded", "shim"), ("shim.h", "shim")}


def header_problems(root):
    problems = []
    folders = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)))
    for d in folders:
        if d not in LAYERS:
            problems.append(f"preload/{d}/ is in no layer: give it a place in {os.path.basename(sys.argv[0])} "
                            "and docs/design.md")
    where = {}
    for d in LAYERS:
        path = os.path.join(root, d)
        for f in os.listdir(path) if os.path.isdir(path) else []:
            if f.endswith(".h"):
                where.setdefault(f, d)
    for d in LAYERS:
        path = os.path.join(root, d)
        if not os.path.isdir(path):
            continue
        for f in sorted(os.listdir(path)):
            if not f.endswith((".c", ".h", ".cpp", ".inc", ".S")):
                continue
            with open(os.path.join(path, f), encoding="utf-8") as fh:
                for n, line in enumerate(fh, 1):
                    m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
                    if not m:
                        continue
                    header = os.path.basename(m.group(1))
                    target = where.get(header)
                    if target and LAYERS.index(target) > LAYERS.index(d) and (header, target) not in UPWARD:
                        problems.append(f"preload/{d}/{f}:{n}: includes {target}/{m.group(1)}, a higher layer")
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


def symbol_problems(root, nm, libs):
    by_layer = {}
    for lib in libs:
        layer = os.path.basename(os.path.dirname(lib))
        if layer not in LAYERS:
            return [f"{lib}: not the library of a layer"]
        by_layer[layer] = symbols(nm, lib)
    definer = {}
    for layer, (defined, _) in by_layer.items():
        for s in defined:
            definer.setdefault(s, layer)
    problems = []
    for layer, (_, undefined) in sorted(by_layer.items(), key=lambda kv: LAYERS.index(kv[0])):
        for s, objs in sorted(undefined.items()):
            d = definer.get(s)
            if d and LAYERS.index(d) > LAYERS.index(layer) and (s, d) not in UPWARD:
                problems.append(f"{layer}: {', '.join(sorted(os.path.basename(o) for o in objs))} uses {s}, "
                                f"defined in {d} (a higher layer)")
    missing = [l for l in LAYERS if l not in by_layer and os.path.isdir(os.path.join(root, l))]
    if missing:
        problems.append(f"libraries of {sorted(missing)} not given")
    return problems


def main():
    root, nm, libs = sys.argv[1], sys.argv[2], sys.argv[3:]
    problems = header_problems(root) + symbol_problems(root, nm, libs)
    for p in problems:
        print(p)
    if problems:
        print(f"{len(problems)} layering problem(s) in the shim: a folder uses a higher one "
              "(docs/design.md, The shim's layers)")
        return 1
    print(f"shim layers: {len(LAYERS)} folders, headers and symbols point down only "
          f"(upward only {', '.join(sorted(s for s, _ in UPWARD))})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
