/* SPDX-License-Identifier: MIT */
#ifndef CMT_PERF_FUNCS_H
#define CMT_PERF_FUNCS_H
int perf_first(int x);
int perf_fn_a000(int x);
#endif
