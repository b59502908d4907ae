/* SPDX-License-Identifier: MIT */
/* Allocations from call paths chosen to trap a stack cache that is not exact
 * (tests/e2e/test_stacks.py). Every allocation's size is a tag (a multiple of
 * 4096) that names the path it came from, and none is freed, so the report's
 * leak sites say, for each tag, which stack was recorded. Every path runs
 * several times, interleaved with paths that reach the same allocating
 * instruction at the same stack pointer through other callers.
 *
 *   stack_shapes                 the single-threaded shapes
 *   stack_shapes threads N       N threads running the same paths at once
 *   stack_shapes dl LIB_A LIB_B  a call site reached in LIB_A, then LIB_A
 *                                unloaded and LIB_B loaded in its place
 *   stack_shapes fork            a path cached in the parent, taken again in
 *                                a forked child (whose stack ids restart)
 */
#include <alloca.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* External, so the optimiser keeps their names (no .constprop clones). */
void leaf_alloc(size_t size);
void path_a(size_t size);
void path_b(size_t size);
void run_paths(unsigned base);
void recurse(unsigned level, unsigned levels);
void run_recursion(void);
void with_alloca(unsigned m, size_t size);
void caller_0(unsigned m);
void caller_1(unsigned m);
void caller_2(unsigned m);
void caller_3(unsigned m);
void run_alloca(void);
void fixed_leaf(size_t size);
void alloca_mid(unsigned m, size_t size);
void outer_0(unsigned m);
void outer_1(unsigned m);
void outer_2(unsigned m);
void outer_3(unsigned m);
void run_alloca_deeper(void);
void jump_down(unsigned n);
void before_jump(void);
void after_jump(void);
void run_longjmp(void);
void signal_caller(void);
void run_signals(void);
void thread_body(unsigned index);
void call_library(void (*fn)(size_t), size_t size);
void run_fork(void);

#define REPEAT 4
#define TAG(n) ((size_t)(n) * 4096)

/* Keeps a call from becoming a tail call, so each function keeps its frame. */
#define KEEP_FRAME() __asm__ volatile("" ::: "memory")
/* Twice in a row: the second call can hit what the first cached. */
#define TWICE(call) \
    do {            \
        call;       \
        call;       \
    } while (0)

static void allocate(size_t size)
{
    void *p;
    if (cudaMalloc(&p, size) != cudaSuccess) {
        fprintf(stderr, "stack_shapes: cudaMalloc(%zu) failed\n", size);
        exit(1);
    }
}

/* --- two callers with identical frames reach one allocating leaf ----------- */

__attribute__((noinline)) void leaf_alloc(size_t size)
{
    allocate(size);
    KEEP_FRAME();
}

__attribute__((noinline)) void path_a(size_t size)
{
    leaf_alloc(size);
    KEEP_FRAME();
}

__attribute__((noinline)) void path_b(size_t size)
{
    leaf_alloc(size);
    KEEP_FRAME();
}

__attribute__((noinline)) void run_paths(unsigned base)
{
    for (int i = 0; i < REPEAT; i++) {
        TWICE(path_a(TAG(base)));
        TWICE(path_b(TAG(base + 1)));
    }
    KEEP_FRAME();
}

/* --- recursion: the same instruction at every level --------------------------- */

__attribute__((noinline)) void recurse(unsigned level, unsigned levels)
{
    allocate(TAG(10 + level));
    if (level + 1 < levels)
        recurse(level + 1, levels);
    KEEP_FRAME();
}

__attribute__((noinline)) void run_recursion(void)
{
    for (int i = 0; i < REPEAT; i++)
        recurse(0, 6);
    KEEP_FRAME();
}

/* --- alloca: a frame whose size changes between calls ---------------------------
 * caller_K has K*32 bytes of locals more than caller_0 and asks with_alloca
 * for M*32 bytes: pairs with the same K+M reach the allocation with the same
 * stack pointer, through another caller and with another frame size. They
 * are called one after the other, through one call instruction, the larger
 * caller first: the second call's alloca block covers, untouched, the slot
 * where the first call's return address into its caller was, so a cache that
 * re-read the slots it recorded without knowing that this frame's CFA comes
 * from rbp would find them all unchanged and return the first caller's
 * stack. */

