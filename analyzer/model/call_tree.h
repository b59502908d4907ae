/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_CALL_TREE_H
#define CUMEMTRACE_ANALYZER_CALL_TREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "frames.h"

/* What was live at one instant as a call tree: the root stands for the
 * whole snapshot, its children are the outermost frames (main, a thread's
 * start routine), and each path down is a stack as the report shows it
 * (symbolized, folded). A node's inclusive bytes are those of every
 * allocation made in it or below it; its self bytes those made with it as
 * the innermost shown frame. Two frames are the same node when they name
 * the same function in the same file with the same inline status under the
 * same parent, whatever their lines (a function calling the allocator from
 * three lines is one node that knows its lines); frames without a function
 * name are the same node when they have the same address. */

#define CMT_TREE_MAX_LINES 6

#define CMT_TREE_NONE UINT32_MAX

struct cmt_tree_node {
    const struct cmt_frame *frame; /* NULL for the root; owned by the cmt_frames cache */
    uint64_t inclusive, self;
    uint64_t inclusive_count, self_count;
    uint32_t first_child, next_sibling; /* CMT_TREE_NONE: none */
    uint32_t last_child;                /* while building: where the next child goes */
    uint32_t lines[CMT_TREE_MAX_LINES];  /* lowest distinct source lines, ascending */
    uint8_t n_lines;
    bool more_lines;                     /* more than CMT_TREE_MAX_LINES */
};

/* A slot of the index that finds a node's child by frame. */
struct cmt_tree_slot {
    uint64_t key;   /* the parent and the frame, hashed */
    uint32_t node;  /* 0: empty (the root is nobody's child) */
    uint32_t parent;
};

struct cmt_call_tree {
    struct cmt_tree_node *nodes; /* [0] is the root */
    size_t n, cap;
    /* (parent, frame) -> child, open addressing, at most half full, hashed
     * multiply-shift with a random odd multiplier (hash_seed.h): scanning
     * siblings instead made a crafted trace of 40,000 one-frame stacks,
     * 40,000 children of the root, take 3.6 s (quadratic). */
    struct cmt_tree_slot *index;
    size_t index_cap;
    uint64_t hash_mult;
    unsigned hash_shift;
};

int cmt_call_tree_init(struct cmt_call_tree *t);
void cmt_call_tree_free(struct cmt_call_tree *t);
/* Adds bytes/count held by a stack (frames innermost first, as cached by
 * cmt_frames: they must outlive the tree). */
int cmt_call_tree_add(struct cmt_call_tree *t, const struct cmt_stack_frames *sf, uint64_t bytes,
                      uint64_t count);
/* Orders every node's children by inclusive bytes, largest first. */
int cmt_call_tree_sort(struct cmt_call_tree *t);

/* "function at file:12,40" / the frame as cmt_frame_describe says it. */
void cmt_tree_node_describe(const struct cmt_tree_node *n, char *buf, size_t len);

#endif
