# SPDX-License-Identifier: MIT
"""End-to-end: programs that reach the CUDA driver every way a real one does
(the static runtime's dlopen + cuGetProcAddress, linking with -lcuda, the
dynamic runtime on top of the driver, VMM, a second interposer), run under
the shim on the simulated device. Every figure asserted follows from the
program's source."""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
import cmtest  # noqa: E402
from cmtest import MiB, check, eq  # noqa: E402

KiB = 1024


def sites(rows):
    return [(cmtest.first_function(s), s["api"], s["bytes"], s["count"]) for s in rows]


# --- the static runtime's way: dlopen, dlsym, cuGetProcAddress ---------------

# What the program sees for each pointer it fetched, under the shim; without
# the shim every "shim" reads "driver" and the rest is identical.
LOOKUP_UNDER_SHIM = """\
dlsym cuGetProcAddress_v2: shim
cuGetProcAddress@11030: shim =cuGetProcAddress
cuGetProcAddress@12000: shim =cuGetProcAddress_v2
cuInit@2000: driver =cuInit
cuMemGetInfo@3020: driver =cuMemGetInfo_v2
cuMemAlloc@3020: shim =cuMemAlloc_v2
cuMemFree@3020: shim =cuMemFree_v2
cuMemAlloc@13000: shim =cuMemAlloc_v2
cuMemAlloc@2000: driver =cuMemAlloc
v1 lookup cuMemAlloc@3020: shim
cuMemAllocAsync@11020: shim =cuMemAllocAsync
cuMemAllocAsync@11020/ptds: shim =cuMemAllocAsync_ptsz
cuMemFreeAsync@11020/ptds: shim =cuMemFreeAsync_ptsz
cuMemAllocFromPoolAsync@11020/ptds: shim =cuMemAllocFromPoolAsync_ptsz
per-thread calls: 4
cuMemAlloc@14000: driver =cuMemAlloc_v3_sim
cuMemAllocAsync@14000: driver =cuMemAllocAsync_v2_sim
cuMemAllocAsync@14000/ptds: driver =cuMemAllocAsync_v2_sim_ptsz
done
"""


def test_static_style_lookup():
    prog = [cmtest.program("driver_lookup")]
    native = cmtest.run(prog, preload=False)
    eq(native.proc.returncode, 0, f"exit status without the shim: {native.proc.stderr}")
    eq(native.proc.stdout, LOOKUP_UNDER_SHIM.replace(": shim", ": driver"), "pointers without the shim")
    r = cmtest.run(prog)
    eq(r.proc.returncode, 0, f"exit status: {r.proc.stderr}")
    # Hooks where the driver's pointer has the ABI our hook has; the 32-bit
    # v1 ABI (2000), the simulated future one (14000) and every entry point
    # we do not hook are the driver's own functions.
    eq(r.proc.stdout, LOOKUP_UNDER_SHIM, "pointers under the shim")

    # CUMEMTRACE_DISABLE=1 is pure pass-through: not one substitute.
    off = cmtest.run(prog, env={"CUMEMTRACE_DISABLE": "1"})
    eq(off.proc.returncode, 0, f"exit status, disabled: {off.proc.stderr}")
    eq(off.proc.stdout, native.proc.stdout, "pointers with CUMEMTRACE_DISABLE=1")
    eq(off.traces, [], "no trace when disabled")
    cmtest.cleanup(off)

    rep = cmtest.report(r.trace)
    eq(rep["events_by_api"], {
        "cuMemAlloc": 3, "cuMemFree": 4, "cuMemAllocManaged": 1, "cuMemAllocHost": 1, "cuMemHostAlloc": 1,
        "cuMemFreeHost": 2, "cuMemAllocAsync": 2, "cuMemFreeAsync": 4, "cuMemAllocFromPoolAsync": 2},
        "events by API (the future-ABI allocation passes through unrecorded)")
    eq(rep["unmatched_frees"], 1, "the future-ABI allocation's release is the only unmatched one")
    d0 = cmtest.device(rep, 0)
    eq((d0["peak_bytes"], d0["peak_allocations"]), (8 * MiB, 4), "device peak: the four pool allocations")
    eq(d0["peak_by_kind"], {"async-pool": 8 * MiB}, "peak by kind")
    eq(sorted((cmtest.first_function(s), s["api"], s["bytes"]) for s in d0["top_sites_at_peak"]),
       [("pooled", "cuMemAllocAsync", 2 * MiB), ("pooled", "cuMemAllocAsync", 4 * MiB),
        ("pooled", "cuMemAllocFromPoolAsync", 1 * MiB), ("pooled", "cuMemAllocFromPoolAsync", 1 * MiB)],
       "sites at the peak, named by the user's function")
    eq(d0["live_at_exit_bytes"], 7 * MiB, "device live at exit")
    eq([(m["ordinal"], m["peak_bytes"], m["live_at_exit_bytes"]) for m in rep["managed"]], [(0, 6 * MiB, 0)],
       "managed")
    eq([(h["peak_bytes"], h["live_at_exit_bytes"]) for h in rep["pinned_host"]], [(3 * MiB, 0)], "pinned host")
    eq(sites(rep["leaks"]["sites"]), [("leak", "cuMemAlloc", 7 * MiB, 1)], "leaks")
    eq([f["function"] for f in rep["leaks"]["sites"][0]["frames"]], ["leak", "main"], "frames of the leak")
    cmtest.cleanup(native)
    cmtest.cleanup(r)


