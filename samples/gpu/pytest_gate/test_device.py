# SPDX-License-Identifier: MIT
"""Two tests of a native CUDA library reached through ctypes (the driver API
here, so nothing but libcuda.so.1 is needed): one frees what it allocates,
one forgets a 32 MiB buffer. pytest passes both; `cumemtrace run --check`
fails the session and names test_forgets_a_buffer's line."""
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


def device_alloc(nbytes):
    ptr = ctypes.c_uint64()
    assert cuda().cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t(nbytes)) == 0
    return ptr.value


def device_free(ptr):
    assert cuda().cuMemFree_v2(ctypes.c_uint64(ptr)) == 0


def test_frees_what_it_allocates():
    p = device_alloc(16 * MiB)
    device_free(p)


def test_forgets_a_buffer():
    p = device_alloc(32 * MiB)  # never freed: the leak the gate must catch
    assert p != 0
