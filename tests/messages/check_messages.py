#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Every diagnostic the user can see is in docs/messages.md, with a remedy.

Reads the C sources of the shim (preload/) and the analyzer (analyzer/),
finds the call sites of the few functions that print or build a diagnostic
(SINKS below), takes each one's format string (adjacent string literals
joined; both arms of a `cond ? "a" : "b"`), and fails when:

  - a message has no row in docs/messages.md (its first cell, the text with
    each printf conversion written as <PLACEHOLDER>);
  - a row's "What to do" cell is empty (a message must say what to do);
  - a row names a message no source prints any more (stale);
  - a line of a golden error (tests/golden/expected/err_*.err) is not a
    catalogued message;
  - a source prints to stderr by another way (fprintf(stderr, ...),
    fputs(..., stderr), perror, write(2)) outside the sinks and the
    exceptions listed in OTHER_STDERR, so the sinks stay the only way.

  check_messages.py SOURCE_ROOT [--list]   (--list: print what was found)
"""
import os
import re
import sys

# (call, index of its format argument, folders, literal required, prefix).
# call is a regular expression for what comes before the call's '('. The
# first four print on stderr; the rest fill a buffer that a printing sink
# shows (the reader's error and warnings, the analysis' message, check's
# errors: "cumemtrace: TRACE: MESSAGE"; the report's and the symbolizer's
# warnings, the report's first lines) or a NOTE of the trace (the report's
# "note:" lines). A buffer sink may pass on a message built elsewhere
# ("%s" of a variable); a printing one must name its text. prefix: only
# formats starting so are messages (the renderers' warning lines).
SINKS = [
    (r"\bcmt_log_warning", 0, ["preload"], True, ""),
    (r"\bcmt_log_info", 0, ["preload"], True, ""),
    (r"\bcmt_cli_error", 0, ["analyzer/cli"], True, ""),
    (r"\bcmt_cli_verdict", 1, ["analyzer/cli"], True, ""),
    (r"\bset_error", 1, ["analyzer/read"], True, ""),
    (r"\badd_warning", 1, ["analyzer/read"], True, ""),
    (r"\bsnprintf\s*\(\s*err\s*,\s*errlen\s*,", 0, ["analyzer/read", "analyzer/check", "analyzer/model/summary_file.c",
                                                        "analyzer/top", "analyzer/tui"], False, ""),
    (r"\bfail_at", 2, ["analyzer/model/summary_file.c"], True, ""),
    (r"\bsnprintf\s*\(\s*s->damage\s*,\s*sizeof s->damage\s*,", 0, ["analyzer/cli/cmd_summarize.c"], False, ""),
    (r"\bsnprintf\s*\(\s*err \+ used\s*,\s*errlen - used\s*,", 0, ["analyzer/check"], False, ""),
    (r"\bsnprintf\s*\(\s*t->error\s*,\s*sizeof t->error\s*,", 0, ["analyzer/check"], False, ""),
    (r"\bsnprintf\s*\(\s*a->message\s*,\s*sizeof a->message\s*,", 0, ["analyzer/analyses"], False, ""),
    (r"\bsnprintf\s*\(\s*msg\s*,\s*msglen\s*,", 0, ["analyzer/cli"], False, ""),
    (r"\badd_note", 1, ["analyzer/check"], True, ""),
    (r"\bmodule_note", 2, ["analyzer/symbolize"], True, ""),
    (r"\bmodule_warn", 2, ["analyzer/symbolize"], True, ""),
    (r"\bnodwarf_first\s*=\s*xasprintf", 0, ["analyzer/symbolize"], True, ""),
    (r"\bsnprintf\s*\(\s*s->nodwarf_msg\s*,\s*sizeof s->nodwarf_msg\s*,", 0, ["analyzer/symbolize"], True, ""),
    (r"\bsnprintf\s*\(\s*m->dropped_msg\s*,\s*sizeof m->dropped_msg\s*,", 0, ["analyzer/symbolize"], True, ""),
    (r"\bcmt_report_add_warning", 1, ["analyzer/model"], False, ""),
    (r"\bfprintf\s*\(\s*out\s*,", 0, ["analyzer/render"], False, "  warning: "),
    (r"\bcmt_recorder_note", 1, ["preload"], False, ""),
    (r"\bsay", 2, ["preload/torch"], True, ""),
    (r"\bsnprintf\s*\(\s*(?:why|r\.why|text|note_text)\s*,\s*sizeof\s*\w+(?:\.why)?\s*,", 0,
     ["preload/python/python_runtime.c", "preload/torch/torch_blocks.c"], True, ""),
]

# Printing to stderr by hand is allowed only in these files: the printing
# sinks themselves, the progress line and a benchmark's timing line.
OTHER_STDERR = {
    "analyzer/cli/main.c": "cmt_cli_error, cmt_cli_try_help and usage",
    "analyzer/cli/progress.c": "the progress line, erased when done",
    "analyzer/replay/feed.c": "the thread timing line of CUMEMTRACE_ANALYZER_STATS (benchmarks)",
    "preload/platform/log.c": "cmt_log_warning and cmt_log_info",
}

LITERAL = re.compile(r'"((?:[^"\\\n]|\\.)*)"')
CONVERSION = re.compile(r"%[-+ #0]*(?:\d+|\*)?(?:\.(?:\d+|\*))?(?:hh|h|ll|l|z|j|t|L)?[diouxXeEfgGcspm]")
PLACEHOLDER = re.compile(r"<[A-Z][A-Z0-9_ -]*>")
HOLE = "\x00"


def strip_comments(text):
    out, i, n = [], 0, len(text)
    while i < n:
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("\n" * text.count("\n", i, j))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text[i] in "\"'":
            q = text[i]
            j = i + 1
            while j < n and text[j] != q:
                j += 2 if text[j] == "\\" else 1
            out.append(text[i : j + 1])
            i = j + 1
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def call_args(text, start):
    """The top-level arguments of the call whose '(' is at start."""
    depth, i, args, cur = 0, start, [], []
    while i < len(text):
        c = text[i]
        if c == '"':
            m = LITERAL.match(text, i)
            if not m:
                break
            cur.append(m.group(0))
            i = m.end()
            continue
        if c == "'":
            j = text.index("'", i + 2 if text[i + 1] == "\\" else i + 1)
            cur.append(text[i : j + 1])
            i = j + 1
            continue
        if c in "([{":
            depth += 1
            if depth == 1:
                i += 1
                continue
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                args.append("".join(cur))
                return args
        elif c == "," and depth == 1:
            args.append("".join(cur))
            cur = []
            i += 1
            continue
        cur.append(c)
        i += 1
    return args


def unescape(s):
    return bytes(s, "utf-8").decode("unicode_escape").encode("latin-1").decode("utf-8")


def formats_of(arg):
    """The format strings an argument can be: each run of adjacent literals
    (PRIu64 and the like between them standing for their conversion)."""
    arg = re.sub(r"\bPRI([diouxX])(?:8|16|32|64|PTR|MAX)\b", r'"ll\1"', arg)
    out, run, pos = [], None, 0
    for m in LITERAL.finditer(arg):
        between = arg[pos : m.start()]
        if run is not None and between.strip() == "":
            run += m.group(1)
        else:
            if run is not None:
                out.append(run)
            run = m.group(1)
        pos = m.end()
    if run is not None:
        out.append(run)
    return [unescape(s) for s in out]


def normalize_source(fmt):
    return re.sub("%%|" + CONVERSION.pattern, lambda m: "%" if m.group(0) == "%%" else HOLE, fmt)


def normalize_doc(text):
    return PLACEHOLDER.sub(HOLE, text).strip()


def source_files(root, folder):
    if os.path.isfile(os.path.join(root, folder)):
        yield os.path.join(root, folder)
        return
    for dirpath, dirnames, filenames in os.walk(os.path.join(root, folder)):
        dirnames[:] = [d for d in dirnames if d not in ("node_modules",)]
        for f in sorted(filenames):
            if f.endswith((".c", ".cpp", ".h", ".inc")):
                yield os.path.join(dirpath, f)


def find_messages(root):
    """{normalized message: [(file:line, raw format)]}, [problems]"""
    found, problems = {}, []
    for pattern, index, folders, literal, prefix in SINKS:
        call = re.compile(pattern if pattern.endswith(",") else pattern + r"\s*\(")
        for folder in folders:
            for path in source_files(root, folder):
                text = strip_comments(open(path, encoding="utf-8").read())
                rel = os.path.relpath(path, root)
                for m in call.finditer(text):
                    line = text.count("\n", 0, m.start()) + 1
                    before = text[max(0, m.start() - 40) : m.start()]
                    if re.search(r"(void|\*|bool|int)\s*$", before):  # the definition or a declaration
                        continue
                    if pattern.endswith(","):  # the rest of the arguments, after the ones matched
                        args = call_args("(" + text[m.end() :], 0)
                    else:
                        args = call_args(text, m.end() - 1)
                    if len(args) <= index:
                        continue
                    fmts = [f for f in formats_of(args[index]) if f.startswith(prefix)]
                    if prefix:
                        fmts = [f[len(prefix) :] for f in fmts]
                    if not fmts and literal:
                        problems.append(f"{rel}:{line}: the format is not a string literal: {args[index].strip()}")
                    for f in fmts:
                        found.setdefault(normalize_source(f).strip(), []).append((f"{rel}:{line}", f.rstrip("\n")))
    return found, problems


STDERR_WAYS = re.compile(r"fprintf\s*\(\s*stderr|fputs\s*\([^;]*,\s*stderr\s*\)|fputc\s*\([^;]*stderr|"
                         r"\bperror\s*\(|write\s*\(\s*(?:2|STDERR_FILENO)\s*,|vfprintf\s*\(\s*stderr|dprintf\s*\(\s*2")


def stray_stderr(root):
    problems = []
    for folder in ("preload", "analyzer"):
        for path in source_files(root, folder):
            rel = os.path.relpath(path, root)
            if rel in OTHER_STDERR:
                continue
            text = strip_comments(open(path, encoding="utf-8").read())
            for m in STDERR_WAYS.finditer(text):
                line = text.count("\n", 0, m.start()) + 1
                problems.append(f"{rel}:{line}: prints to stderr by hand: use cmt_log_warning, cmt_log_info (preload) "
                                f"or cmt_cli_error (analyzer/cli) and catalogue the message")
    return problems


def read_catalogue(path):
    """[(line number, message cell, remedy cell)] of every table row whose
    first cell is a code span, under a header row naming 'What to do'."""
    rows, remedy_col = [], None
    for no, line in enumerate(open(path, encoding="utf-8"), 1):
        line = line.rstrip("\n")
        if not line.startswith("|"):
            remedy_col = None if not line.strip() else remedy_col
            continue
        cells = [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
        if any(c.lower() == "what to do" for c in cells):
            remedy_col = [c.lower() for c in cells].index("what to do")
            continue
        if remedy_col is None or set("".join(cells)) <= set("-: "):
            continue
        m = re.fullmatch(r"(`+) ?(.*?) ?\1", cells[0])
        if not m:
            continue
        remedy = cells[remedy_col] if remedy_col < len(cells) else ""
        rows.append((no, m.group(2), remedy))
    return rows


PREFIXES = ("cumemtrace: warning: ", "cumemtrace run: ", "cumemtrace: ")


def catalogued(text, rows):
    """Whether text is a catalogued message: a row's text with any text for
    each placeholder, a <MESSAGE> being itself a catalogued message."""
    for text_row in rows:
        parts = re.split(r"(<[A-Z][A-Z0-9_ -]*>)", text_row)
        holes = [p for p in parts if PLACEHOLDER.fullmatch(p)]
        if len(parts) == 3 and not parts[0] and not parts[2]:
            continue  # the row that is one placeholder matches anything
        pattern = "".join("(.+?)" if PLACEHOLDER.fullmatch(p) else re.escape(p) for p in parts)
        m = re.fullmatch(pattern, text)
        if m and all(catalogued(g, rows) for g, h in zip(m.groups(), holes) if h == "<MESSAGE>"):
            return True
    return False


def golden_errors(root, rows):
    """The goldens of the command's errors (tests/golden/expected/err_*.err)
    hold catalogued messages only."""
    problems = []
    expected = os.path.join(root, "tests", "golden", "expected")
    texts = [text for _, text, _ in rows]
    for name in sorted(os.listdir(expected)) if os.path.isdir(expected) else []:
        if not (name.startswith("err_") and name.endswith(".err")):
            continue
        for no, line in enumerate(open(os.path.join(expected, name), encoding="utf-8"), 1):
            line = line.rstrip("\n")
            if line.startswith("try `cumemtrace"):
                continue
            prefix = next((p for p in PREFIXES if line.startswith(p)), None)
            if prefix is None or not catalogued(line[len(prefix) :], texts):
                problems.append(f"tests/golden/expected/{name}:{no}: not a message of docs/messages.md: {line}")
    return problems


def main():
    root = sys.argv[1]
    catalogue = os.path.join(root, "docs", "messages.md")
    found, problems = find_messages(root)
    if "--list" in sys.argv:
        for key in sorted(found):
            for where, raw in found[key]:
                print(f"{where}\t{raw}")
        return 0
    problems += stray_stderr(root)
    rows = read_catalogue(catalogue)
    documented = {}
    for no, text, remedy in rows:
        key = normalize_doc(text)
        if key in documented:
            problems.append(f"docs/messages.md:{no}: `{text}` is catalogued twice (line {documented[key]})")
        documented[key] = no
        if not remedy or remedy in ("-", "—"):
            problems.append(f"docs/messages.md:{no}: `{text}` says nothing in 'What to do'")
        if key not in found:
            problems.append(f"docs/messages.md:{no}: `{text}` is printed by no source (stale row, or its "
                            f"placeholders do not match the format's conversions)")
    problems += golden_errors(root, rows)
    for key, sites in sorted(found.items()):
        if key not in documented:
            where, raw = sites[0]
            problems.append(f"{where}: message not in docs/messages.md: \"{raw}\" (a row whose first cell is "
                            f"the text with each conversion as <PLACEHOLDER>, and a 'What to do')")
    for p in problems:
        print(p)
    print(f"{len(found)} messages found in the sources, {len(rows)} catalogued, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