# --- linked with -lcuda: the exports by name -------------------------------

CHAIN_EVENTS = {"cudaMalloc": 3, "cudaFree": 3, "cuMemAlloc": 4, "cuMemFree": 4}

def test_linked_by_name():
    # chain is linked with -lcuda: cuMemAlloc_v2 and cuMemFree_v2 by name,
    # cuGetProcAddress by name, dlsym on libcuda's handle, on top of the
    # dynamic runtime's cudaMalloc. (vmm calls the VMM entry points by name.)
    r = cmtest.run([cmtest.program("chain")])
    eq(r.proc.returncode, 0, f"exit status: {r.proc.stderr}")
    eq(r.proc.stdout, "done\n", "program output")
    rep = cmtest.report(r.trace)
    eq(rep["events_by_api"], CHAIN_EVENTS, "events by API")
    d0 = cmtest.device(rep, 0)
    eq((d0["peak_bytes"], d0["peak_allocations"]), (9 * MiB, 2), "peak: the driver allocations (4 + 5 MiB)")
    eq(sites(d0["top_sites_at_peak"]), [("driver_side", "cuMemAlloc", 9 * MiB, 2)], "sites at the peak")
    eq(d0["live_at_exit_bytes"], 0, "all freed")
    eq(rep["unmatched_frees"], 0, "every release matched")
    cmtest.cleanup(r)


# --- dynamic runtime over hooked driver: one event per user call -------------

RUNTIME_APIS = {
    "cudaMalloc": 1, "cudaMallocManaged": 1, "cudaMallocHost": 1, "cudaHostAlloc": 1, "cudaMallocPitch": 1,
    "cudaMalloc3D": 1, "cudaMallocAsync": 1, "cudaMallocFromPoolAsync": 1, "cudaMallocArray": 1,
    "cudaMalloc3DArray": 1, "cudaFreeAsync": 2, "cudaFreeArray": 2, "cudaFree": 4, "cudaFreeHost": 1}
DRIVER_APIS = {
    "cuMemAlloc": 1, "cuMemAllocManaged": 1, "cuMemHostAlloc": 2, "cuMemAllocPitch": 2, "cuMemAllocAsync": 1,
    "cuMemAllocFromPoolAsync": 1, "cuArrayCreate": 1, "cuArray3DCreate": 1, "cuMemFreeAsync": 2,
    "cuArrayDestroy": 2, "cuMemFree": 4, "cuMemFreeHost": 1}
PITCHED, VOLUME, ARRAY_2D, ARRAY_3D = 1024 * 100, 2048 * 10 * 4, 16 * 256 * 128, 2 * 64 * 32 * 8


