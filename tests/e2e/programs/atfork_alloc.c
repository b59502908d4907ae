/* SPDX-License-Identifier: MIT */
/* Hooks called from the program's own fork handlers: prepare and parent
 * handlers allocate in the parent, the child handler in the child. */
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

static void *kept[3];

static void in_prepare(void) { cudaMalloc(&kept[0], 1u << 20); }
static void in_parent(void) { cudaMalloc(&kept[1], 2u << 20); }
static void in_child(void) { cudaMalloc(&kept[2], 3u << 20); }

int main(void)
{
    pthread_atfork(in_prepare, in_parent, in_child);
    pid_t pid = fork();
    if (pid == 0)
        return kept[2] ? 0 : 5;
    int status;
    waitpid(pid, &status, 0);
    printf("child status %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    return 0;
}
