/* SPDX-License-Identifier: MIT */
/* Built with -fsanitize=address in every build (issue 15): allocates, then
 * forks N children one after the other; each allocates 2 and frees 1 and
 * exits normally, which runs ASan's exit-time leak check. A child exits 10
 * when it has more than its one thread (the shim started a thread of its
 * own there). Prints "parent threads T children ok N".
 * Usage: asan_fork N */
#include <cuda_runtime_api.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#define MiB (1u << 20)

static int threads(void)
{
    DIR *d = opendir("/proc/self/task");
    int n = 0;
    if (!d)
        return -1;
    for (struct dirent *e; (e = readdir(d));)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 10;
    void *keep;
    if (cudaMalloc(&keep, 1 * MiB))
        return 3;
    int ok = 0;
    for (int i = 0; i < n; i++) {
        pid_t pid = fork();
        if (pid < 0)
            return 4;
        if (pid == 0) {
            void *a, *b;
            if (cudaMalloc(&a, 1 * MiB) || cudaMalloc(&b, 2 * MiB) || cudaFree(b))
                _exit(5);
            exit(threads() == 1 ? 0 : 10);
        }
        int status;
        if (waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0)
            ok++;
        else
            fprintf(stderr, "child %d: status 0x%x\n", i, status);
    }
    printf("parent threads %d children ok %d\n", threads(), ok);
    return ok == n ? 0 : 1;
}
