/* SPDX-License-Identifier: MIT */
/* Looks like a CPython executable to the shim (it exports _PyRuntime and
 * Py_Version) but is of a version the shim does not read, or has debug
 * offsets that do not validate: the shim must record native frames only and
 * say so once in the trace. The build sets FAKE_PY_VERSION (Py_Version, 3.11
 * on) or FAKE_PY_VERSION_STRING (Py_GetVersion's answer, before 3.11). */
#include <cuda_runtime_api.h>
#include <stdio.h>

void *PyGILState_GetThisThreadState(void);
const char *Py_GetVersion(void);
void _PyEval_EvalFrameDefault(void);

#ifdef FAKE_PY_VERSION
__attribute__((visibility("default"))) const unsigned long Py_Version = FAKE_PY_VERSION;
#else
__attribute__((visibility("default"))) const char *Py_GetVersion(void)
{
    return FAKE_PY_VERSION_STRING;
}
#endif
/* The real one begins with the debug offsets from 3.13 on; this one does not. */
__attribute__((visibility("default"))) unsigned long _PyRuntime[512] = {1, 2, 3};
/* What the shim would call and range-check for a version it knows. */
__attribute__((visibility("default"))) void *PyGILState_GetThisThreadState(void)
{
    return NULL;
}
__attribute__((visibility("default"))) void _PyEval_EvalFrameDefault(void)
{
}
__attribute__((visibility("default"))) unsigned long PyCode_Type[32], PyUnicode_Type[32];

__attribute__((noinline)) static int fake_python_allocate(void)
{
    void *p = NULL;
    int rc = cudaMalloc(&p, 1 << 20);
    __asm__ volatile("" ::: "memory");
    return rc;
}

int main(void)
{
    for (int i = 0; i < 3; i++)
        if (fake_python_allocate() != cudaSuccess)
            return 1;
    puts("done");
    return 0;
}
