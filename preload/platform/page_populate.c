/* SPDX-License-Identifier: MIT */
#include "page_populate.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>

#if !defined(MADV_POPULATE_WRITE) && defined(__linux__)
#define MADV_POPULATE_WRITE 23 /* Linux 5.14; older kernels answer EINVAL */
#endif

/* One helper per process, whatever the number of trace files (the shim has
 * one; the unit tests several). */
static struct {
    pthread_mutex_t lock;
    pthread_cond_t wake;
    uint8_t *addr; /* the range waiting for the helper; len 0: none */
    size_t len;
    bool running;   /* the helper exists */
    bool unstartable; /* pthread_create failed: inline from then on */
} helper = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, 0, false, false};

static bool refused; /* atomic */

/* Set once, never cleared, in a fork child; no helper is started either
 * under a sanitizer runtime. The pages are then populated inline:
 *  - a fork child may have inherited, locked, whatever lock a parent thread
 *    held at the fork (an allocator's, a sanitizer's); a thread started
 *    there was found waiting for ASan's allocator lock while the child's
 *    exit-time leak check waited on the same lock (issue 15);
 *  - a sanitizer's allocator (ASan, TSan, MSan, HWASan, LSan) serves the
 *    thread's start-up; GCC 12's ASan has no fork handlers, so a helper
 *    still starting while another thread forks leaves the child that lock
 *    held, and sanitizers that lock everything before the real fork would
 *    deadlock a fork handler that waited for the helper instead. */
static bool no_helper; /* atomic */

/* Every sanitizer runtime defines it. A weak reference, bound by the
 * loader when the runtime is loaded (it comes first): no dlsym, which in a
 * hook may run inside another interposer's malloc. */
extern void __sanitizer_print_stack_trace(void) __attribute__((weak));

static bool sanitizer_runtime_loaded(void)
{
    return __sanitizer_print_stack_trace != NULL;
}

static void populate_now(uint8_t *addr, size_t len)
{
#if defined(MADV_POPULATE_WRITE)
    /* EINVAL: a kernel before 5.14; EPERM/ENOSYS: a seccomp filter. Other
     * failures concern this range only: EFAULT once the trace was trimmed
     * at exit under a range still being populated, ENOMEM, EINTR. */
    if (madvise(addr, len, MADV_POPULATE_WRITE) != 0 && (errno == EINVAL || errno == EPERM || errno == ENOSYS))
        __atomic_store_n(&refused, true, __ATOMIC_RELAXED);
#else
    (void)addr;
    (void)len;
    __atomic_store_n(&refused, true, __ATOMIC_RELAXED);
#endif
}

static void *helper_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&helper.lock);
    for (;;) {
        while (helper.len == 0)
            pthread_cond_wait(&helper.wake, &helper.lock);
        uint8_t *addr = helper.addr;
        size_t len = helper.len;
        helper.len = 0;
        pthread_mutex_unlock(&helper.lock);
        populate_now(addr, len);
        pthread_mutex_lock(&helper.lock);
    }
    return NULL;
}

/* Caller holds helper.lock. Every signal blocked in the new thread (it
 * inherits the creator's mask): a signal sent to the process must reach one
 * of the program's threads, as it would without the shim. */
static bool start_helper_locked(void)
{
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_attr_t attr;
    bool ok = pthread_attr_init(&attr) == 0;
    pthread_t t;
    if (ok) {
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        /* It needs little: a wait and a system call. */
        pthread_attr_setstacksize(&attr, 64u << 10);
        ok = pthread_create(&t, &attr, helper_main, NULL) == 0;
        pthread_attr_destroy(&attr);
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (ok)
        pthread_setname_np(t, "cumemtrace-pop");
    return ok;
}

void cmt_populate_request(enum cmt_populate_mode mode, uint8_t *addr, size_t len)
{
    if (len == 0 || mode == CMT_POPULATE_OFF || __atomic_load_n(&refused, __ATOMIC_RELAXED))
        return;
    if (mode == CMT_POPULATE_THREAD && !__atomic_load_n(&no_helper, __ATOMIC_RELAXED) &&
        !sanitizer_runtime_loaded()) {
        pthread_mutex_lock(&helper.lock);
        if (!helper.running && !helper.unstartable) {
            helper.running = start_helper_locked();
            helper.unstartable = !helper.running;
        }
        if (helper.running) {
            if (helper.len != 0 && helper.addr + helper.len == addr) {
                helper.len += len;
            } else {
                helper.addr = addr;
                helper.len = len;
            }
            pthread_cond_signal(&helper.wake);
            pthread_mutex_unlock(&helper.lock);
            return;
        }
        pthread_mutex_unlock(&helper.lock);
    }
    populate_now(addr, len);
}

bool cmt_populate_refused(void)
{
    return __atomic_load_n(&refused, __ATOMIC_RELAXED);
}

bool cmt_populate_helper_running(void)
{
    pthread_mutex_lock(&helper.lock);
    bool r = helper.running;
    pthread_mutex_unlock(&helper.lock);
    return r;
}

void cmt_populate_fork_child(void)
{
    __atomic_store_n(&no_helper, true, __ATOMIC_RELAXED);
    /* The helper may have held the lock when the parent forked. */
    pthread_mutex_init(&helper.lock, NULL);
    pthread_cond_init(&helper.wake, NULL);
    helper.addr = NULL;
    helper.len = 0;
    helper.running = false;
    helper.unstartable = false;
}
