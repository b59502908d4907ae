/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_SIZE_PARSE_H
#define CUMEMTRACE_SIZE_PARSE_H

#include <stdint.h>

/* Parses a byte count such as "4096", "64KiB", "1.5 GiB", "2G" or "10MB".
 * Binary (KiB, MiB, GiB, TiB, and bare K, M, G, T) and decimal (kB, MB, GB,
 * TB) units are accepted, case-insensitively for the binary ones. Returns 0 and
 * stores the value on success, -1 for anything else (empty, negative, unknown
 * unit, overflow). Never allocates; safe in the shim's constructor. */
int cmt_parse_size(const char *text, uint64_t *out);

/* Formats bytes for people: "0 B", "512 B", "1.5 KiB", "64.0 MiB". */
void cmt_format_size(uint64_t bytes, char *buf, unsigned long buflen);

#endif
