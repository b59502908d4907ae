#!/usr/bin/env python3
"""check_layers.py catches what it is for, for one profile.

analyzer: an upward include, a call upward between two layers' libraries, a
folder in no layer, a renderer that includes a header of read/, replay/ or
analyses/ or calls their code (though lower: renderers read the models
only); it passes a clean tree, renderers reading a model and symbolize/; and
two files of one folder that call each other (directly or through a third)
while it passes a leaf file two files share.

shim: an upward include, a call upward between two of the shim's folders, a
folder in no layer, a library not given, two files of one folder that call
each other (the recorder and the module map; the driver hooks, their table
and cuGetProcAddress, as they once did); it passes a clean tree and the one
allowed call upward, the shim's "ensure loaded", while any other call into
shim/ from below fails.

Each case is a small tree of sources (their #include lines are what the
checker reads) and the symbol table each object would have (what it defines,
what it uses), given to check() directly: nothing is compiled, so the cases
take milliseconds. One case per profile compiles two objects into archives
and reads them with nm, as the checker does over the real build, so that
the reading of nm's output is tested too.

usage: test_check_layers.py PROFILE CHECK_LAYERS CC AR NM"""
import importlib.util
import os
import subprocess
import sys
import tempfile

PROFILE, CHECK, CC, AR, NM = sys.argv[1:6]
spec = importlib.util.spec_from_file_location("check_layers", CHECK)
check_layers = importlib.util.module_from_spec(spec)
spec.loader.exec_module(check_layers)
P = check_layers.PROFILES[PROFILE]
failures = 0


class Obj:
    """A source file and the symbols its object defines and uses."""

    def __init__(self, defines=(), uses=(), includes=()):
        self.defines, self.uses, self.includes = set(defines), set(uses), list(includes)

    def text(self):
        lines = [f'#include "{h}"' for h in self.includes]
        lines += [f"int {s}(void);" for s in sorted(self.uses)]
        lines += [f"int {s}(void) {{ return {' + '.join(f'{u}()' for u in sorted(self.uses)) or '0'}; }}"
                  for s in sorted(self.defines)]
        return "\n".join(lines) + "\n"


