/* SPDX-License-Identifier: MIT */
/* nvtx_phases [crash]
 *
 * A training loop named with the CUDA Toolkit's NVTX v3 headers, on the
 * simulated device (test_phases.py asserts the figures):
 *   setup (default domain): a worker thread with its own stack "loader >
 *     decode" allocates 4 + 2 MiB and frees them; then the 64 MiB model.
 *   step 0 .. step 9 (nvtxRangePushA "step N"):
 *     forward (domain "trainer", registered string, nvtxDomainRangePushEx)
 *       layer 1 (nvtxRangePushA in libcmt_nvtx_lib.so, a second NVTX
 *         instance): 32 MiB activation
 *       layer 2 (nvtxRangePushEx, ascii): 32 MiB activation; in step 7 a
 *         1 TiB allocation that fails
 *     backward (nvtxRangePushW): the activations freed; a helper thread with
 *       no range of its own allocates a 4 MiB gradient (counted in backward)
 *       and frees it; 16 MiB leaked (leak_per_step)
 *     optimizer (domain "io", nvtxDomainRangePushEx / DomainRangePop): a
 *       helper thread with its own range "apply" allocates 2 MiB and frees
 *       it (in the step, not in optimizer)
 *   "save" (nvtxRangeStartA / End, process-wide): 1 MiB allocated and freed;
 *   a mark "done".
 * Live at the end of step k: 64 + 16 (k + 1) MiB; the peak, 272 MiB, in
 * step 9 > forward > layer 2. With "crash" the program kills itself with
 * SIGKILL inside step 3 > forward. */
#include <cuda_runtime_api.h>
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MiB (1024u * 1024u)

/* programs/nvtx_lib.c: NVTX calls from another object, another NVTX instance */
void nvtx_lib_push(const char *name);
void nvtx_lib_pop(void);

static void check(cudaError_t r, const char *what)
{
    if (r != cudaSuccess) {
        fprintf(stderr, "%s failed: %d\n", what, r);
        exit(1);
    }
}

static void *worker_loader(void *arg)
{
    (void)arg;
    void *a, *b;
    nvtxRangePushA("loader");
    check(cudaMalloc(&a, 4 * MiB), "loader");
    nvtxRangePushA("decode");
    check(cudaMalloc(&b, 2 * MiB), "decode");
    check(cudaFree(b), "decode free");
    nvtxRangePop();
    check(cudaFree(a), "loader free");
    nvtxRangePop();
    return NULL;
}

__attribute__((noinline)) static void *gradient(void *arg)
{
    (void)arg;
    void *g;
    check(cudaMalloc(&g, 4 * MiB), "gradient");
    check(cudaFree(g), "gradient free");
    return NULL;
}

/* A helper thread with a range of its own: not inside optimizer, but its
 * memory counts in the step (steps are the process's). */
static void *apply_update(void *arg)
{
    (void)arg;
    void *tmp;
    nvtxRangePushA("apply");
    check(cudaMalloc(&tmp, 2 * MiB), "apply");
    check(cudaFree(tmp), "apply free");
    nvtxRangePop();
    return NULL;
}

__attribute__((noinline)) static void leak_per_step(void)
{
    void *p;
    check(cudaMalloc(&p, 16 * MiB), "leak_per_step");
}

static nvtxEventAttributes_t attributes(void)
{
    nvtxEventAttributes_t a;
    memset(&a, 0, sizeof a);
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    return a;
}

int main(int argc, char **argv)
{
    bool crash = argc > 1 && strcmp(argv[1], "crash") == 0;
    nvtxDomainHandle_t trainer = nvtxDomainCreateA("trainer");
    nvtxDomainHandle_t io = nvtxDomainCreateA("io");
    nvtxStringHandle_t forward_name = nvtxDomainRegisterStringA(trainer, "forward");

    nvtxRangePushA("setup");
    pthread_t t;
    pthread_create(&t, NULL, worker_loader, NULL);
    pthread_join(t, NULL);
    void *model;
    check(cudaMalloc(&model, 64 * MiB), "model");
    nvtxRangePop();

    for (int step = 0; step < 10; step++) {
        char name[32];
        snprintf(name, sizeof name, "step %d", step);
        nvtxRangePushA(name);

        nvtxEventAttributes_t fw = attributes();
        fw.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
        fw.message.registered = forward_name;
        nvtxDomainRangePushEx(trainer, &fw);
        void *act1, *act2;
        nvtx_lib_push("layer 1"); /* the library's own NVTX instance */
        check(cudaMalloc(&act1, 32 * MiB), "layer 1");
        nvtx_lib_pop();
        nvtxEventAttributes_t l2 = attributes();
        l2.messageType = NVTX_MESSAGE_TYPE_ASCII;
        l2.message.ascii = "layer 2";
        nvtxRangePushEx(&l2);
        check(cudaMalloc(&act2, 32 * MiB), "layer 2");
        if (step == 7) {
            void *huge;
            if (cudaMalloc(&huge, (size_t)1 << 40) == cudaSuccess) {
                fprintf(stderr, "1 TiB allocation succeeded\n");
                return 1;
            }
        }
        nvtxRangePop();
        if (crash && step == 3)
            kill(getpid(), SIGKILL);
        nvtxDomainRangePop(trainer);

        nvtxRangePushW(L"backward");
        check(cudaFree(act2), "free act2");
        check(cudaFree(act1), "free act1");
        pthread_create(&t, NULL, gradient, NULL);
        pthread_join(t, NULL);
        leak_per_step();
        nvtxRangePop();

        nvtxEventAttributes_t opt = attributes();
        opt.messageType = NVTX_MESSAGE_TYPE_ASCII;
        opt.message.ascii = "optimizer";
        nvtxDomainRangePushEx(io, &opt);
        pthread_create(&t, NULL, apply_update, NULL);
        pthread_join(t, NULL);
        nvtxDomainRangePop(io);

        nvtxRangePop();
    }
    nvtxRangeId_t save = nvtxRangeStartA("save");
    void *s;
    check(cudaMalloc(&s, 1 * MiB), "save");
    check(cudaFree(s), "save free");
    nvtxRangeEnd(save);
    nvtxMarkA("done");
    printf("nvtx_phases done\n");
    return 0;
}