__attribute__((noinline)) void with_alloca(unsigned m, size_t size)
{
    volatile char *scratch = alloca(m * 32 + 16);
    scratch[0] = (char)m;
    allocate(size);
    KEEP_FRAME();
}

#define CALLER(K)                                                      \
    __attribute__((noinline)) void caller_##K(unsigned m)              \
    {                                                                  \
        volatile char pad[K * 32 + 8];                                 \
        pad[0] = (char)m;                                              \
        with_alloca(m, TAG(20 + K * 4 + m));                           \
        KEEP_FRAME();                                                  \
        (void)pad[0];                                                  \
    }
CALLER(0)
CALLER(1)
CALLER(2)
CALLER(3)

/* The same one level up: the alloca frame is the allocating function's
 * caller, whose rbp the allocating function saved (with frame pointers) or
 * left alone (without). */

__attribute__((noinline)) void fixed_leaf(size_t size)
{
    allocate(size);
    KEEP_FRAME();
}

__attribute__((noinline)) void alloca_mid(unsigned m, size_t size)
{
    volatile char *scratch = alloca(m * 32 + 16);
    scratch[0] = (char)m;
    fixed_leaf(size);
    KEEP_FRAME();
}

#define OUTER(K)                                                       \
    __attribute__((noinline)) void outer_##K(unsigned m)               \
    {                                                                  \
        volatile char pad[K * 32 + 8];                                 \
        pad[0] = (char)m;                                              \
        alloca_mid(m, TAG(200 + K * 4 + m));                           \
        KEEP_FRAME();                                                  \
        (void)pad[0];                                                  \
    }
OUTER(0)
OUTER(1)
OUTER(2)
OUTER(3)

static void (*const callers[4])(unsigned) = {caller_0, caller_1, caller_2, caller_3};
static void (*const outers[4])(unsigned) = {outer_0, outer_1, outer_2, outer_3};

__attribute__((noinline)) void run_alloca(void)
{
    for (int i = 0; i < REPEAT; i++)
        for (unsigned sum = 0; sum <= 6; sum++)
            for (unsigned k = 4; k-- > 0;)
                if (sum >= k && sum - k < 4)
                    for (int twice = 0; twice < 2; twice++)
                        callers[k](sum - k);
    KEEP_FRAME();
}

__attribute__((noinline)) void run_alloca_deeper(void)
{
    for (int i = 0; i < REPEAT; i++)
        for (unsigned sum = 0; sum <= 6; sum++)
            for (unsigned k = 4; k-- > 0;)
                if (sum >= k && sum - k < 4)
                    for (int twice = 0; twice < 2; twice++)
                        outers[k](sum - k);
    KEEP_FRAME();
}

/* --- longjmp: frames abandoned on the stack, then other frames in their place -- */

static jmp_buf jump_back;
static volatile int jump_armed;

__attribute__((noinline)) void jump_down(unsigned n)
{
    if (n > 0)
        jump_down(n - 1);
    else if (jump_armed)
        longjmp(jump_back, 1);
    KEEP_FRAME();
}

__attribute__((noinline)) void before_jump(void)
{
    allocate(TAG(40));
    jump_down(3);
    KEEP_FRAME();
}

__attribute__((noinline)) void after_jump(void)
{
    allocate(TAG(41));
    KEEP_FRAME();
}

__attribute__((noinline)) void run_longjmp(void)
{
    jump_armed = 1;
    for (int i = 0; i < REPEAT; i++) {
        if (!setjmp(jump_back))
            before_jump();
        else
            after_jump();
    }
    KEEP_FRAME();
}

/* --- a signal handler: a signal frame in the middle of the stack --------------- */

static void on_signal(int sig)
{
    (void)sig;
    allocate(TAG(50));
}

