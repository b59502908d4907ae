#!/usr/bin/env python3
"""check_layers.py catches what it is for: an upward include, a call upward
between two layers' libraries, a folder in no layer, a renderer that includes
a header of read/, replay/ or analyses/ or calls their code (though lower:
renderers read the models only); and passes a clean tree, renderers reading
a model and symbolize/; and two files of one folder that call each other
(directly or through a third) while it passes a leaf file two files share.

usage: test_check_layers.py CHECK_LAYERS CC AR NM"""
import os
import subprocess
import sys
import tempfile

CHECK, CC, AR, NM = sys.argv[1:5]
failures = 0


def tree(tmp, files):
    root = os.path.join(tmp, "analyzer")
    for path, text in files.items():
        os.makedirs(os.path.dirname(os.path.join(root, path)), exist_ok=True)
        with open(os.path.join(root, path), "w") as f:
            f.write(text)
    libs = []
    for layer in ["base", "torchalloc", "read", "symbolize", "replay", "analyses", "model", "check", "render", "launch", "cli"]:
        d = os.path.join(root, layer)
        os.makedirs(d, exist_ok=True)
        objs = []
        for f in sorted(os.listdir(d)):
            if f.endswith(".c"):
                os.makedirs(os.path.join(tmp, "obj", layer), exist_ok=True)
                o = os.path.join(tmp, "obj", layer, f + ".o")
                incs = ["-I" + os.path.join(root, x) for x in os.listdir(root)]
                subprocess.run([CC, "-c"] + incs + [os.path.join(d, f), "-o", o], check=True)
                objs.append(o)
        lib = os.path.join(tmp, "build", layer, "libcmt_" + layer + ".a")
        os.makedirs(os.path.dirname(lib), exist_ok=True)
        subprocess.run([AR, "rcs", lib] + objs, check=True)
        libs.append(lib)
    return root, libs


def case(name, files, want_rc, want_text):
    global failures
    with tempfile.TemporaryDirectory() as tmp:
        root, libs = tree(tmp, files)
        p = subprocess.run([sys.executable, CHECK, root, NM] + libs, capture_output=True, text=True)
        ok = p.returncode == want_rc and want_text in p.stdout
        print(f"{'ok' if ok else 'FAIL'}: {name}")
        if not ok:
            print(f"  rc {p.returncode} (wanted {want_rc}), output:\n{p.stdout}{p.stderr}")
            failures += 1


clean = {
    "base/b.h": "int base_fn(void);\n",
    "base/b.c": '#include "b.h"\nint base_fn(void) { return 1; }\n',
    "model/m.c": "int base_fn(void);\nint model_fn(void);\nint model_fn(void) { return base_fn(); }\n",
}
case("a clean tree passes", clean, 0, "point down only")
case("an upward include fails", dict(clean, **{"model/m.h": "int model_fn(void);\n",
                                               "read/r.c": '#include "m.h"\nint read_fn(void);\nint read_fn(void) { return 0; }\n'}),
     1, "analyzer/read/r.c:1: includes model/m.h, a higher layer")
case("a call upward fails", dict(clean, **{"read/r.c": "int model_fn(void);\nint read_fn(void);\nint read_fn(void) { return model_fn(); }\n"}),
     1, "read: r.c.o uses model_fn, defined in model (a higher layer)")
render_clean = dict(clean, **{
    "replay/t.h": "int replay_fn(void);\n",
    "replay/t.c": '#include "t.h"\nint replay_fn(void) { return 2; }\n',
    "symbolize/f.h": "int frames_fn(void);\n",
    "symbolize/f.c": '#include "f.h"\nint frames_fn(void) { return 3; }\n',
    "render/v.c": '#include "f.h"\nint model_fn(void);\nint view_fn(void);\nint view_fn(void) { return model_fn() + frames_fn(); }\n',
})
case("a renderer reading a model and symbolize/ passes", render_clean, 0, "renderers to the models")
case("a renderer including a replay header fails",
     dict(render_clean, **{"render/w.c": '#include "t.h"\nint w_fn(void);\nint w_fn(void) { return 0; }\n'}),
     1, "analyzer/render/w.c:1: includes replay/t.h: renderers read the models only")
case("a renderer calling the replay fails",
     dict(render_clean, **{"render/w.c": "int replay_fn(void);\nint w_fn(void);\nint w_fn(void) { return replay_fn(); }\n"}),
     1, "render: w.c.o uses replay_fn, defined in replay: renderers read the models only")
case("a folder in no layer fails", dict(clean, **{"extras/x.c": "int x;\n"}), 1, "analyzer/extras/ is in no layer")
leaf = dict(clean, **{
    "model/series.c": "int series_fn(void);\nint series_fn(void) { return 4; }\n",
    "model/a.c": "int series_fn(void);\nint a_fn(void);\nint a_fn(void) { return series_fn(); }\n",
    "model/b.c": "int series_fn(void);\nint a_fn(void);\nint b_fn(void);\nint b_fn(void) { return series_fn() + a_fn(); }\n",
})
case("files sharing a leaf file pass", leaf, 0, "no circle between the files of a folder")
case("two files calling each other fail",
     dict(leaf, **{"model/a.c": "int b_fn(void);\nint a_fn(void);\nint a_fn(void) { return b_fn(); }\n"}),
     1, "analyzer/model/: a.c, b.c call each other in a circle: a.c uses b_fn (b.c); b.c uses a_fn (a.c)")
case("a circle through a third file fails",
     dict(leaf, **{"model/series.c": "int b_fn(void);\nint series_fn(void);\nint series_fn(void) { return b_fn(); }\n"}),
     1, "analyzer/model/: a.c, b.c, series.c call each other in a circle: a.c uses series_fn (series.c); b.c uses "
        "a_fn (a.c); b.c uses series_fn (series.c); series.c uses b_fn (b.c)")
case("a circle in another folder fails too",
     dict(clean, **{"read/x.c": "int y_fn(void);\nint x_fn(void);\nint x_fn(void) { return y_fn(); }\n",
                    "read/y.c": "int z_fn(void);\nint y_fn(void);\nint y_fn(void) { return z_fn(); }\n",
                    "read/z.c": "int x_fn(void);\nint z_fn(void);\nint z_fn(void) { return x_fn(); }\n"}),
     1, "analyzer/read/: x.c, y.c, z.c call each other in a circle: x.c uses y_fn (y.c); y.c uses z_fn (z.c); z.c uses x_fn (x.c)")
sys.exit(1 if failures else 0)
