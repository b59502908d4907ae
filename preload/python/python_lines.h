/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_PRELOAD_PYTHON_LINES_H
#define CUMEMTRACE_PRELOAD_PYTHON_LINES_H

#include <stddef.h>
#include <stdint.h>

/* The line of an instruction from a code object's line table, as CPython's
 * PyCode_Addr2Line works it out, for each format (python_runtime.h, enum
 * cmt_python_line_format). offset counts code units (2 bytes) from the
 * code's start. 0 when the table gives the instruction no line. Reads only
 * table[0..len). */
uint32_t cmt_python_line(unsigned format, const uint8_t *table, size_t len, int first_line, int offset);

#endif
