# SPDX-License-Identifier: MIT
"""Device memory on the simulated device through ctypes (libcuda.so.1 is
tests/sim's): a Buffer holds cuMemAlloc'ed memory until it is collected."""
import ctypes

MiB = 1 << 20
_cuda = None


def cuda():
    global _cuda
    if _cuda is None:
        lib = ctypes.CDLL("libcuda.so.1")
        assert lib.cuInit(0) == 0
        ctx = ctypes.c_void_p()
        assert lib.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), 0) == 0
        assert lib.cuCtxSetCurrent(ctx) == 0
        _cuda = lib
    return _cuda


class Buffer:
    def __init__(self, nbytes):
        ptr = ctypes.c_uint64()
        assert cuda().cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t(nbytes)) == 0  # @alloc
        self.ptr = ptr.value

    def __del__(self):
        cuda().cuMemFree_v2(ctypes.c_uint64(self.ptr))
