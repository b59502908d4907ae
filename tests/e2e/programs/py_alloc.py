# SPDX-License-Identifier: MIT
"""Allocates device memory from known Python lines through ctypes, for
test_python.py. Each allocation's size names where it was made; the lines
that allocate carry a marker comment the test looks up (@name)."""
import ctypes
import sys

MiB = 1 << 20
rt = ctypes.CDLL("libcudart.so.13")
rt.cudaMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]


def allocate(size):
    p = ctypes.c_void_p()
    rc = rt.cudaMalloc(ctypes.byref(p), size)  # @allocate
    assert rc == 0, rc
    return p


class Model:
    def forward(self, size):
        return allocate(size)  # @forward


def nested(depth, size):
    if depth == 0:
        return allocate(size)  # @nested_leaf
    return nested(depth - 1, size)  # @nested


def lines():
    Model().forward(1 * MiB)  # @lines_forward
    allocate(2 * MiB)  # @lines_direct
    nested(3, 3 * MiB)  # @lines_nested


def paths():
    # One native path (the loop's call into ctypes) reached from two Python
    # lines in turn: the stack cache must tell them apart.
    for i in range(12):
        if i % 2:
            allocate(4 * MiB)  # @paths_odd
        else:
            allocate(5 * MiB)  # @paths_even


CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int)


def inner(size):
    allocate(size)  # @inner
    return 0


def on_callback(size):
    return inner(size)  # @on_callback


def callback():
    helper = ctypes.CDLL(sys.argv[2])
    cb = CALLBACK(on_callback)
    helper.cmt_py_call_back.argtypes = [CALLBACK, ctypes.c_int]
    r = helper.cmt_py_call_back(cb, 6 * MiB)  # @callback_call
    assert r == 1, r


def c_thread():
    # PyDLL: these calls keep the GIL, so the main thread holds it all the
    # while the C thread allocates.
    lib = ctypes.PyDLL(sys.argv[2])
    lib.cmt_py_start_c_thread.argtypes = [ctypes.c_uint, ctypes.c_size_t]
    assert lib.cmt_py_start_c_thread(200, 7 * 65536) == 0
    spins = 0
    while not lib.cmt_py_c_thread_done():
        spins += 1
    assert lib.cmt_py_join_c_thread() == 0
    allocate(8 * MiB)  # @c_thread_main


def thread_worker(size):
    allocate(size)  # @thread_worker


def python_threads():
    import threading
    t = threading.Thread(target=thread_worker, args=(9 * MiB,))
    t.start()
    allocate(10 * MiB)  # @threads_main
    t.join()


def deep_native():
    helper = ctypes.CDLL(sys.argv[2])
    helper.cmt_py_deep_native.argtypes = [ctypes.c_uint, ctypes.c_size_t]
    r = helper.cmt_py_deep_native(int(sys.argv[3]), 9 * MiB)  # @deep_native_call
    assert r == 0, r


def deep(depth, size, count):
    if depth == 0:
        for _ in range(count):
            allocate(size)  # @deep_leaf
        return
    deep(depth - 1, size, count)  # @deep


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "deep":
        deep(int(sys.argv[2]), MiB, int(sys.argv[3]))  # @module_deep
    else:
        globals()[mode]()  # @module_call
    print("done", mode)
