#!/usr/bin/env bash
# Sets up cumemtrace, then profiles samples/leak_and_peak.cu: on the real GPU
# when one is present, otherwise on the project's simulated CUDA device.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh

cuda_root="${CUDA_ROOT:-/usr/local/cuda}"
out=build/quickstart
mkdir -p "$out"
rm -f "$out"/*.bin

if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  echo "quickstart: GPU found: $(nvidia-smi -L | head -n 1)"
  "$cuda_root/bin/nvcc" -g -O1 -cudart shared -o "$out/leak_and_peak" samples/leak_and_peak.cu
  env=()
else
  echo "quickstart: no GPU found: using the simulated CUDA device (tests/sim)"
  "$cuda_root/bin/nvcc" -g -O1 -cudart shared -L build/tests/sim -Xlinker -rpath="$PWD/build/tests/sim" \
    -o "$out/leak_and_peak" samples/leak_and_peak.cu
  env=(LD_LIBRARY_PATH="$PWD/build/tests/sim${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" SIMCUDA_CAPACITY=2GiB)
fi

env "${env[@]}" build/analyzer/cumemtrace run -o "$out/leak_and_peak.%p.bin" -- "$out/leak_and_peak"
echo
build/analyzer/cumemtrace report "$out"/leak_and_peak.*.bin
build/analyzer/cumemtrace report --format html -o "$out/leak_and_peak.html" "$out"/leak_and_peak.*.bin
echo
echo "quickstart: the same report as one HTML file: $out/leak_and_peak.html (open it in a browser)"
