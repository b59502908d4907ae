/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_PRELOAD_PYTHON_LOCATIONS_H
#define CUMEMTRACE_PRELOAD_PYTHON_LOCATIONS_H

#include <stddef.h>
#include <stdint.h>

/* Python code locations interned as FRAME records: each (file, function,
 * line) is written once; a stack refers to it by id. Looking up where a
 * frame is costs one hash probe keyed by the code object and the
 * instruction; the line is worked out once per key.
 *
 * A code object's address can be reused once it is freed, so the key also
 * holds what identifies the code it was: its filename, name and line-table
 * objects (which it owns or shares, freed or kept with it) and its first
 * line. A new code object matching all of them at the same addresses is the
 * same source recompiled, whose instruction offsets mean the same lines. */
struct cmt_python_code_key {
    uint64_t code, filename, name, linetable;
    int32_t firstlineno;
    int32_t offset; /* in code units */
};

/* The FRAME id of a key seen before, or 0. Any thread, no lock. */
uint32_t cmt_python_location_find(const struct cmt_python_code_key *k);

/* Records the key's location (writing the FRAME record and its strings if
 * the location is new) and returns its FRAME id, 0 if it cannot be written.
 * Caller holds cmt_recorder.meta.lock. */
uint32_t cmt_python_location_add_locked(const struct cmt_python_code_key *k, const char *file, size_t file_len,
                                        const char *function, size_t function_len, uint32_t line);

/* A new trace starts: FRAME ids restart. */
void cmt_python_locations_reset(void);

/* Bumped by each reset: what a thread remembers of ids from before is void. */
extern uint32_t cmt_python_locations_epoch;

#endif
