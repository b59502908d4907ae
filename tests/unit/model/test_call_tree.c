/* SPDX-License-Identifier: MIT */
/* Inclusive and self bytes of a call tree; frames of one function at
 * different lines are one node that knows its lines. */
#include "call_tree.h"
#include "test_util.h"

static struct cmt_frame fr(const char *fn, int line, uint64_t ip)
{
    return (struct cmt_frame){.ip = ip, .function = fn, .file = "/src/a.c", .line = line, .module = "/bin/a"};
}

static const struct cmt_tree_node *child(const struct cmt_call_tree *t, uint32_t parent, size_t k)
{
    uint32_t c = t->nodes[parent].first_child;
    while (k-- && c != CMT_TREE_NONE)
        c = t->nodes[c].next_sibling;
    CHECK(c != CMT_TREE_NONE);
    return &t->nodes[c];
}

int main(void)
{
    /* innermost first */
    struct cmt_frame s1[] = {fr("leaf_a", 10, 0x10), fr("mid", 20, 0x20), fr("main", 30, 0x30)};
    struct cmt_frame s2[] = {fr("leaf_b", 11, 0x11), fr("mid", 21, 0x21), fr("main", 30, 0x30)};
    struct cmt_frame s3[] = {fr("mid", 22, 0x22), fr("main", 31, 0x31)};
    struct cmt_frame s4[] = {{.ip = 0x999, .module = "/lib/x.so"}};
    struct cmt_stack_frames st1 = {3, s1}, st2 = {3, s2}, st3 = {2, s3}, st4 = {1, s4}, none = {0, NULL};
    struct cmt_call_tree t;
    CHECK(cmt_call_tree_init(&t) == 0);
    CHECK(cmt_call_tree_add(&t, &st1, 100, 1) == 0);
    CHECK(cmt_call_tree_add(&t, &st2, 300, 3) == 0);
    CHECK(cmt_call_tree_add(&t, &st3, 50, 2) == 0);
    CHECK(cmt_call_tree_add(&t, &st4, 7, 1) == 0);
    CHECK(cmt_call_tree_add(&t, &none, 5, 1) == 0);
    CHECK(cmt_call_tree_sort(&t) == 0);
    const struct cmt_tree_node *root = &t.nodes[0];
    CHECK_EQ_U64(root->inclusive, 462);
    CHECK_EQ_U64(root->inclusive_count, 8);
    CHECK_EQ_U64(root->self, 5); /* no stack recorded */
    const struct cmt_tree_node *m = child(&t, 0, 0);
    CHECK_STR(m->frame->function, "main");
    CHECK_EQ_U64(m->inclusive, 450);
    CHECK_EQ_U64(m->self, 0);
    CHECK_EQ_U64(m->n_lines, 2); /* main called mid from lines 30 and 31 */
    CHECK_EQ_U64(m->lines[0], 30);
    CHECK_EQ_U64(m->lines[1], 31);
    const struct cmt_tree_node *raw = child(&t, 0, 1);
    CHECK(raw->frame->function == NULL && raw->frame->ip == 0x999);
    CHECK_EQ_U64(raw->self, 7);
    uint32_t mi = (uint32_t)(m - t.nodes);
    const struct cmt_tree_node *mid = child(&t, mi, 0);
    CHECK_STR(mid->frame->function, "mid");
    CHECK_EQ_U64(mid->inclusive, 450);
    CHECK_EQ_U64(mid->self, 50);
    CHECK_EQ_U64(mid->self_count, 2);
    uint32_t midi = (uint32_t)(mid - t.nodes);
    CHECK(mid->next_sibling == CMT_TREE_NONE);
    const struct cmt_tree_node *b = child(&t, midi, 0), *a = child(&t, midi, 1);
    CHECK_STR(b->frame->function, "leaf_b"); /* sorted: largest first */
    CHECK_EQ_U64(b->inclusive, 300);
    CHECK_EQ_U64(b->self, 300);
    CHECK_STR(a->frame->function, "leaf_a");
    CHECK_EQ_U64(a->self, 100);
    char buf[128];
    cmt_tree_node_describe(m, buf, sizeof buf);
    CHECK_STR(buf, "main at /src/a.c:30,31");
    cmt_call_tree_free(&t);

    /* Many children under one parent (found through the tree's index, which
     * grows while they come): 3000 raw frames under the root, each twice,
     * and 3000 functions under one of them; same-named frames from other
     * files stay apart. */
    CHECK(cmt_call_tree_init(&t) == 0);
    static struct cmt_frame bare[3000], fn[3000][2], other[3000][2];
    static char names[3000][16];
    for (uint64_t i = 0; i < 3000; i++)
        bare[i] = (struct cmt_frame){.ip = 0x100000 + 16 * i, .module = "/lib/x.so"};
    for (uint64_t i = 0; i < 3000; i++) {
        snprintf(names[i], sizeof names[i], "f%u", (unsigned)i);
        fn[i][0] = fr(names[i], (int)i + 1, 0x10 + i);
        fn[i][1] = bare[7];
        other[i][0] = fn[i][0];
        other[i][0].file = "/src/b.c";
        other[i][1] = bare[7];
    }
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < 3000; i++) {
            struct cmt_stack_frames one = {1, &bare[i]};
            CHECK(cmt_call_tree_add(&t, &one, i + 1, 1) == 0);
        }
    for (size_t i = 0; i < 3000; i++) {
        struct cmt_stack_frames two = {2, fn[i]}, two_other = {2, other[i]};
        CHECK(cmt_call_tree_add(&t, &two, 1000, 1) == 0);
        CHECK(cmt_call_tree_add(&t, &two, 1000, 1) == 0);
        CHECK(cmt_call_tree_add(&t, &two_other, 1, 1) == 0);
    }
    CHECK_EQ_U64(t.n, 1 + 3000 + 3000 + 3000);
    CHECK(cmt_call_tree_sort(&t) == 0);
    /* 2 * (1 + ... + 3000) + 3000 * 2001 */
    CHECK_EQ_U64(t.nodes[0].inclusive, 2 * 4501500 + 3000 * 2001);
    const struct cmt_tree_node *seventh = child(&t, 0, 0);
    CHECK_EQ_U64(seventh->frame->ip, bare[7].ip);
    CHECK_EQ_U64(seventh->inclusive, 2 * 8 + 3000 * 2001);
    CHECK_EQ_U64(seventh->self, 2 * 8);
    uint32_t si = (uint32_t)(seventh - t.nodes);
    /* its children: 3000 of 2000 bytes (a.c), then 3000 of 1 byte (b.c),
     * each group in the order first met */
    CHECK_STR(child(&t, si, 0)->frame->function, "f0");
    CHECK_EQ_U64(child(&t, si, 0)->inclusive, 2000);
    CHECK_EQ_U64(child(&t, si, 0)->n_lines, 1);
    CHECK_STR(child(&t, si, 2999)->frame->function, "f2999");
    CHECK_STR(child(&t, si, 3000)->frame->file, "/src/b.c");
    CHECK_EQ_U64(child(&t, si, 3000)->inclusive, 1);
    const struct cmt_tree_node *largest_bare = child(&t, 0, 1);
    CHECK_EQ_U64(largest_bare->frame->ip, bare[2999].ip);
    CHECK_EQ_U64(largest_bare->inclusive, 2 * 3000);
    cmt_call_tree_free(&t);
    return 0;
}
