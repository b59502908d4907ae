/* SPDX-License-Identifier: MIT */
/* Signals sent to the process reach the program's own threads, never a
 * thread of the shim's: the main thread allocates (which starts the trace and
 * the shim's page-populating helper), blocks SIGUSR1 and sends it to the
 * process N times; a second program thread, the only one of the program's
 * with SIGUSR1 open, must take every one. Prints "signals N on-receiver K
 * elsewhere E helpers H" (H: threads named cumemtrace-pop), then forks: the
 * child allocates and prints "child helpers H" (the helper did not come
 * along, and none is started in a child). */
#include <cuda_runtime_api.h>
#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile pid_t receiver_tid;
static volatile sig_atomic_t handled_on_receiver, handled_elsewhere;
static volatile sig_atomic_t stop;

static void on_usr1(int sig)
{
    (void)sig;
    if ((pid_t)syscall(SYS_gettid) == receiver_tid)
        handled_on_receiver++;
    else
        handled_elsewhere++;
}

static void *receiver(void *arg)
{
    (void)arg;
    receiver_tid = (pid_t)syscall(SYS_gettid);
    while (!stop)
        pause();
    return NULL;
}

static int helper_threads(void)
{
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return -1;
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        char path[320], comm[32] = "";
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", de->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        if (fgets(comm, sizeof comm, f) && !strncmp(comm, "cumemtrace-pop", 14))
            n++;
        fclose(f);
    }
    closedir(d);
    return n;
}

/* Enough allocations to claim chunks, so the trace asks for pages ahead. */
static int allocate(int n)
{
    for (int i = 0; i < n; i++) {
        void *p;
        if (cudaMalloc(&p, 4096) != cudaSuccess || cudaFree(p) != cudaSuccess)
            return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 200;
    if (allocate(1000))
        return 1;
    struct sigaction sa = {.sa_handler = on_usr1};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, NULL);
    pthread_t t;
    if (pthread_create(&t, NULL, receiver, NULL) != 0)
        return 1;
    sigset_t usr1;
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    pthread_sigmask(SIG_BLOCK, &usr1, NULL);
    while (!receiver_tid)
        sched_yield();
    for (int i = 0; i < n; i++) {
        int before = handled_on_receiver + handled_elsewhere;
        kill(getpid(), SIGUSR1);
        /* One at a time: a second SIGUSR1 pending with the first would merge. */
        for (int w = 0; w < 5000 && handled_on_receiver + handled_elsewhere == before; w++) {
            struct timespec ms = {0, 1000000};
            nanosleep(&ms, NULL);
        }
        if (allocate(10))
            return 1;
    }
    printf("signals %d on-receiver %d elsewhere %d helpers %d\n", n, (int)handled_on_receiver,
           (int)handled_elsewhere, helper_threads());
    fflush(stdout);
    stop = 1;
    pthread_kill(t, SIGUSR1);
    pthread_join(t, NULL);
    pid_t child = fork();
    if (child == 0) {
        int before = helper_threads();
        if (allocate(1000))
            _exit(1);
        printf("child helpers %d %d\n", before, helper_threads());
        fflush(stdout);
        _exit(0);
    }
    int status;
    waitpid(child, &status, 0);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
