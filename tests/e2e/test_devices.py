# SPDX-License-Identifier: MIT
"""End-to-end: the remembered current device (preload/device/device_cache.h) never
changes an event's device.

tests/e2e/programs/device_switch.c allocates on three simulated devices and
switches between them with cudaSetDevice, the driver's context calls seen by
the runtime, push and pop, cudaDeviceReset, threads, and a primary context
released while current. Each allocation's size names the device it must be
recorded on. Every case checks each allocation's recorded device, that a run
without the cache recorded the very same events, and the check mode."""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
import cmtest  # noqa: E402
from cmtest import check, eq  # noqa: E402

ENV = {"SIMCUDA_DEVICES": "3"}


def allocations(trace):
    """(size, device, result) of every allocation, in the order made."""
    p = subprocess.run([cmtest.program("stack_dump"), trace], capture_output=True, text=True,
                       env=cmtest.sim_env(preload=False))
    eq(p.returncode, 0, f"stack_dump: {p.stderr}")
    out = []
    for line in p.stdout.splitlines():
        m = re.match(r"(\d+) stack \d+ dev (-?\d+) res (-?\d+):", line)
        check(m, f"stack_dump line {line!r}")
        out.append((int(m.group(1)), int(m.group(2)), int(m.group(3))))
    return out


def check_devices(program, mode, expect_events, expect_failed=0):
    r = cmtest.run([cmtest.program(program), mode], env=ENV)
    eq(r.proc.returncode, 0, f"exit status: {r.proc.stderr}")
    eq(r.proc.stdout, f"{mode} done\n", "program output")
    got = allocations(r.trace)
    eq(len(got), expect_events, "allocations")
    ok = [(size, dev) for size, dev, res in got if res == 0]
    eq(len(got) - len(ok), expect_failed, "failed allocations")
    for size, dev in ok:
        eq(dev, size // 4096 // 100, f"device of the allocation of {size} bytes")
    eq(sorted({dev for _, dev in ok}), [0, 1, 2], "devices used")
    # The same events without the cache; thread interleaving may differ.
    off = cmtest.run([cmtest.program(program), mode], env=dict(ENV, CUMEMTRACE_DEVICE_CACHE="0"))
    eq(sorted(allocations(off.trace)), sorted(got), "allocations with and without the device cache")
    cmtest.cleanup(r)
    cmtest.cleanup(off)


# device_switch runtime: 12 rounds of 3, then 1 + 2 + 1 around push/pop, 1
# after the reset, 1 on device 0, 2 in a created context and 1 after it is
# destroyed, 3 threads of 40, and a last one.
RUNTIME_EVENTS = 12 * 3 + 1 + 2 + 1 + 1 + 1 + 2 + 1 + 3 * 40 + 1


def test_runtime():
    check_devices("device_switch", "runtime", RUNTIME_EVENTS)


def test_static_runtime():
    """Static runtime: the driver hooks ask cuCtxGetDevice."""
    check_devices("device_switch_static", "runtime", RUNTIME_EVENTS)


def test_driver():
    """The driver API alone, including an allocation that fails because its
    context was released: recorded exactly as without the cache."""
    check_devices("device_switch", "driver", 9 * 2 + 1 + 1 + 1 + 1 + 2 + 1, expect_failed=1)


def test_lazy_runtime():
    """A runtime that switches devices without a driver call: the shim's
    cudaSetDevice and cudaSetValidDevices hooks are all that can tell."""
    r = cmtest.run([cmtest.program("lazy_switch")])
    eq(r.proc.returncode, 0, f"exit status: {r.proc.stderr}")
    eq(r.proc.stdout, "lazy_switch done\n", "program output")
    got = allocations(r.trace)
    eq(len(got), 2 + 2 + 9 * 2, "allocations")
    eq([dev for _, dev, _ in got], [size // 4096 // 100 for size, _, _ in got], "device of each allocation")
    eq([dev for _, dev, _ in got][:6], [0, 0, 2, 2, 0, 0], "devices before and after cudaSetValidDevices")
    cmtest.cleanup(r)


# Allocations that find the device remembered: all but the first after each
# switch. runtime: 12 rounds of 3 allocations (2 each); 2 between push and pop
# (1); 2 in the created context (1); 3 threads of 40 (39 each); the last one,
# on the device main selected before the threads (1). driver: 9 rounds of 2
# (1 each); 2 in the created context (1).
REMEMBERED = {"runtime": 12 * 2 + 1 + 1 + 3 * 39 + 1, "driver": 9 + 1}


def test_check_mode():
    """CUMEMTRACE_DEVICE_CACHE=check asks the real function every time and
    compares: no remembered device and no remembered context differs."""
    for program in ("device_switch", "device_switch_static"):
        for mode in ("runtime", "driver"):
            r = cmtest.run([cmtest.program(program), mode], env=dict(ENV, CUMEMTRACE_DEVICE_CACHE="check"))
            eq(r.proc.returncode, 0, f"{program} {mode}: {r.proc.stderr}")
            m = re.search(r"device cache check: (\d+) remembered devices compared, (\d+) wrong, (\d+) context "
                          r"switches unseen", r.proc.stderr)
            check(m, f"no device cache check line in {r.proc.stderr!r}")
            eq([int(g) for g in m.groups()], [REMEMBERED[mode], 0, 0],
               f"{program} {mode}: remembered devices compared, wrong, context switches unseen")
            cmtest.cleanup(r)


if __name__ == "__main__":
    cmtest.main(sys.modules[__name__])
