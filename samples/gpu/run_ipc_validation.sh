#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Real-GPU validation of memory shared between processes (issue 21,
# docs/report.md "Memory mapped from another process"), on one GPU:
#
#   samples/gpu/run_ipc_validation.sh OUTDIR
#
#   1. torch: torch_ipc_share.py under `cumemtrace run` (traces
#      torch.%p.bin): a 64 MiB + 4000 B float32 tensor sent from the producer
#      to a consumer process with torch.multiprocessing (spawn). Must hold:
#      the consumer's trace maps (cudaIpcOpenMemHandle) exactly the
#      tensor's caching-allocator segment, torch.cuda.memory_snapshot()'s
#      total_size, which is the tensor's nbytes rounded up to 2 MiB; the
#      producer's trace exports an allocation of that size at that segment;
#      both sides carry the same handle fingerprint; the job-less report of
#      both traces still says "maps ... of" nothing wrong (NOTE lines); the
#      consumer's own device peak does not include the mapping.
#   2. cuda: ipc_pair.cu (plain nvcc, static cudart: the driver's cuIpc*
#      through cuGetProcAddress), producer and consumer, BYTES (default
#      100000001) allocated and exported; twice: the consumer closing the
#      mapping, then leaving it open (leak). Must hold: the consumer's trace
#      maps exactly cuMemGetAddressRange's size of the mapping; the
#      producer's export names its allocation of BYTES; the producer's open
#      of its own handle is a failed open with CUDA's error code; `check` of
#      the leaking consumer fails with a mapping-leak finding, of the
#      closing one passes; the fingerprints match.
#   3. pool: ipc_pool_pair.cu (plain nvcc, static cudart: the driver's
#      cuMemPool* and cuIpc* through cuGetProcAddress), a pool created with
#      cudaMemHandleTypePosixFileDescriptor, its descriptor sent to the
#      consumer over a Unix socket (SCM_RIGHTS) with the export data of one
#      of its allocations (BYTES) and the IPC handle of a pointer 4 KiB
#      inside a 64 MiB cudaMalloc. Must hold: the producer's exports name
#      the pool allocation of BYTES (offset 0) and the 64 MiB allocation at
#      offset 4096; the consumer maps cuMemGetAddressRange's size of the
#      imported pointer and of the IPC mapping, both closed (the pointer by
#      its cudaFreeAsync: no unmatched free), with the producer's
#      fingerprints; the header counts the pool's export and import calls;
#      the job-less report of both traces matches each mapping to the
#      producer's allocation.
#
# Uses $CMT_BUILD (default build/; the bundle's .gpu/build with
# LD_LIBRARY_PATH=$PWD/.gpu/lib works), $PYTHON (default python3) with
# PyTorch, nvcc under $CUDA_ROOT (default /usr/local/cuda). summary.txt has
# PASS/FAIL/NOTE lines; exit status 0 when none failed. Each run is
# time-limited (180 s). About a minute of GPU time. Parts 2 and 3 run on the
# simulated device too: CMT_NVCC_FLAGS="-cudart shared -L<build>/tests/sim"
# LD_LIBRARY_PATH=<build>/tests/sim (part 1 then fails: no PyTorch there).
set -uo pipefail