def write_tree(tmp, files):
    """files: path -> header text or Obj. The sources under ROOT, and the
    symbol tables of every folder's library (a folder with no object has
    an empty one, as an empty archive)."""
    root = os.path.join(tmp, P.tree)
    tables = {}
    for path, item in files.items():
        full = os.path.join(root, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w") as f:
            f.write(item.text() if isinstance(item, Obj) else item)
    for layer in P.layers:
        if os.path.isdir(os.path.join(root, layer)):
            tables[layer] = {}
    for path, item in files.items():
        layer = path.split("/")[0]
        if isinstance(item, Obj) and layer in tables:
            tables[layer][os.path.basename(path) + ".o"] = (item.defines, item.uses)
    return root, tables


def report(name, ok, detail):
    global failures
    print(f"{'ok' if ok else 'FAIL'}: {name}")
    if not ok:
        print(detail)
        failures += 1


def case(name, files, want_ok, want_text):
    with tempfile.TemporaryDirectory() as tmp:
        root, tables = write_tree(tmp, files)
        problems, summary = check_layers.check(P, root, tables)
        out = "\n".join(problems) if problems else summary
        report(name, (not problems) == want_ok and want_text in out,
               f"  wanted {'a pass' if want_ok else 'a failure'} saying {want_text!r}, got:\n{out}")


def case_not_given(files, layer):
    with tempfile.TemporaryDirectory() as tmp:
        root, tables = write_tree(tmp, files)
        del tables[layer]
        problems, _ = check_layers.check(P, root, tables)
        report("a folder whose library is not given fails", f"libraries of ['{layer}'] not given" in problems,
               "\n".join(problems))


def real_case(name, files, want_rc, want_text):
    """Compiled, archived and read with nm by the checker's own main()."""
    with tempfile.TemporaryDirectory() as tmp:
        root, tables = write_tree(tmp, files)
        libs = []
        for layer in tables:
            objs = []
            for f in sorted(os.listdir(os.path.join(root, layer))):
                if f.endswith(".c"):
                    o = os.path.join(tmp, "obj", layer, f + ".o")
                    os.makedirs(os.path.dirname(o), exist_ok=True)
                    incs = ["-I" + os.path.join(root, x) for x in os.listdir(root)]
                    subprocess.run([CC, "-c"] + incs + [os.path.join(root, layer, f), "-o", o], check=True)
                    objs.append(o)
            lib = os.path.join(tmp, "build", layer, f"lib{layer}.a")
            os.makedirs(os.path.dirname(lib), exist_ok=True)
            subprocess.run([AR, "rcs", lib] + objs, check=True)
            libs.append(lib)
        p = subprocess.run([sys.executable, CHECK, PROFILE, root, NM] + libs, capture_output=True, text=True)
        report(name, p.returncode == want_rc and want_text in p.stdout,
               f"  rc {p.returncode} (wanted {want_rc}), output:\n{p.stdout}{p.stderr}")


def analyzer_cases():
    clean = {
        "base/b.h": "int base_fn(void);\n",
        "base/b.c": Obj(defines=["base_fn"], includes=["b.h"]),
        "model/m.c": Obj(defines=["model_fn"], uses=["base_fn"]),
    }
    case("a clean tree passes", clean, True, "point down only")
    case("an upward include fails",
         dict(clean, **{"model/m.h": "int model_fn(void);\n", "read/r.c": Obj(defines=["read_fn"], includes=["m.h"])}),
         False, "analyzer/read/r.c:1: includes model/m.h, a higher layer")
    case("a call upward fails", dict(clean, **{"read/r.c": Obj(defines=["read_fn"], uses=["model_fn"])}),
         False, "read: r.c.o uses model_fn, defined in model (a higher layer)")
    render_clean = dict(clean, **{
        "replay/t.h": "int replay_fn(void);\n",
        "replay/t.c": Obj(defines=["replay_fn"], includes=["t.h"]),
        "symbolize/f.h": "int frames_fn(void);\n",
        "symbolize/f.c": Obj(defines=["frames_fn"], includes=["f.h"]),
        "render/v.c": Obj(defines=["view_fn"], uses=["model_fn", "frames_fn"], includes=["f.h"]),
    })
    case("a renderer reading a model and symbolize/ passes", render_clean, True, "renderers to the models")
    case("a renderer including a replay header fails",
         dict(render_clean, **{"render/w.c": Obj(defines=["w_fn"], includes=["t.h"])}),
         False, "analyzer/render/w.c:1: includes replay/t.h: renderers read the models only")
    case("a renderer calling the replay fails",
         dict(render_clean, **{"render/w.c": Obj(defines=["w_fn"], uses=["replay_fn"])}),
         False, "render: w.c.o uses replay_fn, defined in replay: renderers read the models only")
    case("a folder in no layer fails", dict(clean, **{"extras/x.c": Obj(defines=["x"])}),
         False, "analyzer/extras/ is in no layer")
    case_not_given(clean, "model")
    leaf = dict(clean, **{
        "model/series.c": Obj(defines=["series_fn"]),
        "model/a.c": Obj(defines=["a_fn"], uses=["series_fn"]),
        "model/b.c": Obj(defines=["b_fn"], uses=["series_fn", "a_fn"]),
    })
    case("files sharing a leaf file pass", leaf, True, "no circle between the files of a folder")
    case("two files calling each other fail", dict(leaf, **{"model/a.c": Obj(defines=["a_fn"], uses=["b_fn"])}),
         False, "analyzer/model/: a.c, b.c call each other in a circle: a.c uses b_fn (b.c); b.c uses a_fn (a.c)")
    case("a circle through a third file fails",
         dict(leaf, **{"model/series.c": Obj(defines=["series_fn"], uses=["b_fn"])}),
         False, "analyzer/model/: a.c, b.c, series.c call each other in a circle: a.c uses series_fn (series.c); "
                "b.c uses a_fn (a.c); b.c uses series_fn (series.c); series.c uses b_fn (b.c)")
    case("a circle in another folder fails too",
         dict(clean, **{"read/x.c": Obj(defines=["x_fn"], uses=["y_fn"]),
                        "read/y.c": Obj(defines=["y_fn"], uses=["z_fn"]),
                        "read/z.c": Obj(defines=["z_fn"], uses=["x_fn"])}),
         False, "analyzer/read/: x.c, y.c, z.c call each other in a circle: x.c uses y_fn (y.c); y.c uses z_fn (z.c); "
                "z.c uses x_fn (x.c)")
    real_case("read from real archives: a call upward fails",
              {"model/m.c": Obj(defines=["model_fn"]), "read/r.c": Obj(defines=["read_fn"], uses=["model_fn"])},
              1, "read: r.c.o uses model_fn, defined in model (a higher layer)")


def shim_cases():
    clean = {
        "platform/log.h": "int log_fn(void);\n",
        "platform/log.c": Obj(defines=["log_fn"], includes=["log.h"]),
        "record/recorder.h": "int record_fn(void);\n",
        "record/recorder.c": Obj(defines=["record_fn"], uses=["log_fn"], includes=["log.h", "recorder.h"]),
        "hooks/hook.c": Obj(defines=["hook_fn"], uses=["record_fn"], includes=["recorder.h"]),
        "shim/shim.h": "void cmt_shim_ensure_loaded(void);\n",
        "shim/shim.c": Obj(defines=["cmt_shim_ensure_loaded", "shim_other"], includes=["shim.h"]),
    }
    case("a clean tree passes", clean, True, "point down only")
    case("the shim's ensure loaded, called from below, passes",
         dict(clean, **{"record/start.c": Obj(defines=["start_fn"], uses=["cmt_shim_ensure_loaded"],
                                              includes=["shim.h"])}),
         True, "upward only cmt_shim_ensure_loaded")
    case("any other call into shim/ from below fails",
         dict(clean, **{"record/start.c": Obj(defines=["start_fn"], uses=["shim_other"])}),
         False, "record: start.c.o uses shim_other, defined in shim (a higher layer)")
    case("an upward include fails",
         dict(clean, **{"sampler/sampler.h": "int sampler_fn(void);\n",
                        "record/modules.c": Obj(defines=["modules_fn"], includes=["sampler.h"])}),
         False, "preload/record/modules.c:1: includes sampler/sampler.h, a higher layer")
    case("a call upward fails (the module map calling a feature)",
         dict(clean, **{"torch/torch_blocks.c": Obj(defines=["torch_scan"]),
                        "record/modules.c": Obj(defines=["modules_fn"], uses=["torch_scan"])}),
         False, "record: modules.c.o uses torch_scan, defined in torch (a higher layer)")
    case("a folder in no layer fails", dict(clean, **{"extras/x.c": Obj(defines=["x"])}),
         False, "preload/extras/ is in no layer")
    case_not_given(clean, "hooks")
    modules = dict(clean, **{"record/modules.c": Obj(defines=["modules_refresh"], uses=["record_fn"])})
    case("the module map using the recorder passes", modules, True, "no circle between the files of a folder")
    case("the recorder calling the module map back fails",
         dict(modules, **{"record/recorder.c": Obj(defines=["record_fn"], uses=["log_fn", "modules_refresh"])}),
         False, "preload/record/: modules.c, recorder.c call each other in a circle: modules.c uses record_fn "
                "(recorder.c); recorder.c uses modules_refresh (modules.c)")
    case("the hooks, their table and cuGetProcAddress in a circle fail",
         dict(clean, **{"hooks/table.c": Obj(defines=["hook_table"], uses=["get_proc_hook", "hook_fn"]),
                        "hooks/proc.c": Obj(defines=["get_proc_hook"], uses=["substitute"]),
                        "hooks/lookup.c": Obj(defines=["substitute"], uses=["hook_table"])}),
         False, "preload/hooks/: lookup.c, proc.c, table.c call each other in a circle: lookup.c uses hook_table "
                "(table.c); proc.c uses substitute (lookup.c); table.c uses get_proc_hook (proc.c)")
    real_case("read from real archives: a call upward fails",
              {"record/modules.c": Obj(defines=["modules_fn"], uses=["torch_scan"]),
               "torch/torch_blocks.c": Obj(defines=["torch_scan"])},
              1, "record: modules.c.o uses torch_scan, defined in torch (a higher layer)")


{"analyzer": analyzer_cases, "shim": shim_cases}[PROFILE]()
sys.exit(1 if failures else 0)
