/* SPDX-License-Identifier: MIT */
#include "symbol_options.h"

#include <inttypes.h>

#include "cli.h"
#include "memory_budget.h"
#include "size_parse.h"

enum {
    OPT_FOLD = CMT_SYMBOL_OPT_FIRST,
    OPT_UNFOLD,
    OPT_FULL_STACKS,
    OPT_DEBUGINFO_PATH,
    OPT_SYSROOT,
    OPT_NO_SYMBOLS,
    OPT_MAX_MEMORY,
    OPT_END
};

static const struct option symbol_longopts[CMT_SYMBOL_LONGOPTS_MAX] = {
    {"fold", required_argument, NULL, OPT_FOLD},
    {"unfold", required_argument, NULL, OPT_UNFOLD},
    {"full-stacks", no_argument, NULL, OPT_FULL_STACKS},
    {"debuginfo-path", required_argument, NULL, OPT_DEBUGINFO_PATH},
    {"sysroot", required_argument, NULL, OPT_SYSROOT},
    {"no-symbols", no_argument, NULL, OPT_NO_SYMBOLS},
    {"max-memory", required_argument, NULL, OPT_MAX_MEMORY},
};

void cmt_symbol_longopts(struct option *opts, size_t *n)
{
    for (size_t i = 0; i < CMT_SYMBOL_LONGOPTS_MAX; i++)
        opts[(*n)++] = symbol_longopts[i];
}

bool cmt_symbol_is_option(int value)
{
    return value >= OPT_FOLD && value < OPT_END;
}

static int add(const char **list, size_t *n, const char *value, const char *cmd, const char *name)
{
    if (*n == CMT_FRAMES_ARGS_MAX) {
        cmt_cli_error("%s: at most %d %s options", cmd, CMT_FRAMES_ARGS_MAX, name);
        return -1;
    }
    list[(*n)++] = value;
    return 0;
}

int cmt_symbol_parse(const char *cmd, int value, const char *arg, struct cmt_frames_args *a)
{
    switch (value) {
    case OPT_FOLD:
        return add(a->folds, &a->n_folds, arg, cmd, "--fold");
    case OPT_UNFOLD:
        return add(a->unfolds, &a->n_unfolds, arg, cmd, "--unfold");
    case OPT_DEBUGINFO_PATH:
        return add(a->debuginfo_paths, &a->n_debuginfo_paths, arg, cmd, "--debuginfo-path");
    case OPT_FULL_STACKS:
        a->full_stacks = true;
        return 0;
    case OPT_SYSROOT:
        a->sysroot = arg;
        return 0;
    case OPT_NO_SYMBOLS:
        a->no_symbols = true;
        return 0;
    case OPT_MAX_MEMORY:
        return cmt_memory_option(cmd, arg);
    default:
        return -1;
    }
}

int cmt_memory_option(const char *cmd, const char *arg)
{
    uint64_t bytes;
    if (cmt_parse_size(arg, &bytes) != 0) {
        cmt_cli_error("%s: --max-memory needs a size such as 4GiB, 512MiB or 0 (no limit), got '%s'", cmd, arg);
        return -1;
    }
    cmt_memory_budget_set(bytes);
    return 0;
}