def check_runtime_calls(name, apis, names):
    """Runs a build of runtime_calls.c; names maps each user function to the
    API recorded for it."""
    env = {"SIMCUDA_DEVICES": "2"}
    r = cmtest.run([cmtest.program(name)], env=env)
    eq(r.proc.returncode, 0, f"exit status: {r.proc.stderr}")
    eq(r.proc.stdout, "done\n", "program output")
    rep = cmtest.report(r.trace)
    eq(rep["events_by_api"], apis, "events by API: one per user call")
    eq(rep["unmatched_frees"], 0, "every release matched")
    eq([d["ordinal"] for d in rep["devices"]], [1], "device of every allocation: the current context's")
    d1 = cmtest.device(rep, 1)
    eq(d1["peak_bytes"], 16 * MiB + PITCHED + VOLUME + ARRAY_2D + ARRAY_3D, "device 1 peak")
    eq(d1["peak_by_kind"], {"device": 8 * MiB + PITCHED + VOLUME, "async-pool": 8 * MiB,
                            "array": ARRAY_2D + ARRAY_3D}, "peak by kind")
    expected = sorted([
        ("device_buffer", names["device_buffer"], 8 * MiB, 1),
        ("from_pool", names["from_pool"], 5 * MiB, 1),
        ("stream_ordered", names["stream_ordered"], 3 * MiB, 1),
        ("array_2d", names["array_2d"], ARRAY_2D, 1),
        ("pitched", names["pitched"], PITCHED, 1),
        ("volume", names["volume"], VOLUME, 1),
        ("array_3d", names["array_3d"], ARRAY_3D, 1)], key=lambda s: -s[2])
    eq(sites(d1["top_sites_at_peak"]), expected, "sites at the peak: the user's functions, the API called")
    for s in d1["top_sites_at_peak"]:
        eq(s["frames"][1]["function"], "main", f"caller of {cmtest.first_function(s)}")
    eq([(m["ordinal"], m["peak_bytes"]) for m in rep["managed"]], [(1, 4 * MiB)], "managed on device 1")
    eq([(h["peak_bytes"], h["live_at_exit_bytes"]) for h in rep["pinned_host"]], [(3 * MiB, 1 * MiB)],
       "pinned host")
    eq(sites(rep["leaks"]["sites"]), [("pinned_portable", names["pinned_portable"], 1 * MiB, 1)], "leaks")
    eq(rep["warnings"], [], "warnings")
    cmtest.cleanup(r)
    return rep


RUNTIME_NAMES = {"device_buffer": "cudaMalloc", "from_pool": "cudaMallocFromPoolAsync",
                 "stream_ordered": "cudaMallocAsync", "array_2d": "cudaMallocArray", "pitched": "cudaMallocPitch",
                 "volume": "cudaMalloc3D", "array_3d": "cudaMalloc3DArray", "pinned_portable": "cudaHostAlloc"}
DRIVER_NAMES = {"device_buffer": "cuMemAlloc", "from_pool": "cuMemAllocFromPoolAsync",
                "stream_ordered": "cuMemAllocAsync", "array_2d": "cuArrayCreate", "pitched": "cuMemAllocPitch",
                "volume": "cuMemAllocPitch", "array_3d": "cuArray3DCreate", "pinned_portable": "cuMemHostAlloc"}


def test_one_event_per_call():
    # The runtime's own driver calls go through the shim's driver hooks (the
    # runtime fetched them through the shim's cuGetProcAddress): the depth
    # guard keeps them silent, so each user call is one event named by the
    # runtime API.
    check_runtime_calls("runtime_calls", RUNTIME_APIS, RUNTIME_NAMES)


def test_per_thread_default_stream():
    check_runtime_calls("runtime_calls_ptds", RUNTIME_APIS, RUNTIME_NAMES)


def test_static_runtime():
    # The runtime is inside the executable: the shim's runtime exports are
    # never called, the driver hooks catch every allocation, and the frames of
    # the static runtime (cudaMalloc, __cudart_*) fold away.
    check_runtime_calls("runtime_calls_static", DRIVER_APIS, DRIVER_NAMES)


def test_static_runtime_per_thread():
    check_runtime_calls("runtime_calls_static_ptds", DRIVER_APIS, DRIVER_NAMES)


# --- VMM -------------------------------------------------------------------

