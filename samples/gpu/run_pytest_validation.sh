#!/usr/bin/env bash
# The pytest plugin on a real GPU (docs/python.md): the wheel installed with
# `pip install --no-deps --target`, PyTorch's tests of
# samples/gpu/pytest_torch/test_torch_memory.py run with `pytest
# --cumemtrace`, and what each test must conclude checked.
#
#   samples/gpu/run_pytest_validation.sh OUTDIR
#
# The wheel: $CMT_WHEEL, else .gpu/wheel/cumemtrace-*.whl (scripts/gpu_bundle.sh
# copies build/wheel/'s there), else build/wheel/cumemtrace-*.whl
# (scripts/wheel.sh). PYTHON (default python3) must have torch and pytest.
# Everything lands in OUTDIR: pip.log, environment.txt, pytest.txt (the
# plugin's output to quote), junit.xml, report/ (--cumemtrace-report: the
# trace and one JSON per test that failed on GPU memory), summary.txt (one
# PASS/FAIL line per expectation). Exit status 0 when all passed.
set -uo pipefail
out="${1:?usage: samples/gpu/run_pytest_validation.sh OUTDIR}"
root="$(cd "$(dirname "$0")/../.." && pwd)"
python="${PYTHON:-python3}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
wheel="${CMT_WHEEL:-}"
[ -n "$wheel" ] || wheel="$(ls "$root"/.gpu/wheel/cumemtrace-*.whl 2>/dev/null | head -n1)"
[ -n "$wheel" ] || wheel="$(ls "$root"/build/wheel/cumemtrace-*.whl 2>/dev/null | head -n1)"
if [ -z "$wheel" ]; then
  echo "run_pytest_validation: no wheel: build it with scripts/wheel.sh (then scripts/gpu_bundle.sh), or set CMT_WHEEL" >&2
  exit 2
fi
site="$out/site"
rm -rf "$site"
if ! "$python" -m pip install --no-deps --no-index --target "$site" "$wheel" >"$out/pip.log" 2>&1; then
  tail -n 20 "$out/pip.log" >&2
  echo "run_pytest_validation: pip install failed (whole log: $out/pip.log)" >&2
  exit 2
fi
export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
{
  echo "wheel: $wheel"
  "$python" -c 'import sys, torch, pytest, cumemtrace; print("python", sys.version.split()[0]); print("torch", torch.__version__, "cuda", torch.version.cuda); print("pytest", pytest.__version__); print("cumemtrace package", cumemtrace.__file__)'
  "$site/bin/cumemtrace" version
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null
} >"$out/environment.txt" 2>&1
cd "$root/samples/gpu/pytest_torch"
# The plugin comes through the wheel's entry point; pytest restarts itself
# under the wheel's `cumemtrace run`.
"$python" -m pytest -v -p no:cacheprovider --cumemtrace --cumemtrace-report "$out/report" \
  --junitxml "$out/junit.xml" test_torch_memory.py >"$out/pytest.txt" 2>&1
status=$?
echo "pytest exit status: $status" >>"$out/pytest.txt"
"$python" - "$out" "$root/samples/gpu/pytest_torch/test_torch_memory.py" "$status" <<'PY'
import os, re, sys, xml.etree.ElementTree as ET
out, source, status = sys.argv[1], sys.argv[2], int(sys.argv[3])
lines = {m.group(1): n for n, l in enumerate(open(source), 1) for m in [re.search(r"# @(\w+)", l)] if m}
text = open(os.path.join(out, "pytest.txt")).read()
cases = {}
for tc in ET.parse(os.path.join(out, "junit.xml")).iter("testcase"):
    f = tc.find("failure")
    cases[tc.get("name")] = {"failure": f.get("message") if f is not None else None,
                             "error": tc.find("error") is not None,
                             "props": {p.get("name"): p.get("value") for p in tc.iter("property")}}
results = []
def expect(ok, what):
    results.append(("PASS" if ok else "FAIL") + " " + what)
kept = cases.get("test_keeps_a_tensor_in_a_module_list", {})
expect(bool(kept.get("failure")) and "GPU leak: 4.0 MiB (4194304 B) in 1 tensor" in kept["failure"]
       and f"test_torch_memory.py:{lines['kept']}" in kept["failure"],
       f"the tensor kept in a module-level list fails its test at line {lines['kept']}: {kept.get('failure')}")
train = cases.get("test_trains_a_small_model_and_frees_it", {})
expect(train and not train["failure"] and not train["error"],
       f"training a small model and freeing it passes: {train.get('failure')}")
inf = cases.get("test_inference_with_the_module_fixture", {})
expect(inf and not inf["failure"], f"the module fixture's model is not charged to the test: {inf.get('failure')}")
expect(re.search(r"MiB\s+encoder \(module\)", text) is not None, "the module fixture is listed as holding its model")
over = cases.get("test_over_its_budget", {})
expect(bool(over.get("failure")) and over["failure"].startswith("GPU memory: the test peaked at")
       and "over its limit of 64.0 MiB (67108864 B)" in over["failure"],
       f"limit_gpu_memory('64 MiB') catches the 256 MiB tensor: {over.get('failure')}")
within = cases.get("test_within_its_budget", {})
expect(within and not within["failure"], f"16 MiB within its 64 MiB budget passes: {within.get('failure')}")
warm = cases.get("test_cache_filled_on_first_call", {})
expect(warm and not warm["failure"], f"gpu_leaks(warmups=1): the cache filled by the warm-up is no leak: {warm.get('failure')}")
expect(status == 1, f"pytest's exit status is 1 (tests failed): {status}")
expect(os.path.isdir(os.path.join(out, "report")) and any(f.endswith(".bin") for f in os.listdir(os.path.join(out, "report"))),
       "--cumemtrace-report kept the trace")
with open(os.path.join(out, "summary.txt"), "w") as f:
    f.write("\n".join(results) + "\n")
print("\n".join(results))
sys.exit(0 if all(r.startswith("PASS") for r in results) else 1)
PY
