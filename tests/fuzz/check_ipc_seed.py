#!/usr/bin/env python3
"""The seed generator's IPC trace (gen_corpus.c, scenario_ipc) read back by
`cumemtrace report --json`: every figure of its sharing as the scenario
makes it, so the seed keeps doing what it says.

    check_ipc_seed.py CUMEMTRACE GEN_CORPUS"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

MiB = 1 << 20


def main():
    cli, gen = sys.argv[1], sys.argv[2]
    d = tempfile.mkdtemp(prefix="cmt-ipc-seed-")
    try:
        subprocess.run([gen, os.path.join(d, "seeds")], check=True, timeout=60)
        p = subprocess.run([cli, "report", "--json", "--no-symbols", os.path.join(d, "seeds", "ipc")],
                           capture_output=True, text=True, timeout=60)
        if p.returncode != 0:
            sys.exit(f"report status {p.returncode}: {p.stderr}")
        r = json.loads(p.stdout)
        x = r["ipc"]
        got = {k: x[k] for k in ("opened_bytes", "opened_count", "never_closed_bytes", "never_closed_count",
                                 "failed_opens", "failed_imports", "failed_closes", "unmatched_closes",
                                 "failed_exports", "imported_handles", "imported_handles_released")}
        want = {
            # 1111 (1 MiB, opened twice: one mapping), 2222 (2 MiB), the VMM
            # mapping (2 MiB), two pool pointers (1 MiB each)
            "opened_bytes": 7 * MiB, "opened_count": 5,
            "never_closed_bytes": 3 * MiB, "never_closed_count": 2,  # 2222 and the pool pointer on device 1
            "failed_opens": 1, "failed_imports": 2, "failed_closes": 1, "unmatched_closes": 1,
            "failed_exports": 2,
            # the VMM handle imported twice and released twice
            "imported_handles": 2, "imported_handles_released": 2,
        }
        if got != want:
            sys.exit(f"ipc figures: expected {want}, got {got}")
        if r["unmatched_frees"] != 0:
            sys.exit(f"unmatched frees: expected 0 (the second cuMemRelease releases the second import), "
                     f"got {r['unmatched_frees']}")
        print("ipc seed: ok")
    finally:
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
