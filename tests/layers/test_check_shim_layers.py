#!/usr/bin/env python3
"""check_shim_layers.py catches what it is for: an upward include, a call
upward between two of the shim's folders, a folder in no layer; and passes
a clean tree and the one allowed call upward, the shim's "ensure loaded",
while any other call into shim/ from below fails.

usage: test_check_shim_layers.py CHECK_SHIM_LAYERS CC AR NM"""
import os
import subprocess
import sys
import tempfile

CHECK, CC, AR, NM = sys.argv[1:5]
LAYERS = ["platform", "trace", "record", "python", "stacks", "device", "sampler", "torch", "phases", "hooks", "shim"]
failures = 0


def tree(tmp, files):
    root = os.path.join(tmp, "preload")
    for path, text in files.items():
        os.makedirs(os.path.dirname(os.path.join(root, path)), exist_ok=True)
        with open(os.path.join(root, path), "w") as f:
            f.write(text)
    libs = []
    for layer in LAYERS:
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
        lib = os.path.join(tmp, "build", layer, "libcmt_shim_" + layer + ".a")
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
    "platform/log.h": "int log_fn(void);\n",
    "platform/log.c": '#include "log.h"\nint log_fn(void) { return 1; }\n',
    "record/recorder.h": "int record_fn(void);\n",
    "record/recorder.c": '#include "log.h"\n#include "recorder.h"\nint record_fn(void) { return log_fn(); }\n',
    "hooks/hook.c": '#include "recorder.h"\nint hook_fn(void);\nint hook_fn(void) { return record_fn(); }\n',
    "shim/shim.h": "void cmt_shim_ensure_loaded(void);\n",
    "shim/shim.c": '#include "shim.h"\nvoid cmt_shim_ensure_loaded(void) {}\nint shim_other(void);\n'
                   'int shim_other(void) { return 2; }\n',
}
case("a clean tree passes", clean, 0, "point down only")
case("the shim's ensure loaded, called from below, passes",
     dict(clean, **{"record/start.c": '#include "shim.h"\nint start_fn(void);\n'
                                      'int start_fn(void) { cmt_shim_ensure_loaded(); return 0; }\n'}),
     0, "upward only cmt_shim_ensure_loaded")
case("any other call into shim/ from below fails",
     dict(clean, **{"record/start.c": "int shim_other(void);\nint start_fn(void);\n"
                                      "int start_fn(void) { return shim_other(); }\n"}),
     1, "record: start.c.o uses shim_other, defined in shim (a higher layer)")
case("an upward include fails",
     dict(clean, **{"sampler/sampler.h": "int sampler_fn(void);\n",
                    "record/modules.c": '#include "sampler.h"\nint modules_fn(void);\nint modules_fn(void) { return 0; }\n'}),
     1, "preload/record/modules.c:1: includes sampler/sampler.h, a higher layer")
case("a call upward fails (the module map calling a feature)",
     dict(clean, **{"torch/torch_blocks.c": "int torch_scan(void);\nint torch_scan(void) { return 3; }\n",
                    "record/modules.c": "int torch_scan(void);\nint modules_fn(void);\n"
                                        "int modules_fn(void) { return torch_scan(); }\n"}),
     1, "record: modules.c.o uses torch_scan, defined in torch (a higher layer)")
case("a folder in no layer fails", dict(clean, **{"extras/x.c": "int x;\n"}), 1, "preload/extras/ is in no layer")
sys.exit(1 if failures else 0)