__attribute__((noinline)) void signal_caller(void)
{
    raise(SIGUSR1);
    KEEP_FRAME();
}

__attribute__((noinline)) void run_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGUSR1, &sa, NULL);
    for (int i = 0; i < REPEAT; i++)
        signal_caller();
    KEEP_FRAME();
}

/* --- threads: the same paths on several stacks at once ------------------------ */

static pthread_barrier_t together;

__attribute__((noinline)) void thread_body(unsigned index)
{
    pthread_barrier_wait(&together);
    for (int round = 0; round < 50; round++)
        run_paths(100 + index * 2);
    KEEP_FRAME();
}

static void *thread_main(void *arg)
{
    thread_body((unsigned)(uintptr_t)arg);
    return NULL;
}

static int run_threads(unsigned n)
{
    pthread_t tids[32];
    if (n == 0 || n > 32)
        return 2;
    pthread_barrier_init(&together, NULL, n);
    for (unsigned i = 0; i < n; i++)
        pthread_create(&tids[i], NULL, thread_main, (void *)(uintptr_t)i);
    for (unsigned i = 0; i < n; i++)
        pthread_join(tids[i], NULL);
    return 0;
}

/* --- a library unloaded and another loaded at its address ---------------------- */

typedef void (*lib_alloc_fn)(size_t);

/* One call instruction for both libraries. */
__attribute__((noinline)) void call_library(lib_alloc_fn fn, size_t size)
{
    fn(size);
    KEEP_FRAME();
}

static int run_library(const char *path, size_t size, void **base)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "stack_shapes: %s\n", dlerror());
        return 1;
    }
    lib_alloc_fn fn = (lib_alloc_fn)dlsym(h, "shape_lib_alloc");
    Dl_info info;
    if (!fn || !dladdr((void *)fn, &info)) {
        fprintf(stderr, "stack_shapes: no shape_lib_alloc in %s\n", path);
        return 1;
    }
    *base = info.dli_fbase;
    for (int i = 0; i < REPEAT; i++)
        call_library(fn, size);
    return dlclose(h) == 0 ? 0 : 1;
}

/* --- fork: the child inherits the parent's cache, not its stack ids ------------
 * The parent caches path_a; the child interns path_b first (its stack id 1,
 * which is path_a's id in the parent), then takes path_a from the very same
 * frames. */

__attribute__((noinline)) void run_fork(void)
{
    pid_t pid = 1;
    /* One call instruction of path_a for the parent before and after the
     * fork and for the child. */
    for (int round = 0; round < 2; round++) {
        size_t size = TAG(60);
        if (round == 1) {
            pid = fork();
            if (pid < 0) {
                perror("stack_shapes: fork");
                exit(1);
            }
            size = TAG(63);
            if (pid == 0) {
                path_b(TAG(62));
                size = TAG(61);
            }
        }
        for (int i = 0; i < REPEAT; i++)
            path_a(size);
    }
    if (pid == 0)
        exit(0);
    int status;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "stack_shapes: the forked child failed\n");
        exit(1);
    }
    KEEP_FRAME();
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "threads"))
        return run_threads((unsigned)atoi(argv[2]));
    if (argc == 4 && !strcmp(argv[1], "dl")) {
        /* One loop, so both libraries are reached through the same frames. */
        void *base[2];
        for (int i = 0; i < 2; i++)
            if (run_library(argv[2 + i], TAG(70 + i), &base[i]))
                return 1;
        printf("same base: %s\n", base[0] == base[1] ? "yes" : "no");
        return 0;
    }
    if (argc == 2 && !strcmp(argv[1], "fork")) {
        run_fork();
        printf("fork done\n");
        return 0;
    }
    if (argc != 1) {
        fprintf(stderr, "usage: stack_shapes [threads N | dl LIB_A LIB_B | fork]\n");
        return 2;
    }
    run_paths(1);
    run_recursion();
    run_alloca();
    run_alloca_deeper();
    run_longjmp();
    run_signals();
    printf("stack_shapes done\n");
    return 0;
}
