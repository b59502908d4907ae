# SPDX-License-Identifier: MIT
"""Calls the runtime through ctypes, as a Python program with no CUDA
package does (issue 33, item 4), for test_python.py.

  ctypes_runtime.py local LIBCUDART
      opens LIBCUDART (RTLD_LOCAL, ctypes' default), 13 cudaMalloc of
      1..13 MiB, then cudaFree of the first 5
  ctypes_runtime.py two LIBCUDART COPY
      opens LIBCUDART with RTLD_GLOBAL and COPY (another file of the same
      library) locally; one cudaMalloc of 1 MiB through each, both freed
Prints each pointer it got, then "done"."""
import ctypes
import sys

MiB = 1 << 20


def runtime(path, mode=ctypes.DEFAULT_MODE):
    rt = ctypes.CDLL(path, mode=mode)
    rt.cudaMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
    rt.cudaFree.argtypes = [ctypes.c_void_p]
    return rt


def malloc(rt, size):
    p = ctypes.c_void_p()
    rc = rt.cudaMalloc(ctypes.byref(p), size)
    assert rc == 0 and p.value, (rc, p.value)
    print(hex(p.value))
    return p


if __name__ == "__main__":
    if sys.argv[1] == "local":
        rt = runtime(sys.argv[2])
        held = [malloc(rt, (i + 1) * MiB) for i in range(13)]
        for p in held[:5]:
            assert rt.cudaFree(p) == 0
    else:
        first = runtime(sys.argv[2], ctypes.RTLD_GLOBAL)
        second = runtime(sys.argv[3])
        a, b = malloc(first, MiB), malloc(second, MiB)
        assert a.value != b.value
        assert first.cudaFree(a) == 0 and second.cudaFree(b) == 0
    print("done")
