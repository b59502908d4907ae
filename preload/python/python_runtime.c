/* SPDX-License-Identifier: MIT */
/* Which CPython runs in the process, and where its structures keep what a
 * stack needs. Per version:
 *   3.11, 3.12  offsets written below, from the version's headers
 *               (Include/cpython/pystate.h, Include/internal/pycore_frame.h,
 *               Include/cpython/code.h, unicodeobject.h, bytesobject.h,
 *               pycore_runtime.h); 3.11's checked by compiling against the
 *               installed 3.11 headers and by the e2e tests, 3.12's by the
 *               headers only until the H200 run (docs/design.md);
 *   3.13, 3.14  read at run time from _PyRuntime.debug_offsets (the
 *               "xdebugpy" block CPython keeps for debuggers), whose own
 *               layout per version is written below, and validated: cookie,
 *               version equal to Py_Version, not free-threaded, every offset
 *               inside the size it belongs to;
 *   3.9, 3.10   offsets written below, from the version's headers (frame
 *               objects, co_lnotab / the 3.10 line table); the version from
 *               Py_GetVersion, as neither has Py_Version; headers only;
 *   other       not known: native frames only, and one note in the trace.
 * docs/design.md, "Python frames", gives the reasoning. */
#include "python_runtime.h"

#include <stdio.h>
#include <string.h>

#include "config.h"
#include "elf_symbols.h"
#include "recorder.h"

const struct cmt_python_layout *cmt_python_active;
int cmt_python_note_due;

static struct cmt_python_layout layout;
enum { SCAN_LOOKING, SCAN_FOUND, SCAN_UNKNOWN };
static int scan_state = SCAN_LOOKING; /* under the metadata lock */
static char note_text[160];

static void trace_reset(void)
{
    /* The interpreter stays what it was; only the note belongs to a trace. */
    if (scan_state == SCAN_UNKNOWN)
        __atomic_store_n(&cmt_python_note_due, 1, __ATOMIC_RELEASE);
}

/* 3.9 and 3.10: from the headers (Include/cpython/pystate.h: frame after
 * prev, next, interp; Include/cpython/frameobject.h; Include/cpython/code.h
 * with co_cell2arg before co_filename; pycore_runtime.h without the
 * _initialized field of 3.11). */
static void layout_3_9_3_10(struct cmt_python_layout *l)
{
    l->frame_objects = true;
    l->rt_core_initialized = 8, l->rt_finalizing = 16;
    l->ts_cframe = -1, l->current_frame = 24;
    l->fr_previous = 24 /* f_back */, l->fr_code = 32, l->fr_is_entry = -1, l->fr_owner = 0;
    l->fr_lasti = l->minor == 9 ? 104 : 96;
    l->lasti_in_bytes = l->minor == 9;
    l->line_format = l->minor == 9 ? CMT_PY_LINES_LNOTAB : CMT_PY_LINES_LINETABLE;
    l->owner_cstack = 0, l->owner_python_max = 255;
    l->co_code = 48 /* the bytes object */, l->co_firstlineno = 40, l->co_filename = 104, l->co_name = 112;
    l->co_linetable = 120;
    l->str_ascii_data = 48, l->str_compact_data = 72;
}

/* The version of an interpreter without Py_Version: Py_GetVersion formats
 * constants into a static buffer, takes no lock, makes no object. */
static bool version_from_string(const struct dl_phdr_info *info, unsigned *major, unsigned *minor)
{
    struct cmt_elf_symbol get_version;
    if (!cmt_elf_find_symbol(info, "Py_GetVersion", &get_version))
        return false;
    const char *v = ((const char *(*)(void))(uintptr_t)get_version.address)();
    if (!v || v[0] < '0' || v[0] > '9' || v[1] != '.' || v[2] < '0' || v[2] > '9')
        return false;
    *major = (unsigned)(v[0] - '0');
    *minor = (unsigned)(v[2] - '0');
    if (v[3] >= '0' && v[3] <= '9')
        *minor = *minor * 10 + (unsigned)(v[3] - '0');
    return true;
}

/* 3.11: verified with offsetof against the 3.11.7 headers. */
static void layout_3_11(struct cmt_python_layout *l)
{
    l->rt_core_initialized = 12, l->rt_finalizing = 24;
    l->ts_cframe = 56, l->current_frame = 8;
    l->fr_code = 32, l->fr_previous = 48, l->fr_instr = 56, l->fr_is_entry = 68, l->fr_owner = 69;
    l->owner_cstack = 0, l->owner_python_max = 2;
    l->co_filename = 112, l->co_name = 128 /* co_qualname */, l->co_linetable = 136, l->co_firstlineno = 72;
    l->co_code = 184;
    l->str_ascii_data = 48, l->str_compact_data = 72;
}

