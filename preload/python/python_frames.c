/* SPDX-License-Identifier: MIT */
/* Walking the calling thread's Python frames without the GIL.
 *
 * The thread state comes from PyGILState_GetThisThreadState: the calling
 * thread's own, whether it holds the GIL or released it around a C call (as
 * ctypes and PyTorch do); NULL in a thread Python never saw (NCCL's, a
 * library's worker threads). Only the owning thread pushes and pops its frame
 * chain, and that thread is here, in a hook: the chain is stable while it is
 * read. The code objects and strings the frames name are kept alive by the
 * frames. Every pointer is still checked before it is followed (non-null,
 * aligned, in the user half of the address space, the object's type where
 * it has one) and the walk is bounded, so a layout that does not match
 * yields fewer frames, not a wild read. Nothing is written, no lock of the
 * interpreter is taken, no object is created. */
#include "python_frames.h"
#include "thread_block.h"

#include <pthread.h>
#include <string.h>

#include "python_lines.h"
#include "python_locations.h"
#include "python_runtime.h"
#include "recorder.h"

#define WALK_LIMIT 4096u      /* frames followed, Python or not */
#define NAME_MAX_BYTES 1024u  /* longer names and paths are cut */
#define LINE_TABLE_MAX (1u << 24)
#define MEMO_FRAMES 64u       /* innermost frames remembered per thread */

/* What this thread found at each of its innermost frames last time: a loop
 * allocating from one place walks the same frames again, and comparing a key
 * with the one remembered at the same depth costs less than a probe of the
 * shared table (measured: bench/run_python_bench.py). The whole key is
 * compared, so a hit is exactly as sure as a table hit. */
struct memo_entry {
    struct cmt_python_code_key key;
    uint32_t id;
};

/* The table lives in a block of its own (thread_block.h: 3 KiB of static
 * TLS made the shim impossible to dlopen); NULL until the thread walks its
 * first Python frames, and when no block could be had (then every frame
 * probes the shared table). */
struct memo {
    uint32_t epoch;
    struct memo_entry entry[MEMO_FRAMES];
};
static struct cmt_thread_block memo_blocks;
static __thread struct memo *memo __attribute__((tls_model("initial-exec")));

void cmt_python_frames_init(void)
{
    cmt_thread_block_init(&memo_blocks, sizeof(struct memo));
}

static inline bool plausible(uint64_t p)
{
    return p >= 4096 && p < (1ull << 47) && (p & 7) == 0;
}

/* The interpreter's memory is not the program's locals: the address
 * sanitizer has nothing to say about it. */
__attribute__((no_sanitize("address"))) static inline uint64_t read64(uint64_t a)
{
    uint64_t v;
    __builtin_memcpy(&v, (const void *)(uintptr_t)a, sizeof v);
    return v;
}

__attribute__((no_sanitize("address"))) static inline uint32_t read32(uint64_t a)
{
    uint32_t v;
    __builtin_memcpy(&v, (const void *)(uintptr_t)a, sizeof v);
    return v;
}

__attribute__((no_sanitize("address"))) static inline uint8_t read8(uint64_t a)
{
    return *(const volatile uint8_t *)(uintptr_t)a;
}

/* ---- strings ------------------------------------------------------------ */

static size_t put_utf8(char *out, size_t at, size_t cap, uint32_t c)
{
    char b[4];
    size_t n;
    if (c < 0x80) {
        b[0] = (char)c, n = 1;
    } else if (c < 0x800) {
        b[0] = (char)(0xc0 | c >> 6), b[1] = (char)(0x80 | (c & 63)), n = 2;
    } else if (c < 0x10000) {
        if (c >= 0xd800 && c < 0xe000)
            c = 0xfffd; /* a lone surrogate is no UTF-8 */
        b[0] = (char)(0xe0 | c >> 12), b[1] = (char)(0x80 | ((c >> 6) & 63)), b[2] = (char)(0x80 | (c & 63)), n = 3;
    } else {
        b[0] = (char)(0xf0 | c >> 18), b[1] = (char)(0x80 | ((c >> 12) & 63));
        b[2] = (char)(0x80 | ((c >> 6) & 63)), b[3] = (char)(0x80 | (c & 63)), n = 4;
    }
    if (at + n > cap)
        return at;
    memcpy(out + at, b, n);
    return at + n;
}

/* A str object as UTF-8 (compact strings: what code objects hold); "?" for
 * anything else. */