def test_vmm():
    env = {"SIMCUDA_CAPACITY": "64MiB"}
    r = cmtest.run([cmtest.program("vmm")], env=env)
    eq(r.proc.returncode, 0, f"exit status: {r.proc.stderr}")
    eq(r.proc.stdout, f"used at peak: {20 * MiB}\nused after unmap: {6 * MiB}\nused at exit: {2 * MiB}\n",
       "the driver's own figures")
    rep = cmtest.report(r.trace)
    eq(rep["events_by_api"], {"cuMemCreate": 5, "cuMemAddressReserve": 1, "cuMemMap": 4, "cuMemRelease": 4,
                              "cuMemUnmap": 2}, "events by API")
    eq(rep["unmatched_frees"], 0, "every release and unmap matched")
    d0 = cmtest.device(rep, 0)
    # Physical memory counts as device memory, from cuMemCreate until it is
    # released and unmapped: weights still holds 8 MiB after its release.
    eq((d0["peak_bytes"], d0["peak_allocations"]), (20 * MiB, 4), "device peak = the driver's figure")
    eq(d0["peak_by_kind"], {"vmm-physical": 20 * MiB}, "peak by kind")
    eq(sites(d0["top_sites_at_peak"]),
       [("create_weights", "cuMemCreate", 8 * MiB, 1), ("create_scratch", "cuMemCreate", 6 * MiB, 1),
        ("create_activations", "cuMemCreate", 4 * MiB, 1), ("create_leaked", "cuMemCreate", 2 * MiB, 1)],
       "sites at the peak")
    eq((d0["live_at_exit_bytes"], d0["live_at_exit_count"]), (2 * MiB, 1), "device live at exit = the driver's")
    # The host-located handle counts with pinned host memory.
    eq([(h["peak_bytes"], h["live_at_exit_bytes"], h["peak_by_kind"]) for h in rep["pinned_host"]],
       [(2 * MiB, 0, {"vmm-physical": 2 * MiB})], "host-located physical memory")
    vmm = {v["ordinal"]: v for v in rep["vmm"]}
    eq(sorted(vmm), [-1, 0], "VMM sections: host and device 0")
    eq({k: vmm[0][k] for k in vmm[0] if k != "ordinal"}, {
        "physical_peak_bytes": 20 * MiB, "physical_at_exit_bytes": 2 * MiB, "physical_at_exit_count": 1,
        "reserved_peak_bytes": 32 * MiB, "reserved_at_exit_bytes": 32 * MiB, "reserved_at_exit_count": 1,
        "mapped_peak_bytes": 14 * MiB, "mapped_at_exit_bytes": 2 * MiB, "mapped_at_exit_count": 1},
        "device 0 VMM")
    eq({k: vmm[-1][k] for k in vmm[-1] if k != "ordinal"}, {
        "physical_peak_bytes": 2 * MiB, "physical_at_exit_bytes": 0, "physical_at_exit_count": 0,
        "reserved_peak_bytes": 0, "reserved_at_exit_bytes": 0, "reserved_at_exit_count": 0,
        "mapped_peak_bytes": 2 * MiB, "mapped_at_exit_bytes": 0, "mapped_at_exit_count": 0},
        "host VMM: the host handle's mapping counts with it")
    # The leaked handle is a leak; the reservation and the mapping left at
    # exit are listed as address space, not counted as memory.
    leaks = rep["leaks"]
    eq((leaks["bytes"], leaks["count"]), (2 * MiB, 1), "leak totals: the handle never released")
    eq([(cmtest.first_function(s), s["kind"], s["api"], s["bytes"]) for s in leaks["sites"]],
       [("create_leaked", "vmm-physical", "cuMemCreate", 2 * MiB),
        ("reserve_space", "vmm-reserve", "cuMemAddressReserve", 32 * MiB),
        ("main", "vmm-map", "cuMemMap", 2 * MiB)], "leak sites: memory first, then address space")

    text = cmtest.cli("report", r.trace).stdout
    for line in ["Virtual memory management (VMM), device 0",
                 "  physical memory (cuMemCreate): peak 20.0 MiB (20971520 B), at exit 2.0 MiB (2097152 B) in 1 "
                 "handle (counted in device 0)",
                 "  reserved address ranges: peak 32.0 MiB (33554432 B), at exit 32.0 MiB (33554432 B) in 1 range",
                 "  mappings: peak 14.0 MiB (14680064 B), at exit 2.0 MiB (2097152 B) in 1 mapping",
                 "Virtual memory management (VMM), host",
                 "Leaks (live at exit): 2.0 MiB (2097152 B) in 1 allocation",
                 "  2.0 MiB (2097152 B) in 1 allocation (vmm-physical, cuMemCreate)",
                 "  32.0 MiB (33554432 B) in 1 reserved range (vmm-reserve, cuMemAddressReserve; address space, "
                 "not memory)",
                 "  2.0 MiB (2097152 B) in 1 mapping (vmm-map, cuMemMap; address space, not memory)"]:
        check(line + "\n" in text, f"{line!r} not in the text report:\n{text}")
    cmtest.cleanup(r)