/* 3.12: from the 3.12 headers (no cframe->use_tracing any more; the frame's
 * f_code first; the entry frame each loop call pushes is owned by the C
 * stack, 3). */
static void layout_3_12(struct cmt_python_layout *l)
{
    l->rt_core_initialized = 12, l->rt_finalizing = 24;
    l->ts_cframe = 56, l->current_frame = 0;
    l->fr_code = 0, l->fr_previous = 8, l->fr_instr = 56, l->fr_is_entry = -1, l->fr_owner = 70;
    l->owner_cstack = 3, l->owner_python_max = 2;
    l->co_filename = 112, l->co_name = 128, l->co_linetable = 136, l->co_firstlineno = 68, l->co_code = 192;
    l->str_ascii_data = 40, l->str_compact_data = 56;
}

/* Index (in 64-bit words) of the fields of _Py_DebugOffsets this file reads,
 * per version (Include/internal/pycore_debug_offsets.h, 3.14;
 * pycore_runtime.h, 3.13). */
struct debug_index {
    unsigned finalizing;
    unsigned ts_size, ts_current_frame;
    unsigned fr_size, fr_previous, fr_executable, fr_instr, fr_owner;
    unsigned co_size, co_filename, co_qualname, co_linetable, co_firstlineno, co_code;
    unsigned ob_type;
    unsigned bytes_size, bytes_ob_size, bytes_sval;
    unsigned str_size, str_state, str_length, str_ascii_size;
    unsigned words;
};

static const struct debug_index debug_3_13 = {4, 19, 23, 28, 29, 30, 31, 33, 34, 35, 37, 38, 39, 43,
                                              45, 64, 65, 66, 67, 68, 69, 70, 73};
static const struct debug_index debug_3_14 = {4, 22, 26, 31, 32, 33, 34, 36, 39, 40, 42, 43, 44, 48,
                                              51, 74, 75, 76, 77, 78, 79, 80, 95};

static bool within(uint64_t offset, uint64_t width, uint64_t size)
{
    return size < (1u << 16) && offset + width <= size;
}

static bool layout_from_debug_offsets(struct cmt_python_layout *l, uint64_t version)
{
    const struct debug_index *x = l->minor == 13 ? &debug_3_13 : l->minor == 14 ? &debug_3_14 : NULL;
    if (!x)
        return false;
    const uint64_t *d = (const uint64_t *)(uintptr_t)l->runtime;
    if (memcmp(d, "xdebugpy", 8) != 0 || (d[1] >> 16) != (version >> 16) || d[2] != 0 /* free-threaded */)
        return false;
    /* Each offset must lie inside the structure it belongs to: a layout read
     * at the wrong index fails here rather than steering reads astray. */
    if (!within(d[x->ts_current_frame], 8, d[x->ts_size]) || !within(d[x->fr_previous], 8, d[x->fr_size]) ||
        !within(d[x->fr_executable], 8, d[x->fr_size]) || !within(d[x->fr_instr], 8, d[x->fr_size]) ||
        !within(d[x->fr_owner], 1, d[x->fr_size]) || !within(d[x->co_filename], 8, d[x->co_size]) ||
        !within(d[x->co_qualname], 8, d[x->co_size]) || !within(d[x->co_linetable], 8, d[x->co_size]) ||
        !within(d[x->co_firstlineno], 4, d[x->co_size]) || !within(d[x->co_code], 1, d[x->co_size]) ||
        d[x->ob_type] != 8 || !within(d[x->bytes_ob_size], 8, d[x->bytes_size]) ||
        !within(d[x->bytes_sval], 1, d[x->bytes_size]) || !within(d[x->str_state], 4, d[x->str_size]) ||
        !within(d[x->str_length], 8, d[x->str_size]) || d[x->str_ascii_size] < 32 || d[x->str_ascii_size] > 64 ||
        d[x->finalizing] < 8 * x->words || d[x->finalizing] > (1u << 20))
        return false;
    /* _initialized .. initialized are five ints before _finalizing. */
    l->rt_finalizing = (uint32_t)d[x->finalizing];
    l->rt_core_initialized = l->rt_finalizing - 12;
    l->ts_cframe = -1, l->current_frame = (uint32_t)d[x->ts_current_frame];
    l->fr_previous = (uint32_t)d[x->fr_previous], l->fr_code = (uint32_t)d[x->fr_executable];
    l->fr_instr = (uint32_t)d[x->fr_instr], l->fr_owner = (uint32_t)d[x->fr_owner], l->fr_is_entry = -1;
    /* The loop's entry frame: FRAME_OWNED_BY_CSTACK (3.13) and
     * FRAME_OWNED_BY_INTERPRETER (3.14) are both 3. */
    l->owner_cstack = 3, l->owner_python_max = 2;
    l->co_filename = (uint32_t)d[x->co_filename], l->co_name = (uint32_t)d[x->co_qualname];
    l->co_linetable = (uint32_t)d[x->co_linetable], l->co_firstlineno = (uint32_t)d[x->co_firstlineno];
    l->co_code = (uint32_t)d[x->co_code];
    l->bytes_size = (uint32_t)d[x->bytes_ob_size], l->bytes_data = (uint32_t)d[x->bytes_sval];
    l->str_state = (uint32_t)d[x->str_state], l->str_length = (uint32_t)d[x->str_length];
    l->str_ascii_data = (uint32_t)d[x->str_ascii_size], l->str_compact_data = l->str_ascii_data + 16;
    return true;
}

