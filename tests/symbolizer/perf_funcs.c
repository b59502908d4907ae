/* SPDX-License-Identifier: MIT
 * Some 4000 small functions (-O0 -g) in one compilation unit: enough code
 * for 100,000 distinct addresses with DWARF behind them, and a CU large
 * enough that a per-address walk of all its DIEs would show. */
#include "perf_funcs.h"

#define PF(name)                                                              \
    int name(int x);                                                          \
    __attribute__((noinline)) int name(int x)                                \
    {                                                                         \
        int s = 0;                                                            \
        for (int i = 0; i < x; i++)                                           \
            s += i ^ x;                                                       \
        return s;                                                             \
    }
#define PF10(p) PF(p##0) PF(p##1) PF(p##2) PF(p##3) PF(p##4) PF(p##5) PF(p##6) PF(p##7) PF(p##8) PF(p##9)
#define PF100(p) PF10(p##0) PF10(p##1) PF10(p##2) PF10(p##3) PF10(p##4) PF10(p##5) PF10(p##6) PF10(p##7) PF10(p##8) PF10(p##9)
#define PF1000(p) PF100(p##0) PF100(p##1) PF100(p##2) PF100(p##3) PF100(p##4) PF100(p##5) PF100(p##6) PF100(p##7) PF100(p##8) PF100(p##9)

PF1000(perf_fn_a)
PF1000(perf_fn_b)
PF1000(perf_fn_c)
PF1000(perf_fn_d)

int perf_first(int x)
{
    return perf_fn_a000(x);
}