# --- another interposer, before or after the shim ---------------------------

def interposer_report(stderr):
    """{function: (module of its next definition, calls)} from the interposer's report."""
    found = {}
    for line in stderr.splitlines():
        m = re.fullmatch(r"interposer: (\S+) next=(\S+) calls=(\d+)", line)
        if m:
            found[m.group(1)] = (m.group(2), int(m.group(3)))
    check("cudaMalloc" in found, f"no interposer report in {stderr!r}")
    return found


def test_interposer_chain():
    lib = cmtest.program("libinterposer.so")
    prog = [cmtest.program("chain")]
    prefix = [cmtest.PRELOAD_PREFIX] if cmtest.PRELOAD_PREFIX else []
    alone = cmtest.run(prog, env={"LD_PRELOAD": ":".join(prefix + [lib])}, preload=False)
    eq(alone.proc.returncode, 0, f"exit status, interposer alone: {alone.proc.stderr}")
    glibc = interposer_report(alone.proc.stderr)
    eq((glibc["cudaMalloc"], glibc["cuMemAlloc_v2"]), (("libcudart.so.13", 3), ("libcuda.so.1", 2)),
       "what glibc gives the interposer alone")
    # libc's (or a sanitizer's interceptor of it): the shim must not change it.
    eq(glibc["puts"][1], 1, "puts called once")
    if "malloc" in glibc and not cmtest.VALGRIND:  # ASan and valgrind replace malloc
        eq(glibc["malloc"], ("libc.so.6", 1), "malloc: libc's, called")
    for order, cuda_next in [([cmtest.SHIM, lib], None), ([lib, cmtest.SHIM], "libcumemtrace.so")]:
        r = cmtest.run(prog, env={"LD_PRELOAD": ":".join(prefix + order)}, preload=False)
        what = "preload order " + " ".join(os.path.basename(p) for p in order)
        eq(r.proc.returncode, 0, f"exit status, {what}: {r.proc.stderr}")
        eq(r.proc.stdout, "done\n", f"program output, {what}")
        # The next definition after the interposer, in this order: the one
        # glibc resolves, as if the shim wrapped no dlsym: the shim's hook
        # when the shim comes after the interposer, else what it gets alone.
        expected = dict(glibc)
        if cuda_next:
            expected["cudaMalloc"] = (cuda_next, 3)
            expected["cuMemAlloc_v2"] = (cuda_next, 2)
        eq(interposer_report(r.proc.stderr), expected, what)
        rep = cmtest.report(r.trace)
        eq(rep["events_by_api"], CHAIN_EVENTS, f"events, {what}")
        eq([(s["api"], s["bytes"], s["count"]) for s in cmtest.device(rep, 0)["top_sites_at_peak"]],
           [("cuMemAlloc", 9 * MiB, 2)], f"sites at the peak, {what}")
        cmtest.cleanup(r)
    cmtest.cleanup(alone)


# --- the shim's exports ------------------------------------------------------

def test_exports():
    with open(os.environ["CMT_EXPORTS_MAP"]) as f:
        text = re.sub(r"/\*.*?\*/", "", f.read(), flags=re.S)
    glob = text.split("global:")[1].split("local:")[0]
    listed = sorted(n.strip() for n in glob.split(";") if n.strip())
    out = subprocess.run(["nm", "-D", "--defined-only", cmtest.SHIM], capture_output=True, text=True, check=True)
    exported = sorted(l.split()[-1] for l in out.stdout.splitlines() if l.strip())
    eq(exported, listed, "symbols the shim exports vs preload/exports.map")
    check("dlsym" in exported and "cuGetProcAddress_v2" in exported and "cudaMalloc" in exported,
          "the hooked entry points are exported")


if __name__ == "__main__":
    cmtest.main(sys.modules[__name__])