__attribute__((no_sanitize("address"))) static size_t read_string(const struct cmt_python_layout *l, uint64_t s,
                                                                  char *out, size_t cap)
{
    if (!plausible(s) || read64(s + l->ob_type) != l->unicode_type)
        goto unreadable;
    uint32_t state = read32(s + l->str_state);
    unsigned kind = (state >> 2) & 7, compact = (state >> 5) & 1, ascii = (state >> 6) & 1;
    uint64_t length = read64(s + l->str_length);
    if (!compact || (kind != 1 && kind != 2 && kind != 4) || length > NAME_MAX_BYTES)
        goto unreadable;
    uint64_t data = s + (ascii ? l->str_ascii_data : l->str_compact_data);
    size_t n = 0;
    for (uint64_t i = 0; i < length; i++) {
        uint32_t c = kind == 1 ? read8(data + i) : kind == 2 ? (uint32_t)read8(data + 2 * i) | (uint32_t)read8(data + 2 * i + 1) << 8 : read32(data + 4 * i);
        if (c > 0x10ffff)
            c = 0xfffd;
        size_t next = put_utf8(out, n, cap, c);
        if (next == n)
            break;
        n = next;
    }
    return n;
unreadable:
    out[0] = '?';
    return 1;
}

/* ---- frames ------------------------------------------------------------- */

/* A location not seen before: its line and names, under the metadata lock. */
__attribute__((no_sanitize("address"))) static uint32_t resolve(const struct cmt_python_layout *l,
                                                               const struct cmt_python_code_key *k)
{
    static char file[4 * NAME_MAX_BYTES], function[4 * NAME_MAX_BYTES]; /* under the lock */
    uint32_t line = 0;
    if (plausible(k->linetable)) {
        uint64_t len = read64(k->linetable + l->bytes_size);
        const uint8_t *table = (const uint8_t *)(uintptr_t)(k->linetable + l->bytes_data);
        if (len < LINE_TABLE_MAX)
            line = cmt_python_line(l->line_format, table, len, k->firstlineno, k->offset);
    }
    pthread_mutex_lock(&cmt_recorder.meta.lock);
    size_t file_len = read_string(l, k->filename, file, sizeof file);
    size_t function_len = read_string(l, k->name, function, sizeof function);
    uint32_t id = cmt_python_location_add_locked(k, file, file_len, function, function_len, line);
    pthread_mutex_unlock(&cmt_recorder.meta.lock);
    return id;
}

static inline bool same_key(const struct cmt_python_code_key *a, const struct cmt_python_code_key *b)
{
    return a->code == b->code && a->offset == b->offset && a->filename == b->filename && a->name == b->name &&
           a->linetable == b->linetable && a->firstlineno == b->firstlineno;
}

/* The FRAME id of a frame's current location, the depth-th Python frame
 * from the innermost; 0 when it has none (a frame not started yet,
 * something that is not a code object). */
__attribute__((no_sanitize("address"))) static uint32_t frame_location(const struct cmt_python_layout *l,
                                                                      uint64_t frame, unsigned depth)
{
    /* 3.14 keeps f_executable as a tagged reference: the low bits are tags. */
    uint64_t code = read64(frame + l->fr_code) & ~(uint64_t)7;
    if (!plausible(code) || read64(code + l->ob_type) != l->code_type)
        return 0;
    int64_t units, offset;
    if (l->frame_objects) {
        /* 3.9, 3.10: the code's bytes object and the frame's f_lasti. */
        uint64_t bytes = read64(code + l->co_code);
        if (!plausible(bytes))
            return 0;
        units = (int64_t)read64(bytes + l->bytes_size) / 2;
        int32_t lasti = (int32_t)read32(frame + l->fr_lasti);
        if (lasti < 0)
            return 0; /* not started */
        offset = l->lasti_in_bytes ? lasti / 2 : lasti;
    } else {
        units = (int64_t)read64(code + l->co_size);
        offset = ((int64_t)read64(frame + l->fr_instr) - (int64_t)(code + l->co_code)) / 2;
    }
    if (offset < 0 || offset >= units)
        return 0;
    struct cmt_python_code_key k = {
        .code = code,
        .filename = read64(code + l->co_filename),
        .name = read64(code + l->co_name),
        .linetable = read64(code + l->co_linetable),
        .firstlineno = (int32_t)read32(code + l->co_firstlineno),
        .offset = (int32_t)offset,
    };
    struct memo_entry *m = memo && depth < MEMO_FRAMES ? &memo->entry[depth] : NULL;
    if (m && m->id && same_key(&m->key, &k))
        return m->id;
    uint32_t id = cmt_python_location_find(&k);
    if (!id)
        id = resolve(l, &k);
    if (id && m)
        *m = (struct memo_entry){k, id};
    return id;
}

static bool close_segment(struct cmt_py_stack *s)
{
    if (s->nseg == CMT_PY_MAX_SEGMENTS)
        return false;
    s->seg_end[s->nseg++] = s->n;
    return true;
}

