#!/usr/bin/env python3
"""The layers of a tree of folders (docs/design.md, "Layers" for the
analyzer, "The shim's layers" for preload/): each folder may use only its
own and lower folders, by header and by symbol. One checker, one profile per
tree (PROFILES).

usage: check_layers.py PROFILE ROOT NM LIB...     (PROFILE: analyzer, shim)

Headers: every #include "x.h" naming a header of another folder must name
one of a lower folder. Symbols: every symbol an object of a layer's library
leaves undefined and another of the tree's libraries defines must be defined
by a lower layer's library (a call upward is a circle between folders).
Fails when a folder of ROOT is not in the profile's layers, so a new folder
gets a place, and when the library of a folder is not given.

Allowed upward uses are named in the profile (UPWARD): the shim's "ensure
loaded" (shim/shim.h). The recorder's start and NVTX's injection can run
before the shim's constructor, so they make sure it has run; nothing else
below shim/ names shim/.

Files (the analyzer): inside a folder, no two source files call each other,
directly or through others (a circle of calls between the objects of one
library): what two files share goes into a leaf file both call
(analyses/series.c, render/frames_json.c).

Readers barred from lower layers (the analyzer's renderers): render/
includes no header of read/, replay/ or analyses/ and uses no symbol their
libraries define, though they are lower; what a renderer prints, the model
(model/, check/) copies or computes when it is built (docs/design.md, "Where
a renderer gets its figures").

The checks run on the source tree and on each library's symbol table (what
each object defines and leaves undefined, as nm reads it): check() takes the
tables, so the self-test (test_check_layers.py) gives it tables of its own
without compiling anything."""
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Profile:
    tree: str                  # how messages name ROOT: "analyzer", "preload"
    layers: tuple              # lowest first
    sources: tuple             # file names whose #include lines are read
    upward: frozenset = frozenset()  # (symbol or header, the folder that defines it)
    barred: dict = field(default_factory=dict)  # layer -> lower layers it may not use, and why
    file_circles: bool = False
    summary: str = ""


PROFILES = {
    # cli is the command (the executable's main.c is in it), lib the
    # analysis library over it (analyzer/lib/). symbolize/ is not barred to
    # the renderers: the report model hands out its frame tables.
    "analyzer": Profile(
        tree="analyzer",
        layers=("base", "torchalloc", "read", "symbolize", "replay", "analyses", "model", "check", "follow", "top",
                "render", "tui", "launch", "cli", "lib"),
        sources=(".c", ".h"),
        barred={"render": (("read", "replay", "analyses"), "renderers read the models only")},
        file_circles=True,
        summary="layers: {n} folders, headers and symbols point down only, renderers to the models, no circle "
                "between the files of a folder"),
    "shim": Profile(
        tree="preload",
        layers=("platform", "trace", "record", "python", "stacks", "device", "sampler", "torch", "phases", "hooks",
                "shim"),
        sources=(".c", ".h", ".cpp", ".inc", ".S"),
        upward=frozenset({("cmt_shim_ensure_loaded", "shim"), ("shim.h", "shim")}),
        file_circles=True,
        summary="shim layers: {n} folders, headers and symbols point down only (upward only {upward}), no circle "
                "between the files of a folder"),
}


def barred_why(p, layer, target):
    lower, why = p.barred.get(layer, ((), ""))
    return why if target in lower else None


def higher(p, layer, target, name):
    return p.layers.index(target) > p.layers.index(layer) and (name, target) not in p.upward


def header_problems(p, root, barred_reads):
    problems = []
    for d in sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d))):
        if d not in p.layers:
            problems.append(f"{p.tree}/{d}/ is in no layer: give it a place in tests/layers/check_layers.py and "
                            "docs/design.md")
    where = {}
    for d in p.layers:
        path = os.path.join(root, d)
        for f in os.listdir(path) if os.path.isdir(path) else []:
            if f.endswith(".h"):
                where.setdefault(f, d)
    for d in p.layers:
        path = os.path.join(root, d)
        if not os.path.isdir(path):
            continue
        for f in sorted(os.listdir(path)):
            if not f.endswith(p.sources):
                continue
            with open(os.path.join(path, f), encoding="utf-8") as fh:
                for n, line in enumerate(fh, 1):
                    m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
                    if not m:
                        continue
                    header = os.path.basename(m.group(1))
                    target = where.get(header)
                    if not target:
                        continue
                    if higher(p, d, target, header):
                        problems.append(f"{p.tree}/{d}/{f}:{n}: includes {target}/{m.group(1)}, a higher layer")
                    elif barred_why(p, d, target):
                        barred_reads.setdefault(f, []).append(
                            f"{p.tree}/{d}/{f}:{n}: includes {target}/{m.group(1)}: {barred_why(p, d, target)}")
    return problems


