/* SPDX-License-Identifier: MIT */
/* Replays inputs through the fuzz target without libFuzzer, the way
 * systemd's src/fuzz/fuzz-main.c does: every file named, and every file in
 * every directory named, in name order. Any crash, sanitizer report or
 * valgrind error fails the test that runs it, and so does a peak resident
 * size over CMT_FUZZ_RSS_LIMIT_MB (default 512, what scripts/fuzz.sh gives
 * libFuzzer's -rss_limit_mb): the inputs are small, so memory in proportion
 * to them stays far below it. */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "%s: cannot open: %s\n", path, strerror(errno));
        return -1;
    }
    size_t cap = 4096, n = 0;
    uint8_t *buf = malloc(cap);
    for (;;) {
        if (!buf) {
            fclose(f);
            fprintf(stderr, "%s: out of memory\n", path);
            return -1;
        }
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap)
            break;
        cap *= 2;
        uint8_t *more = realloc(buf, cap);
        if (!more)
            free(buf);
        buf = more;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        fprintf(stderr, "%s: read error\n", path);
        return -1;
    }
    /* An exact-size copy, so ASan and valgrind catch a read one past the end. */
    uint8_t *exact = malloc(n ? n : 1);
    if (!exact) {
        free(buf);
        return -1;
    }
    memcpy(exact, buf, n);
    free(buf);
    LLVMFuzzerTestOneInput(exact, n);
    free(exact);
    return 0;
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int run_dir(const char *dir, size_t *count)
{
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "%s: cannot open directory: %s\n", dir, strerror(errno));
        return -1;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    int rc = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            char **more = realloc(names, cap * sizeof *names);
            if (!more) {
                rc = -1;
                break;
            }
            names = more;
        }
        if (!(names[n] = strdup(e->d_name))) {
            rc = -1;
            break;
        }
        n++;
    }
    closedir(d);
    if (n)
        qsort(names, n, sizeof *names, name_cmp);
    for (size_t i = 0; i < n; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        struct stat st;
        if (rc == 0 && stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
            if (run_file(path) != 0)
                rc = -1;
            else
                (*count)++;
        }
        free(names[i]);
    }
    free(names);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE|DIR...\nreplays each input through the fuzz target\n", argv[0]);
        return 2;
    }
    size_t count = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "%s: %s\n", argv[i], strerror(errno));
            return 1;
        }
        int rc = S_ISDIR(st.st_mode) ? run_dir(argv[i], &count) : run_file(argv[i]);
        if (rc != 0)
            return 1;
        if (!S_ISDIR(st.st_mode))
            count++;
    }
    if (count == 0) {
        fprintf(stderr, "no inputs found: an empty corpus tests nothing\n");
        return 1;
    }
    long limit_mb = 512;
    const char *env = getenv("CMT_FUZZ_RSS_LIMIT_MB");
    if (env && *env)
        limit_mb = strtol(env, NULL, 10);
    struct rusage ru = {0};
    getrusage(RUSAGE_SELF, &ru);
    if (limit_mb > 0 && ru.ru_maxrss / 1024 > limit_mb) {
        fprintf(stderr, "peak resident size %ld MiB is over the %ld MiB limit: an input made the analyzer "
                        "allocate out of proportion to its size (run the inputs one by one to find it)\n",
                ru.ru_maxrss / 1024, limit_mb);
        return 1;
    }
    printf("%zu inputs replayed, peak resident size %ld MiB\n", count, ru.ru_maxrss / 1024);
    return 0;
}
