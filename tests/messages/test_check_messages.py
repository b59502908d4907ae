#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""check_messages.py fails on each thing it is there to catch: small source
trees, each breaking one rule, must fail with the problem named; the tree
that breaks none must pass."""
import os
import subprocess
import sys
import tempfile

CHECKER = sys.argv[1]

CATALOGUE = """# Messages

| Message | When | What to do |
|---|---|---|
| `cannot create trace file <PATH>: <ERROR>; running without tracing` | never | set CUMEMTRACE_OUTPUT |
| `<COMMAND>: unknown option '<OPTION>'` | never | see --help |
"""

SHIM = """#include "log.h"
void f(const char *p, const char *e)
{
    cmt_log_warning("cannot create trace file %s: %s; running without tracing", p, e);
}
"""

CLI = """#include "cli.h"
void g(const char *c, const char *o)
{
    cmt_cli_error("%s: unknown option '%s'", c, o);
}
"""


def tree(catalogue=CATALOGUE, shim=SHIM, cli=CLI, extra=None):
    d = tempfile.mkdtemp(prefix="cmt-messages-")
    files = {"docs/messages.md": catalogue, "preload/record/recorder.c": shim, "analyzer/cli/cmd_x.c": cli}
    files.update(extra or {})
    for rel, text in files.items():
        os.makedirs(os.path.dirname(os.path.join(d, rel)), exist_ok=True)
        with open(os.path.join(d, rel), "w") as f:
            f.write(text)
    return d


def run(d):
    p = subprocess.run([sys.executable, CHECKER, d], capture_output=True, text=True)
    return p.returncode, p.stdout


failures = []


def expect(name, d, status, needle):
    rc, out = run(d)
    if rc != status or needle not in out:
        failures.append(f"{name}: status {rc} (wanted {status}), output lacks {needle!r}:\n{out}")


expect("clean tree", tree(), 0, "2 messages found in the sources, 2 catalogued, 0 problems")
expect("a message without a row",
       tree(shim=SHIM.replace("}\n", '    cmt_log_warning("trace %s is odd", p);\n}\n')), 1,
       'preload/record/recorder.c:5: message not in docs/messages.md: "trace %s is odd"')
expect("a row without a remedy", tree(catalogue=CATALOGUE.replace("| see --help |", "|  |")), 1,
       "`<COMMAND>: unknown option '<OPTION>'` says nothing in 'What to do'")
expect("a stale row", tree(cli=CLI.replace("unknown option", "no such option")), 1,
       "`<COMMAND>: unknown option '<OPTION>'` is printed by no source")
expect("placeholders that do not match", tree(catalogue=CATALOGUE.replace("<PATH>: <ERROR>", "<PATH>")), 1,
       "message not in docs/messages.md: \"cannot create trace file %s: %s; running without tracing\"")
expect("a print to stderr by hand",
       tree(extra={"analyzer/cli/cmd_y.c": 'void h(void) { fprintf(stderr, "oops\\n"); }\n'}), 1,
       "analyzer/cli/cmd_y.c:1: prints to stderr by hand")
expect("a format that is not a literal",
       tree(shim=SHIM.replace("}\n", "    cmt_log_warning(p);\n}\n")), 1,
       "preload/record/recorder.c:5: the format is not a string literal: p")
expect("both arms of a ternary",
       tree(cli=CLI.replace("}\n", '    cmt_cli_error(c ? "x: no trace given" : "x: one trace at a time");\n}\n')), 1,
       '"x: one trace at a time"')

expect("a golden error that is catalogued",
       tree(extra={"tests/golden/expected/err_a.err": "cumemtrace: report: unknown option '--x'\n"
                                                       "try `cumemtrace report --help`\n"}), 0, "0 problems")
expect("a golden error that is not",
       tree(extra={"tests/golden/expected/err_b.err": "cumemtrace: report: no such thing\n"}), 1,
       "tests/golden/expected/err_b.err:1: not a message of docs/messages.md")

for f in failures:
    print(f)
print(f"{10 - len(failures)} of 10 cases caught")
sys.exit(1 if failures else 0)
