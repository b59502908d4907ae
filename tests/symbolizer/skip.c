/* SPDX-License-Identifier: MIT
 * Stands in for a test that cannot be built here (exit 77: skipped). */
#include <stdio.h>

int main(void)
{
    puts("SKIP: no C++ compiler");
    return 77;
}