def source_name(obj):
    """x.c.o (meson's object of x.c) -> x.c."""
    return obj[:-2] if obj.endswith(".o") else obj


def symbol_problems(p, root, tables, barred_reads):
    """tables: layer -> {object: (symbols it defines, symbols it uses)}, in
    the order the libraries were given."""
    definer = {}
    for layer, objects in tables.items():
        for defines, _ in objects.values():
            for s in defines:
                definer.setdefault(s, layer)
    problems = []
    for layer in sorted(tables, key=p.layers.index):
        users = {}
        for obj, (_, uses) in tables[layer].items():
            for s in uses:
                users.setdefault(s, set()).add(obj)
        for s, objs in sorted(users.items()):
            d = definer.get(s)
            if not d:
                continue
            if higher(p, layer, d, s):
                problems.append(f"{layer}: {', '.join(sorted(objs))} uses {s}, defined in {d} (a higher layer)")
            elif barred_why(p, layer, d):
                for o in sorted(objs):
                    barred_reads.setdefault(source_name(o), []).append(
                        f"{layer}: {o} uses {s}, defined in {d}: {barred_why(p, layer, d)}")
    # Every folder that exists has its library checked.
    missing = [l for l in p.layers if l not in tables and os.path.isdir(os.path.join(root, l))]
    if missing:
        problems.append(f"libraries of {sorted(missing)} not given")
    return problems


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


def file_problems(p, tables):
    """Circles of calls between the files of one folder."""
    problems = []
    for layer, objects in tables.items():
        definer = {}
        for obj, (defines, _) in objects.items():
            for s in defines:
                definer.setdefault(s, obj)
        edges = {}
        for obj, (_, uses) in objects.items():
            for s in sorted(uses):
                d = definer.get(s)
                if d and d != obj:
                    edges.setdefault(source_name(obj), {}).setdefault(source_name(d), s)
        for comp in circles(edges):
            inside = set(comp)
            calls = [f"{a} uses {s} ({b})" for a in comp for b, s in sorted(edges.get(a, {}).items()) if b in inside]
            problems.append(f"{p.tree}/{layer}/: {', '.join(comp)} call each other in a circle: {'; '.join(calls)}")
    return problems


def check(p, root, tables):
    """The problems found (a list of lines) and, when there are none, the
    summary line."""
    barred_reads = {}
    problems = header_problems(p, root, barred_reads) + symbol_problems(p, root, tables, barred_reads)
    if p.file_circles:
        problems += file_problems(p, tables)
    for f in sorted(barred_reads):
        problems += barred_reads[f]
    upward = ", ".join(sorted(s for s, _ in p.upward))
    return problems, p.summary.format(n=len(p.layers), upward=upward)


def archive_table(nm, lib):
    """Per object of an archive: the global symbols it defines and those it
    leaves undefined (nm -g: 'ADDR T name' defined, 'U name' undefined)."""
    out = subprocess.run([nm, "-g", lib], capture_output=True, text=True, check=True).stdout
    table = {}
    obj = None
    for l in out.splitlines():
        if l.endswith(":") and l.strip():
            obj = os.path.basename(l[:-1])
            table.setdefault(obj, (set(), set()))
            continue
        f = l.split()
        if obj is None or not f:
            continue
        if len(f) == 3 and f[1] not in "Uwv":
            table[obj][0].add(f[2])
        elif len(f) == 2 and f[0] in ("U", "w", "v"):
            table[obj][1].add(f[1])
    return table


def main():
    if len(sys.argv) < 4 or sys.argv[1] not in PROFILES:
        print(f"usage: check_layers.py {{{','.join(PROFILES)}}} ROOT NM LIB...", file=sys.stderr)
        return 2
    p = PROFILES[sys.argv[1]]
    root, nm, libs = sys.argv[2], sys.argv[3], sys.argv[4:]
    tables = {}
    for lib in libs:
        layer = os.path.basename(os.path.dirname(lib))
        if layer not in p.layers:
            print(f"{lib}: not the library of a layer")
            return 1
        tables[layer] = archive_table(nm, lib)
    problems, summary = check(p, root, tables)
    for line in problems:
        print(line)
    if problems:
        print(f"{len(problems)} layering problem(s) in {p.tree}/: a folder uses a higher one, a reader a barred "
              "lower one, or the files of a folder call each other in a circle (docs/design.md)")
        return 1
    print(summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
