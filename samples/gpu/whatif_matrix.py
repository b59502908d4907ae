#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The what-if matrix (issue 28): every trace of run_tensor_validation.sh's
`matrix` part replayed by `cumemtrace whatif` under every setting of the
matrix, each prediction held against the real run under that setting
(PyTorch's own torch.cuda.max_memory_reserved() and whether it raised
torch.OutOfMemoryError, from json/NAME.json).

    whatif_matrix.py DATA [--cli PATH] [--markdown OUT.md] [--json OUT.json]

DATA is the directory run_tensor_validation.sh wrote (json/, runs.tsv, and
the traces in traces-matrix/ or matrix/, or traces-matrix.tar.xz, unpacked
to a temporary directory when needed). A prediction must equal the real reserve
to the byte where both runs asked for the same tensors in the same order on
one stream (the replay's requests digest, docs/report.md, "What if"; a
trace replayed under its own settings always), and be within 1% otherwise;
the out-of-memory verdict must match in every case. Prints the matrix per
workload and the cells that miss; exit status 1 when one misses, 2 when
DATA holds no matrix.
"""
import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile

SETTINGS = ["", "expandable_segments:True", "max_split_size_mb:128", "max_split_size_mb:512",
            "roundup_power2_divisions:4", "garbage_collection_threshold:0.6"]
WORKLOADS = ["train", "hf", "varlen", "frag", "capacity"]
TOLERANCE = 0.01


def tag_of(setting):
    t = setting.replace(":", "_").replace(",", "_")
    return t or "default"


# run_tensor_validation.sh names the varlen run under the garbage
# collection threshold m_varlen_gc, the frag one by its tag
ALIASES = {"m_varlen_gc": "m_varlen_garbage_collection_threshold_0.6"}


def run_name(path):
    name = os.path.basename(path).rsplit(".", 1)[0]
    return ALIASES.get(name, name)


def traces_dir(data, scratch):
    for sub in ("traces-matrix", "matrix"):
        d = os.path.join(data, sub)
        if os.path.isdir(d):
            return d
    tar = os.path.join(data, "traces-matrix.tar.xz")
    if not os.path.exists(tar):
        return None
    with tarfile.open(tar) as t:
        t.extractall(scratch)
    return os.path.join(scratch, "traces-matrix")


def whatif(cli, trace):
    args = [cli, "whatif", "--json", "--no-symbols"]
    for s in SETTINGS:
        args += ["--set", s or "default"]
    p = subprocess.run(args + [trace], capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"{trace}: cumemtrace whatif exited {p.returncode}: {p.stderr.strip()}")
    return json.loads(p.stdout)


def device0(w):
    devs = w.get("devices") or []
    return devs[0] if devs else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("data")
    ap.add_argument("--cli", default=os.path.join(os.path.dirname(__file__), "..", "..", "build", "analyzer",
                                                  "cumemtrace"))
    ap.add_argument("--markdown")
    ap.add_argument("--json")
    a = ap.parse_args()
    scratch = tempfile.mkdtemp(prefix="cmt-matrix-")
    try:
        tdir = traces_dir(a.data, scratch)
        if not tdir:
            print(f"whatif_matrix: no traces-matrix/ or traces-matrix.tar.xz in {a.data}", file=sys.stderr)
            return 2
        real, replays = {}, {}
        for path in sorted(glob.glob(os.path.join(a.data, "json", "m_*.json"))):
            with open(path) as f:
                real[run_name(path)] = json.load(f)
        for path in sorted(glob.glob(os.path.join(tdir, "m_*.bin"))):
            replays[run_name(path)] = whatif(a.cli, path)
        cells, lines, notes = [], [], []
        for wl in WORKLOADS:
            header = "| recorded under \\ replayed under | " + " | ".join(s or "default" for s in SETTINGS) + " |"
            body = []
            for rec in SETTINGS:
                name = f"m_{wl}_{tag_of(rec)}"
                if name not in replays:
                    continue
                dev = device0(replays[name])
                row = [f"{rec or 'default'}"]
                if not dev:
                    notes.append(f"NOTE {wl}: recorded under {rec or 'default'}: nothing to replay "
                                 f"({replays[name]['reason']})")
                    body.append("| " + " | ".join(row + ["nothing to replay"] * len(SETTINGS)) + " |")
                    continue
                for tgt in SETTINGS:
                    cell = cell_of(wl, rec, tgt, dev, replays, real)
                    if cell:
                        cells.append(cell)
                    row.append(cell["text"] if cell else "-")
                body.append("| " + " | ".join(row) + " |")
            if body:
                lines += [f"\n### {wl}\n", header, "|" + "---|" * (len(SETTINGS) + 1)] + body
        misses = [c for c in cells if c["checked"] and not c["ok"]]
        checked = [c for c in cells if c["checked"]]
        lines.append(f"\n{len(checked)} predictions held against a real run: {len(checked) - len(misses)} within "
                     f"their bound (to the byte: {sum(1 for c in checked if c['exact_required'])}, "
                     f"{sum(1 for c in checked if c['exact_required'] and c['ok'])} met), {len(misses)} missed; "
                     f"equal to the byte: {sum(1 for c in checked if c['predicted'] == c['real'])}; "
                     f"out-of-memory verdicts matched: {sum(1 for c in checked if c['oom_ok'])} of {len(checked)}")
        lines += notes
        for c in misses:
            lines.append(f"MISS {c['workload']}: recorded under {c['recorded'] or 'default'}, replayed under "
                         f"{c['target'] or 'default'}: predicted {c['predicted']} B (out of memory: "
                         f"{c['predicted_oom']}), real {c['real']} B (out of memory: {c['real_oom']})")
        text = "\n".join(lines).lstrip("\n") + "\n"
        print(text, end="")
        if a.markdown:
            with open(a.markdown, "w") as f:
                f.write(text)
        if a.json:
            with open(a.json, "w") as f:
                json.dump(cells, f, indent=1)
        return 1 if misses else 0
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def cell_of(wl, rec, tgt, dev, replays, real):
    if not dev:
        return None
    rows = {r["setting"]: r for r in dev["settings"]}
    r = rows.get(tgt)
    if r is None:
        return None
    target_run = f"m_{wl}_{tag_of(tgt)}"
    cell = {"workload": wl, "recorded": rec, "target": tgt, "predicted": r["peak_reserved_bytes"],
            "predicted_oom": r["out_of_memory"], "checked": target_run in real, "real": None, "real_oom": None,
            "exact_required": False, "ok": True, "oom_ok": True}
    if not cell["checked"]:
        cell["text"] = f"{r['peak_reserved_bytes']} (no real run)"
        return cell
    j = real[target_run]
    cell["real"], cell["real_oom"] = j["max_memory_reserved"], j.get("oom") is not None
    other = device0(replays.get(target_run) or {})
    same_requests = other is not None and other["requests_digest"] == dev["requests_digest"]
    cell["exact_required"] = rec == tgt or (same_requests and dev["streams"] == 1)
    diff = cell["predicted"] - cell["real"]
    rel = abs(diff) / cell["real"] if cell["real"] else float(diff != 0)
    within = diff == 0 if cell["exact_required"] else rel <= TOLERANCE
    cell["oom_ok"] = cell["predicted_oom"] == cell["real_oom"]
    cell["ok"] = within and cell["oom_ok"]
    mark = "✓" if cell["ok"] else "✗"
    oom = ", OOM" if cell["predicted_oom"] else ""
    if diff == 0:
        cell["text"] = f"{mark} {cell['predicted']}{oom}"
    else:
        pct = f"{100.0 * diff / cell['real']:+.2f}%" if cell["real"] else "real 0"
        cell["text"] = f"{mark} {cell['predicted']} vs {cell['real']} ({pct}){oom}"
    if not cell["oom_ok"]:
        cell["text"] += f" (real: {'OOM' if cell['real_oom'] else 'no OOM'})"
    return cell


if __name__ == "__main__":
    sys.exit(main())
