# SPDX-License-Identifier: MIT
"""Checks `cumemtrace report --json` of jax_phases.py (issue 33 item 9):

  PASS/FAIL no phase path of the report goes inside an XLA compile range
            (XlaEmitLlvmIr, XlaCompileGpuAsm under XlaCompileBackend...):
            XLA's compiler is one phase per compiled module;
  PASS/FAIL the phase at device 0's peak names the program's phase
            (train_step) or none, never one of XLA's compiler ranges, and
            says the module when the peak fell inside compilation
            (peak_phase.xla_compilation);
  NOTE      the phase at the peak as the text says it, and the compile
            ranges seen.

    python xla_phases_check.py REPORT_JSON"""
import json
import sys

PREFIXES = ("XlaCompile", "XlaOptimize", "XlaEmit", "XlaAutotun")


def compiler(name):
    return name.startswith(PREFIXES)


def main():
    rep = json.load(open(sys.argv[1]))
    fails = 0
    phases = rep.get("phases") or {}
    if not phases.get("recorded"):
        print("FAIL  no NVTX range was recorded (is NVTX_INJECTION64_PATH set by another tool?)")
        return 1
    paths = [p["path"] for p in phases["list"]]
    nested = [p for p in paths if sum(compiler(part.strip()) for part in p.split(" > ")) > 1]
    roots = sorted({part.strip() for p in paths for part in p.split(" > ") if compiler(part.strip())})
    if nested:
        print(f"FAIL  {len(nested)} phase paths go inside a compile range, e.g. {nested[0]!r}")
        fails += 1
    else:
        print(f"PASS  no phase path inside a compile range ({len(paths)} phases, {len(roots)} compile ranges)")
    print(f"NOTE  compile ranges: {roots[:5]}{' ...' if len(roots) > 5 else ''}")
    dev = next(d for d in rep["devices"] if d["ordinal"] == 0)
    where = dev.get("peak_phase") or {}
    phase = where.get("phase") or ""
    print(f"NOTE  phase at the peak: {where.get('path')!r}")
    if any(compiler(part.strip()) for part in phase.split(" > ")):
        print(f"FAIL  the phase at the peak is one of XLA's compiler ranges: {phase!r}")
        fails += 1
    elif where.get("xla_compilation") and not where["xla_compilation"].get("range"):
        print(f"FAIL  xla_compilation names no range: {where['xla_compilation']!r}")
        fails += 1
    else:
        print(f"PASS  the phase at the peak is the program's ({phase or 'none'}), compilation said apart: "
              f"{where.get('xla_compilation')!r}")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
