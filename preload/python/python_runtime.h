/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_PRELOAD_PYTHON_RUNTIME_H
#define CUMEMTRACE_PRELOAD_PYTHON_RUNTIME_H

#include <link.h>
#include <stdbool.h>
#include <stdint.h>

#include "modules.h"

/* The CPython interpreter of the process, found at run time among the loaded
 * objects (the python executable or a libpython exporting _PyRuntime), and
 * the layout of its structures for the version it is: where the frame chain
 * of a thread and the fields of code objects, strings and bytes are. Nothing
 * here links or calls Python except PyGILState_GetThisThreadState, a read of
 * one thread-specific value (docs/design.md, "Python frames"). */

/* How a code object maps instructions to lines. */
enum cmt_python_line_format {
    CMT_PY_LINES_LOCATIONS = 0, /* 3.11+: co_linetable, the location table */
    CMT_PY_LINES_LINETABLE = 1, /* 3.10: co_linetable, (address delta, line delta) pairs */
    CMT_PY_LINES_LNOTAB = 2,    /* 3.9: co_lnotab */
};

/* Byte offsets, per version (python_runtime.c says where each comes from). */
struct cmt_python_layout {
    unsigned major, minor;
    /* 3.9, 3.10: the chain is of frame objects (f_back), one per call of the
     * evaluation loop, the instruction is f_lasti and the code's bytes are
     * the bytes object co_code. */
    bool frame_objects;
    uint8_t line_format;     /* enum cmt_python_line_format */
    uint8_t lasti_in_bytes;  /* 3.9: f_lasti counts bytes; 3.10: code units */
    uint64_t runtime;          /* &_PyRuntime */
    uint32_t rt_core_initialized, rt_finalizing;
    int32_t ts_cframe;         /* PyThreadState.cframe (3.11, 3.12); -1 when the frame is in the thread state */
    uint32_t current_frame;    /* in _PyCFrame when ts_cframe >= 0, else in PyThreadState */
    uint32_t fr_previous, fr_code, fr_instr, fr_owner;
    int32_t fr_is_entry;       /* 3.11: the flag that marks an evaluation loop's first frame; else -1 */
    uint8_t owner_cstack;      /* 3.12+: the owner of the entry frame each loop call pushes; 0 = none */
    uint8_t owner_python_max;  /* owners above this hold no Python frame */
    uint32_t co_size, co_filename, co_name, co_linetable, co_firstlineno, co_code;
    /* frame_objects: f_lasti's offset in the frame (fr_instr is unused). */
    uint32_t fr_lasti;
    uint32_t ob_type;
    uint32_t bytes_size, bytes_data;
    uint32_t str_length, str_state, str_ascii_data, str_compact_data;
    uint64_t code_type;        /* &PyCode_Type */
    uint64_t unicode_type;     /* &PyUnicode_Type */
    uint64_t eval_lo, eval_hi; /* _PyEval_EvalFrameDefault's code */
    void *(*this_thread_state)(void);
};

/* The layout once an interpreter the shim knows was found; NULL before, in a
 * process without Python, with CUMEMTRACE_PYTHON=0, or for a version it does
 * not know (then one note says so). Any thread, no lock. */
static inline const struct cmt_python_layout *cmt_python_layout(void)
{
    extern const struct cmt_python_layout *cmt_python_active;
    return __atomic_load_n(&cmt_python_active, __ATOMIC_ACQUIRE);
}

/* What the module map tells the Python runtime (record/modules.h): a new
 * trace (its note is written again if due); a module recorded for the first
 * time in this trace (if it is the interpreter, read its version and
 * layout; metadata lock held). */
extern const struct cmt_module_listener cmt_python_module_listener;

/* A library was unloaded: if it was the interpreter, its layout is dropped
 * (its addresses may hold other code now) and it is looked for again. Caller
 * holds the metadata lock. */
void cmt_python_forget_if_unloaded_locked(void);

/* Writes the "not known" note when one is due; outside the metadata lock. */
void cmt_python_write_pending_note(void);

extern int cmt_python_note_due; /* atomic: a note waits for cmt_python_write_pending_note */

#endif
