# SPDX-License-Identifier: MIT
"""The Python API on the simulated device (tests/e2e/test_pyapi.py):
phases as a context manager and a decorator, steps, a mark; sizes name
what allocated them. Prints the API's answers for the test to compare."""
import ctypes
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "pytest_suite"))
import cumemtrace  # noqa: E402
from gpu_sim import Buffer, MiB, cuda  # noqa: E402

answers = {"active_before": cumemtrace.is_active(), "path_before": cumemtrace.trace_path()}


def keep(nbytes):
    """Device memory never freed, not even at the interpreter's exit."""
    ptr = ctypes.c_uint64()
    assert cuda().cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t(nbytes)) == 0
    return ptr.value



@cumemtrace.phase("train_step")
def train_step():
    scratch = Buffer(2 * MiB)
    del scratch


with cumemtrace.phase("load"):
    keep(8 * MiB)  # the leak
answers["path_after"] = cumemtrace.trace_path()
for _ in range(3):
    cumemtrace.step()
    train_step()
cumemtrace.mark("saved")
with cumemtrace.phase("évaluation"):
    tmp = Buffer(1 * MiB)
    del tmp
print(json.dumps(answers))