__attribute__((no_sanitize("address"))) void cmt_python_collect(struct cmt_py_stack *s, unsigned max)
{
    s->n = s->nseg = 0;
    const struct cmt_python_layout *l = cmt_python_layout();
    if (!l)
        return;
    /* Before the interpreter is up its thread-specific key may not exist;
     * from finalization on, thread states are being freed. */
    if (read32(l->runtime + l->rt_core_initialized) == 0 || read64(l->runtime + l->rt_finalizing) != 0)
        return;
    uint64_t ts = (uint64_t)(uintptr_t)l->this_thread_state();
    if (!plausible(ts))
        return;
    uint64_t frame;
    if (l->ts_cframe >= 0) {
        uint64_t cframe = read64(ts + (uint64_t)l->ts_cframe);
        if (!plausible(cframe))
            return;
        frame = read64(cframe + l->current_frame);
    } else {
        frame = read64(ts + l->current_frame);
    }
    if (max > CMT_MAX_STACK_DEPTH)
        max = CMT_MAX_STACK_DEPTH;
    uint32_t epoch = __atomic_load_n(&cmt_python_locations_epoch, __ATOMIC_ACQUIRE);
    if (cmt_thread_block_get(&memo_blocks, (void **)&memo) && memo->epoch != epoch) {
        memset(memo->entry, 0, sizeof memo->entry);
        memo->epoch = epoch;
    }
    for (unsigned walked = 0; frame && walked < WALK_LIMIT && s->n < max; walked++) {
        if (!plausible(frame))
            break;
        if (l->frame_objects) {
            /* 3.9, 3.10: one frame object per call of the loop. */
            uint32_t id = frame_location(l, frame, s->n);
            if (id)
                s->ids[s->n++] = id;
            if (!close_segment(s))
                break;
            frame = read64(frame + l->fr_previous);
            continue;
        }
        uint8_t owner = read8(frame + l->fr_owner);
        if (l->owner_cstack && owner == l->owner_cstack) {
            /* The entry frame of one loop call: the frames above it were
             * that call's. */
            if (!close_segment(s))
                break;
        } else if (owner <= l->owner_python_max) {
            uint32_t id = frame_location(l, frame, s->n);
            if (id)
                s->ids[s->n++] = id;
            if (l->fr_is_entry >= 0 && read8(frame + (uint64_t)l->fr_is_entry) && !close_segment(s))
                break;
        }
        frame = read64(frame + l->fr_previous);
    }
    if (s->n > (s->nseg ? s->seg_end[s->nseg - 1] : 0))
        close_segment(s);
    if (s->nseg && s->seg_end[s->nseg - 1] < s->n)
        s->n = s->seg_end[s->nseg - 1]; /* segments full: frames past the last one cannot be placed */
}

unsigned cmt_python_merge(const struct cmt_py_stack *py, const uint64_t *ips, unsigned n, bool cut, uint64_t *out,
                          unsigned depth)
{
    const struct cmt_python_layout *l = cmt_python_layout();
    unsigned o = 0, seg = 0, next = 0, i = 0;
    for (; i < n && o < depth; i++) {
        uint64_t at = ips[i] - 1; /* a return address is one past its call */
        if (seg < py->nseg && at >= l->eval_lo && at < l->eval_hi) {
            unsigned end = py->seg_end[seg++];
            if (end == next)
                out[o++] = ips[i]; /* a loop call that ran no Python frame we could read */
            for (; next < end && o < depth; next++)
                out[o++] = CMT_FRAME_SYNTHETIC_BIT | py->ids[next];
            next = end;
        } else {
            out[o++] = ips[i];
        }
    }
    /* The unwind stopped before the loop frames (code without unwind
     * information, say): the Python frames still come, outermost last. */
    for (; !cut && next < py->n && o < depth; next++)
        out[o++] = CMT_FRAME_SYNTHETIC_BIT | py->ids[next];
    /* The depth limit cut the native walk before the loop frames of the
     * rest: make room for those Python frames, the innermost first, in place
     * of the outermost native frames kept (at least a quarter of the limit
     * stays native). Seen on the H200: a GPT-2 model's native stacks (cuBLAS,
     * ATen, autograd, a dozen module calls) are deeper than the default 64
     * frames, and its sites lost the script's line. */
    if (cut && i == n && next < py->n) {
        unsigned rest = py->n - next;
        unsigned native = rest < depth - depth / 4 ? depth - rest : depth / 4;
        if (o > native)
            o = native;
        for (; next < py->n && o < depth; next++)
            out[o++] = CMT_FRAME_SYNTHETIC_BIT | py->ids[next];
    }
    return o;
}