if [ $# -ne 1 ]; then
  echo "usage: $0 OUTDIR" >&2
  exit 2
fi
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="$(mkdir -p "$1" && cd "$1" && pwd)"
build="${CMT_BUILD:-$root/build}"
cli="$build/analyzer/cumemtrace"
py="${PYTHON:-python3}"
cuda_root="${CUDA_ROOT:-/usr/local/cuda}"
bytes="${BYTES:-100000001}"
summary="$out/summary.txt"
: >"$summary"
status=0
if [ ! -x "$cli" ]; then
  echo "run_ipc_validation: no cumemtrace in $build (set CMT_BUILD)" >&2
  exit 2
fi
export PYTHONUNBUFFERED=1
say() { echo "$*" | tee -a "$summary"; }
{
  echo "date: $(date -u)"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -n 1
  "$cli" --version
  "$py" -c 'import torch; print("torch", torch.__version__, torch.version.cuda)' 2>&1
} >"$out/environment.txt"

# Reads the reports' JSON and the programs' key=value output; prints
# PASS/FAIL/NOTE lines (tests below).
judge() { "$py" - "$@" <<'PY'
import json, sys
kind, out = sys.argv[1], sys.argv[2]
def load(p):
    with open(p) as f:
        return json.load(f)
def kv(p):
    d = {}
    for line in open(p):
        if "=" in line:
            k, v = line.strip().split("=", 1)
            d[k] = v.split(" ")[0]
    return d
lines = []
def res(ok, text):
    lines.append(("PASS " if ok else "FAIL ") + text)
def note(text):
    lines.append("NOTE " + text)
def site(x):
    f = x["frames"][x["site_frame"]] if x.get("site_frame") is not None else {"function": "?", "file": "", "line": 0}
    return f"{f['function']} at {f['file'].rsplit('/', 1)[-1]}:{f['line']}"
if kind == "torch":
    facts = load(f"{out}/torch_ipc.json")
    reps = [load(p) for p in sys.argv[3:]]
    cons = [r for r in reps if r.get("ipc", {}).get("opened_count")]
    prod = [r for r in reps if r.get("ipc", {}).get("exported")]
    rounded = (facts["nbytes"] + (2 << 20) - 1) // (2 << 20) * (2 << 20)
    note(f"torch {facts['torch']}: tensor nbytes {facts['nbytes']}, its segment {facts['segment_bytes']} B, "
         f"nbytes rounded up to 2 MiB {rounded}, consumer sum {facts['consumer_sum']}")
    res(facts["segment_bytes"] == rounded, "torch: the segment is the tensor's nbytes rounded up to 2 MiB")
    res(len(cons) == 1 and len(prod) == 1, f"torch: one consumer trace maps, one producer trace exports "
        f"({len(cons)}, {len(prod)} of {len(reps)} traces)")
    if cons and prod:
        c, p = cons[0]["ipc"], prod[0]["ipc"]
        maps = [(m["bytes"], m["count"], m["api"], m["closed"], m["handle"], site(m)) for m in c["mapped"]]
        exps = [(e["bytes"], e["api"], e["handle"], e["allocation_found"], site(e)) for e in p["exported"]]
        note(f"torch consumer mappings: {maps}")
        note(f"torch producer exports: {exps}")
        res(c["opened_bytes"] == facts["segment_bytes"],
            f"torch: the consumer mapped {c['opened_bytes']} B = the segment {facts['segment_bytes']} B")
        res(any(e["bytes"] == facts["segment_bytes"] and e["allocation_found"] for e in p["exported"]),
            "torch: the producer exported its allocation of the segment's size")
        res({m["handle"] for m in c["mapped"]} <= {e["handle"] for e in p["exported"]},
            "torch: the consumer's handles are the producer's")
        dev = cons[0]["devices"][0]["peak_bytes"] if cons[0]["devices"] else 0
        note(f"torch consumer: own device peak {dev} B, mapped peak {c['mapped_peak_bytes']} B, "
             f"{c['never_closed_count']} mapping(s) never closed (PyTorch closes when the storage dies)")
elif kind == "cuda":
    mode = sys.argv[3]
    p, c = kv(f"{out}/cuda_{mode}.producer.out"), kv(f"{out}/cuda_{mode}.consumer.out")
    rp, rc = load(f"{out}/cuda_{mode}.producer.json"), load(f"{out}/cuda_{mode}.consumer.json")
    note(f"cuda {mode}: producer {p}; consumer {c}")
    x, e = rc.get("ipc", {}), rp.get("ipc", {})
    mapped = int(c.get("consumer_mapped_bytes", -1))
    res(x.get("opened_count") == 1 and x.get("opened_bytes") == mapped,
        f"cuda {mode}: the consumer's trace maps {x.get('opened_bytes')} B in {x.get('opened_count')} mapping = "
        f"cuMemGetAddressRange's {mapped} B")
    note(f"cuda {mode}: the mapping is {mapped} B for {p.get('producer_requested')} B requested "
         f"(producer's own range {p.get('producer_range_bytes')} B)")
    exps = e.get("exported", [])
    res(len(exps) == 1 and exps[0]["allocation_found"] and exps[0]["bytes"] == int(p["producer_requested"]),
        f"cuda {mode}: the producer's export names its allocation of {p.get('producer_requested')} B: {exps and site(exps[0])}")
    res(bool(exps) and [m["handle"] for m in x.get("mapped", [])] == [exps[0]["handle"]],
        f"cuda {mode}: one fingerprint on both sides")
    res(e.get("failed_opens") == 1, f"cuda {mode}: the producer's open of its own handle is a failed open "
        f"(CUDA said {p.get('producer_open_own')})")
    closed = [m["closed"] for m in x.get("mapped", [])]
    res(closed == [mode == "closed"], f"cuda {mode}: closed {closed}")
    res(rc["devices"] and rc["devices"][0]["peak_bytes"] < mapped or not rc["devices"],
        f"cuda {mode}: the consumer's own peak ({rc['devices'][0]['peak_bytes'] if rc['devices'] else 0} B) "
        "holds none of the mapping")
elif kind == "pool":
    p, c = kv(f"{out}/pool.producer.out"), kv(f"{out}/pool.consumer.out")
    rp, rc = load(f"{out}/pool.producer.json"), load(f"{out}/pool.consumer.json")
    note(f"pool: producer {p}; consumer {c}")
    x, e = rc.get("ipc", {}), rp.get("ipc", {})
    exps = e.get("exported", [])
    note("pool: producer exports " + str([(x_["api"], x_["bytes"], x_.get("offset"), x_["allocation_found"], site(x_))
                                          for x_ in exps]))
    pe = [x_ for x_ in exps if "MemPoolExportPointer" in x_["api"]]
    ie = [x_ for x_ in exps if "IpcGetMemHandle" in x_["api"]]
    res(len(pe) == 1 and pe[0]["allocation_found"] and pe[0]["bytes"] == int(p["producer_requested"])
        and pe[0].get("offset") == 0 and site(pe[0]).startswith("pool_buffer"),
        f"pool: the pool pointer's export names its allocation of {p.get('producer_requested')} B at pool_buffer")
    res(len(ie) == 1 and ie[0]["allocation_found"] and ie[0]["bytes"] == 64 << 20 and ie[0].get("offset") == 4096
        and site(ie[0]).startswith("inner_buffer"),
        "pool: the interior export names the 64 MiB allocation at offset 4096 (inner_buffer)")
    maps = x.get("mapped", [])
    note("pool: consumer mappings " + str([(m["api"], m["bytes"], m["closed"], site(m)) for m in maps]))
    pm = [m for m in maps if "MemPoolImportPointer" in m["api"]]
    im = [m for m in maps if "IpcOpenMemHandle" in m["api"]]
    res(len(pm) == 1 and pm[0]["bytes"] == int(c.get("consumer_pool_mapped_bytes", -1)) and pm[0]["closed"],
        f"pool: the imported pointer maps cuMemGetAddressRange's {c.get('consumer_pool_mapped_bytes')} B, "
        "closed by its cudaFreeAsync")
    res(len(im) == 1 and im[0]["bytes"] == int(c.get("consumer_inner_mapped_bytes", -1)) and im[0]["closed"],
        f"pool: the interior handle maps {c.get('consumer_inner_mapped_bytes')} B (the whole allocation), closed")
    res(bool(pm and pe) and pm[0]["handle"] == pe[0]["handle"] and bool(im and ie) and im[0]["handle"] == ie[0]["handle"],
        "pool: one fingerprint on both sides, for each")
    res(rc.get("unmatched_frees") == 0, f"pool: no unmatched free in the consumer ({rc.get('unmatched_frees')})")
    calls = lambda r: {k: v for k, v in r.get("events_by_api", {}).items() if "MemPool" in k and "Alloc" not in k}
    note(f"pool: header counts, producer {calls(rp)}, consumer {calls(rc)}")
    res(sum(v for k, v in calls(rp).items() if "Export" in k) == 2 and
        sum(v for k, v in calls(rc).items() if "Import" in k) == 2,
        "pool: the header counts the pool's export (pool, pointer) and import (pool, pointer) calls")
print("\n".join(lines))
PY
}
record() { tee -a "$summary"; }

# --- 1. torch.multiprocessing ---------------------------------------------------
rm -f "$out"/torch.*.bin
timeout 180 "$cli" run -o "$out/torch.%p.bin" -- "$py" "$here/torch_ipc_share.py" "$out/torch_ipc.json" \
  >"$out/torch.stdout" 2>"$out/torch.stderr"
rc=$?
if [ $rc -ne 0 ] || [ ! -s "$out/torch_ipc.json" ]; then
  say "FAIL torch: torch_ipc_share.py exited $rc (torch.stderr)"
  status=1
else
  reports=()
  for t in "$out"/torch.*.bin; do
    "$cli" report "$t" >"${t%.bin}.report.txt" 2>&1
    "$cli" report --json "$t" >"${t%.bin}.json" 2>/dev/null
    reports+=("${t%.bin}.json")
  done
  "$cli" report "$out"/torch.*.bin >"$out/torch.both.report.txt" 2>&1
  judge torch "$out" "${reports[@]}" | record
fi

# --- 2. a CUDA C producer and consumer --------------------------------------------
nvcc="$cuda_root/bin/nvcc"
# CMT_NVCC_FLAGS: e.g. "-cudart shared -L<build>/tests/sim" to try it on the simulated device.
read -r -a nvcc_flags <<<"${CMT_NVCC_FLAGS:-}"
if ! "$nvcc" -g -O1 "${nvcc_flags[@]}" -o "$out/ipc_pair" "$here/ipc_pair.cu" -lcuda >"$out/nvcc.log" 2>&1; then
  say "FAIL cuda: nvcc failed (nvcc.log)"
  status=1
else
  for mode in closed leak; do
    dir="$out/cuda_$mode.x"
    rm -rf "$dir" && mkdir -p "$dir"
    extra=()
    [ $mode = leak ] && extra=(leak)
    CUMEMTRACE_OUTPUT="$out/cuda_$mode.producer.bin" LD_PRELOAD="$build/preload/libcumemtrace.so" \
      timeout 180 "$out/ipc_pair" producer "$dir" "$bytes" >"$out/cuda_$mode.producer.out" 2>&1 &
    prod=$!
    CUMEMTRACE_OUTPUT="$out/cuda_$mode.consumer.bin" LD_PRELOAD="$build/preload/libcumemtrace.so" \
      timeout 180 "$out/ipc_pair" consumer "$dir" "${extra[@]}" >"$out/cuda_$mode.consumer.out" 2>&1
    crc=$?
    wait $prod
    prc=$?
    if [ $prc -ne 0 ] || [ $crc -ne 0 ]; then
      say "FAIL cuda $mode: producer exited $prc, consumer $crc (cuda_$mode.*.out)"
      status=1
      continue
    fi
    for side in producer consumer; do
      "$cli" report "$out/cuda_$mode.$side.bin" >"$out/cuda_$mode.$side.report.txt" 2>&1
      "$cli" report --json "$out/cuda_$mode.$side.bin" >"$out/cuda_$mode.$side.json" 2>/dev/null
    done
    "$cli" check --format json "$out/cuda_$mode.consumer.bin" >"$out/cuda_$mode.consumer.check.json" 2>/dev/null
    chk=$?
    "$cli" check "$out/cuda_$mode.consumer.bin" >"$out/cuda_$mode.consumer.check.txt" 2>&1
    judge cuda "$out" $mode | record
    if [ $mode = leak ]; then
      n=$("$py" -c 'import json,sys; d=json.load(open(sys.argv[1])); print(sum(f["rule"] == "mapping-leak" for t in d["traces"] for f in t["findings"]))' "$out/cuda_$mode.consumer.check.json")
      [ $chk -eq 1 ] && [ "$n" = 1 ] && say "PASS cuda leak: check exits 1 with one mapping-leak finding" ||
        { say "FAIL cuda leak: check exited $chk with $n mapping-leak findings"; status=1; }
    else
      [ $chk -eq 0 ] && say "PASS cuda closed: check passes" || { say "FAIL cuda closed: check exited $chk"; status=1; }
    fi
  done
fi

# --- 3. a pool's allocation and an interior pointer, shared ------------------------
if ! "$nvcc" -g -O1 "${nvcc_flags[@]}" -o "$out/ipc_pool_pair" "$here/ipc_pool_pair.cu" -lcuda >"$out/nvcc_pool.log" 2>&1; then
  say "FAIL pool: nvcc failed (nvcc_pool.log)"
  status=1
else
  dir="$out/pool.x"
  rm -rf "$dir" && mkdir -p "$dir"
  CUMEMTRACE_OUTPUT="$out/pool.producer.bin" LD_PRELOAD="$build/preload/libcumemtrace.so" \
    timeout 180 "$out/ipc_pool_pair" producer "$dir" "$bytes" >"$out/pool.producer.out" 2>&1 &
  prod=$!
  CUMEMTRACE_OUTPUT="$out/pool.consumer.bin" LD_PRELOAD="$build/preload/libcumemtrace.so" \
    timeout 180 "$out/ipc_pool_pair" consumer "$dir" >"$out/pool.consumer.out" 2>&1
  crc=$?
  wait $prod
  prc=$?
  if [ $prc -ne 0 ] || [ $crc -ne 0 ]; then
    say "FAIL pool: producer exited $prc, consumer $crc (pool.*.out)"
    status=1
  else
    for side in producer consumer; do
      "$cli" report "$out/pool.$side.bin" >"$out/pool.$side.report.txt" 2>&1
      "$cli" report --json "$out/pool.$side.bin" >"$out/pool.$side.json" 2>/dev/null
    done
    "$cli" report "$out/pool.producer.bin" "$out/pool.consumer.bin" >"$out/pool.both.report.txt" 2>&1
    judge pool "$out" | record
    n=$(grep -c "^  ipc: .* maps .* of .*'s allocation from " "$out/pool.both.report.txt")
    [ "$n" = 2 ] && say "PASS pool: the report of both traces matches 2 mappings to the producer's allocations" ||
      say "NOTE pool: the report of both traces matched $n mappings (pool.both.report.txt; no job: matched only by a launcher's job)"
  fi
fi
grep -q '^FAIL' "$summary" && status=1
say "done: $(grep -c '^PASS' "$summary") passed, $(grep -c '^FAIL' "$summary") failed"
exit $status
