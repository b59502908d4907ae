# SPDX-License-Identifier: MIT
"""Compares `cumemtrace report --json` of torch_phases.py with what the
script read from PyTorch (its --json figures):

  PASS/FAIL the report's phase at device 0's peak is the step and phase in
            which PyTorch's peak was (the first with the highest
            max_memory_allocated, or max_memory_reserved with the caching
            allocator: what it asks the device for);
  PASS/FAIL the steps the report found are the script's steps;
  PASS/FAIL the growth per step is 16 MiB per step (the history tensor;
            with the caching allocator a NOTE: it may serve it from its cache);
  NOTE      per phase, the report's peak next to PyTorch's.

    python phases_check.py NAME REPORT_JSON FIGURES_JSON allocated|reserved [REFERENCE_JSON]

With PYTORCH_NO_CUDA_MEMORY_CACHING=1 PyTorch keeps no statistics (its
max_memory_allocated() reads 0), so the PyTorch side of that check comes from
REFERENCE_JSON: the figures of the same script run with the caching
allocator, whose max_memory_allocated() counts the same tensors."""
import json
import sys

MiB = 1 << 20


def main():
    name, report_path, figures_path, measure = sys.argv[1:5]
    rep = json.load(open(report_path))
    fig = json.load(open(figures_path))
    if len(sys.argv) > 5:
        ref = json.load(open(sys.argv[5]))
        print(f"NOTE  {name}: PyTorch's figures per phase from {sys.argv[5]} (caching on: the same tensors)")
        fig = dict(fig, phases=ref["phases"])
    key = "max_allocated" if measure == "allocated" else "max_reserved"
    rows = fig["phases"]
    best = max(r[key] for r in rows)
    first = next(r for r in rows if r[key] == best)
    expected = f"step {first['step']} > {first['phase']}"
    fails = 0

    def verdict(ok, text):
        nonlocal fails
        fails += not ok
        print(f"{'PASS' if ok else 'FAIL'}  {name}: {text}")

    dev = next((d for d in rep["devices"] if d["ordinal"] == 0), None)
    got = dev and dev.get("peak_phase") and dev["peak_phase"]["path"]
    verdict(got == expected, f"phase at the peak: report {got!r}, PyTorch ({key}) {expected!r} "
                             f"(report peak {dev['peak_bytes'] / MiB:.1f} MiB, PyTorch {best / MiB:.1f} MiB)"
            if dev else "no device 0 in the report")
    steps = [s["name"] for s in rep["phases"].get("steps", [])]
    want = [f"step {i}" for i in sorted({r["step"] for r in rows})]
    verdict(steps == want, f"steps: report {len(steps)}, script {len(want)}")
    g = rep["phases"].get("step_growth", {})
    rate = g.get("rate_bytes_per_step", 0)
    text = (f"growth per step: report {rate / MiB:.2f} MiB per step over {g.get('samples')} step ends, "
            f"the script keeps {fig['keep_bytes'] / MiB:.0f} MiB per step")
    if measure == "allocated":
        verdict(g.get("growing") and abs(rate - fig["keep_bytes"]) <= fig["keep_bytes"] // 100, text)
    else:
        # the caching allocator may serve the kept tensor from its cache: a figure to read
        print(f"NOTE  {name}: {text} (caching allocator: segments, not tensors)")
    by_path = {p["path"]: p for p in rep["phases"].get("list", [])}
    for phase in ("forward", "backward", "optimizer"):
        p = by_path.get(f"<step> > {phase}")
        torch_peak = max(r[key] for r in rows if r["phase"] == phase)
        if p:
            print(f"NOTE  {name}: {phase}: report peak {p['peak_bytes'] / MiB:.1f} MiB in step "
                  f"{p['peak_step_index']}, allocated {p['allocated_bytes'] / MiB:.1f} MiB in "
                  f"{p['allocated_count']}, left live {p['left_live_bytes'] / MiB:.1f} MiB; PyTorch "
                  f"{key} {torch_peak / MiB:.1f} MiB")
        else:
            print(f"FAIL  {name}: no phase <step> > {phase} in the report")
            fails += 1
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