static void set_unknown(const char *why)
{
    scan_state = SCAN_UNKNOWN;
    snprintf(note_text, sizeof note_text, "%s: native frames only", why);
    __atomic_store_n(&cmt_python_note_due, 1, __ATOMIC_RELEASE);
}

static void module_locked(const struct dl_phdr_info *info, const char *path, uint64_t lo, uint64_t hi)
{
    (void)path, (void)lo, (void)hi;
    if (scan_state != SCAN_LOOKING || !cmt_config.python_frames)
        return;
    struct cmt_elf_symbol runtime, version, tstate, eval, code_type, unicode_type;
    if (!cmt_elf_find_symbol(info, "_PyRuntime", &runtime))
        return;
    char why[96];
    struct cmt_python_layout *l = &layout;
    memset(l, 0, sizeof *l);
    uint64_t v = 0;
    if (cmt_elf_find_symbol(info, "Py_Version", &version) && version.size >= 4) {
        v = *(const unsigned long *)(uintptr_t)version.address;
        l->major = (unsigned)(v >> 24) & 0xff;
        l->minor = (unsigned)(v >> 16) & 0xff;
    } else if (!version_from_string(info, &l->major, &l->minor)) {
        set_unknown("interpreter version not known");
        return;
    }
    l->runtime = runtime.address;
    if (l->major != 3 || l->minor < 9 || l->minor > 14 || (l->minor >= 11 && !v)) {
        snprintf(why, sizeof why, "interpreter version %u.%u not known", l->major, l->minor);
        set_unknown(why);
        return;
    }
    if (!cmt_elf_find_symbol(info, "PyGILState_GetThisThreadState", &tstate) ||
        !cmt_elf_find_symbol(info, "_PyEval_EvalFrameDefault", &eval) ||
        !cmt_elf_find_symbol(info, "PyCode_Type", &code_type) ||
        !cmt_elf_find_symbol(info, "PyUnicode_Type", &unicode_type)) {
        snprintf(why, sizeof why, "interpreter %u.%u does not export what the shim reads", l->major, l->minor);
        set_unknown(why);
        return;
    }
    /* Fields common to 3.9-3.14 (object headers of the default build). */
    l->co_size = 16, l->ob_type = 8;
    l->bytes_size = 16, l->bytes_data = 32;
    l->str_length = 16, l->str_state = 32;
    if (l->minor <= 10) {
        layout_3_9_3_10(l);
    } else if (l->minor == 11) {
        layout_3_11(l);
    } else if (l->minor == 12) {
        layout_3_12(l);
    } else if (!layout_from_debug_offsets(l, v)) {
        snprintf(why, sizeof why, "interpreter %u.%u: its debug offsets are not the layout the shim knows",
                 l->major, l->minor);
        set_unknown(why);
        return;
    }
    l->code_type = code_type.address;
    l->unicode_type = unicode_type.address;
    l->eval_lo = eval.address;
    l->eval_hi = eval.address + (eval.size ? eval.size : 1);
    l->this_thread_state = (void *(*)(void))(uintptr_t)tstate.address;
    scan_state = SCAN_FOUND;
    __atomic_store_n(&cmt_python_active, l, __ATOMIC_RELEASE);
}

void cmt_python_write_pending_note(void)
{
    if (__atomic_exchange_n(&cmt_python_note_due, 0, __ATOMIC_ACQ_REL))
        cmt_recorder_note(CMT_NOTE_PYTHON, note_text);
}

static int contains_callback(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    uint64_t address = *(const uint64_t *)data;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uint64_t lo = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && address >= lo && address < lo + ph->p_memsz)
            return 1;
    }
    return 0;
}

void cmt_python_forget_if_unloaded_locked(void)
{
    if (scan_state != SCAN_FOUND)
        return;
    uint64_t address = layout.runtime;
    if (dl_iterate_phdr(contains_callback, &address))
        return;
    __atomic_store_n(&cmt_python_active, NULL, __ATOMIC_RELEASE);
    scan_state = SCAN_LOOKING;
}

const struct cmt_module_listener cmt_python_module_listener = {
    .trace_reset = trace_reset,
    .module_locked = module_locked,
};
