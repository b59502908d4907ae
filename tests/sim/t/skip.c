/* SPDX-License-Identifier: MIT */
/* Stands in for a test whose prerequisite is missing: prints why and exits
 * 77, which meson reports as SKIP rather than passing silently. */
#include <stdio.h>

int main(int argc, char **argv)
{
    fprintf(stderr, "skipped: %s\n", argc > 1 ? argv[1] : "prerequisite missing");
    return 77;
}
