# SPDX-License-Identifier: MIT
"""The Python side of bench/run_python_bench.py: with FRAMES Python frames on
the stack (this module's, the recursion's and the loop's), PAIRS
cudaMalloc + cudaFree pairs through ctypes, timed by the thread's CPU clock
around the loop; prints the nanoseconds per pair.

    python3 py_alloc_loop.py RUNTIME FRAMES PAIRS"""
import ctypes
import sys
import time

runtime = ctypes.CDLL(sys.argv[1])
malloc = runtime.cudaMalloc
malloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
free = runtime.cudaFree
free.argtypes = [ctypes.c_void_p]


def loop(pairs):
    p = ctypes.c_void_p()
    ref = ctypes.byref(p)
    start = time.thread_time_ns()
    for _ in range(pairs):
        if malloc(ref, 4096) != 0:
            raise SystemExit("cudaMalloc failed")
        free(p)
    return time.thread_time_ns() - start


def down(levels, pairs):
    if levels == 0:
        return loop(pairs)
    return down(levels - 1, pairs)


frames, pairs = int(sys.argv[2]), int(sys.argv[3])
# <module> and loop are two of the frames.
print(down(frames - 2, pairs) / pairs)
