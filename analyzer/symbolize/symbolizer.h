/* SPDX-License-Identifier: MIT
 *
 * Symbolizer of the cumemtrace analyzer: turns recorded return addresses into
 * function / file:line / inline chains, offline, possibly on another machine
 * than the traced one.
 *
 * Built on libdwfl (elfutils). Each recorded module gets its own Dwfl session,
 * created lazily the first time an address inside the module is resolved, so
 * a trace listing hundreds of modules only pays for the few that appear in
 * stacks.
 *
 * Finding a module's file (the first candidate whose GNU build-id equals the
 * recorded one wins; when no build-id was recorded the first ELF file found
 * wins):
 *   1. <sysroot>/<recorded path>            (only with a sysroot and an absolute path)
 *   2. <recorded path>
 *   3. for each debuginfo path DIR, in order:
 *        DIR/.build-id/xx/rest   DIR/<basename>
 *   4. <sysroot>/usr/lib/debug/.build-id/xx/rest, /usr/lib/debug/.build-id/xx/rest
 *   5. debug-only files used as the module's file (they keep the program
 *      headers, the symbol table and DWARF, enough to symbolize):
 *        DIR/.build-id/xx/rest.debug   DIR/<basename>.debug   for each DIR
 * A candidate with the wrong build-id is skipped; the module then gets one
 * warning that names it.
 *
 * Finding DWARF when the module's file has none (libdwfl find_debuginfo):
 *   for each debuginfo path DIR: DIR/.build-id/xx/rest.debug,
 *   DIR/<basename>.debug, DIR/<.gnu_debuglink name>; each must carry the
 *   module's build-id (when it has one). Then dwfl_standard_find_debuginfo
 *   with the debuginfo path "DIR1:DIR2:...:[<sysroot>/usr/lib/debug:]:.debug:/usr/lib/debug"
 *   (DIRs made absolute; build-id trees, .gnu_debuglink, <basename>.debug
 *   next to the file).
 *   That standard search also asks debuginfod servers when the environment
 *   sets DEBUGINFOD_URLS (elfutils' behaviour; the tests clear it).
 *
 * Function names come from DWARF (the linkage name when there is one, so
 * C++ names are qualified, else DW_AT_name), and from the ELF symbol table
 * (.symtab, else .dynsym) where DWARF has none; C++ names are demangled with
 * __cxa_demangle, looked up at run time (already loaded, else dlopen of
 * libstdc++.so.6); without it names stay mangled. Source files are made
 * absolute with the compilation unit's DW_AT_comp_dir, not normalized.
 *
 * Not thread-safe: one symbolizer is used by one thread at a time.
 */
#ifndef CUMEMTRACE_SYMBOLIZER_H
#define CUMEMTRACE_SYMBOLIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct cmt_module_info {
    uint32_t id;                 /* dense, from 1, in the order modules were recorded */
    const char *path;            /* as recorded on the traced machine ("" or NULL unknown) */
    uint64_t bias;               /* load bias (dl_phdr_info.dlpi_addr) */
    uint64_t lo, hi;             /* absolute mapped range [lo, hi) of its PT_LOAD segments */
    const uint8_t *build_id;     /* GNU build-id bytes; may be empty */
    size_t build_id_len;
};

struct cmt_symbolizer_options {
    /* --debuginfo-path DIR (repeatable): searched for the module's file by
     * basename, for DIR/.build-id/xx/rest.debug and DIR/.build-id/xx/rest,
     * and for DIR/<basename>.debug; also used as elfutils' debuginfo_path. */
    const char *const *debuginfo_paths;
    size_t n_debuginfo_paths;
    /* --sysroot DIR: recorded paths are looked up under DIR first (relative
     * ones only there, never in the working directory; none that climbs out
     * of DIR with "..": symbolizer.c, find_module_file). */
    const char *sysroot;
    /* C++ names demangled. Defaults to true when cmt_symbolizer_new gets
     * NULL options; a caller filling the struct sets it explicitly (a
     * zero-initialized struct means false), or starts from
     * CMT_SYMBOLIZER_OPTIONS_INIT. */
    bool demangle;
};

/* Default options: no debuginfo paths, no sysroot, demangling on. */
#define CMT_SYMBOLIZER_OPTIONS_INIT { NULL, 0, NULL, true }

/* Strings are owned by the symbolizer and valid until cmt_symbolizer_free. */
struct cmt_frame {
    uint64_t ip;                 /* the recorded return address */
    const char *function;        /* NULL when unknown */
    const char *file;            /* source file (as in DWARF, full path when available) or NULL */
    int line;                    /* 0 when unknown */
    int column;                  /* 0 when unknown */
    const char *module;          /* module path as recorded ("" when none was recorded),
                                  * NULL outside every module */
    uint64_t module_offset;      /* ip - bias; 0 outside every module */
    bool inlined;                /* this frame is an inlined call inside the next one */
};

struct cmt_symbolizer;

/* opts may be NULL (defaults, see CMT_SYMBOLIZER_OPTIONS_INIT); the strings
 * it points to are copied. Returns NULL when out of memory. */
struct cmt_symbolizer *cmt_symbolizer_new(const struct cmt_symbolizer_options *opts);

/* Copies what it needs. Modules may be added at any time, also between
 * resolves. A module with hi <= lo is kept (for ids) but never matches. */
void cmt_symbolizer_add_module(struct cmt_symbolizer *s, const struct cmt_module_info *m);

/* Resolves one recorded return address. modules_known limits the search to
 * modules with id <= modules_known (a library unloaded and another loaded at
 * the same address later must not be confused); 0 means all. Among the
 * modules that qualify and contain ip - 1, the one with the highest id (the
 * most recently loaded) is used.
 *
 * Writes up to max frames, innermost inline first and the physical function
 * last; returns how many: min(max, length of the chain). The chain has at
 * least one frame: an unresolved address yields one frame with function NULL
 * but module/offset filled (module NULL outside every module). When the
 * chain is longer than max, the innermost max frames are written.
 *
 * Because recorded addresses are return addresses, ip - 1 is looked up
 * (module, function, file:line) but ip is reported. Results are cached: each
 * (ip, module) is resolved once; repeated addresses cost one hash lookup plus
 * the module search (binary search over the modules). */
size_t cmt_symbolizer_resolve(struct cmt_symbolizer *s, uint64_t ip, uint32_t modules_known,
                              struct cmt_frame *out, size_t max);

/* What the resolves cost: lookups, those the cache answered, those
 * resolved from the module (each distinct address once, until the cache,
 * bounded, starts afresh: cache_resets). Tests count these instead of
 * timing a pass. */
struct cmt_symbolizer_stats {
    uint64_t lookups, cache_hits, resolved, cache_resets;
};
void cmt_symbolizer_get_stats(const struct cmt_symbolizer *s, struct cmt_symbolizer_stats *out);

/* A frame resolve gave is shown to the user without a file and line: the
 * problems of its module (file missing, build-id mismatch, no DWARF) are
 * warned from now on. A module whose frames are all folded away, or shown
 * with their lines, is never warned about; nor is a module without DWARF
 * whose debug information cannot be had (one inside a Python package: pip
 * wheels ship none). */
void cmt_symbolizer_frame_shown(struct cmt_symbolizer *s, const struct cmt_frame *fr, uint32_t modules_known);
/* No frame shown yet: the warnings that frames shown made are taken back
 * (said again as frames are shown from now on); what was loaded and
 * resolved stays. For a reader that takes over another's symbolizer. */
void cmt_symbolizer_forget_shown(struct cmt_symbolizer *s);

/* Problems met (module file missing, build-id mismatch, no debug info). One
 * human-readable line each (no trailing newline), deduplicated, in order of
 * discovery. Strings valid until cmt_symbolizer_free. */
size_t cmt_symbolizer_warning_count(const struct cmt_symbolizer *s);
const char *cmt_symbolizer_warning(const struct cmt_symbolizer *s, size_t i);

/* NULL is accepted. */
void cmt_symbolizer_free(struct cmt_symbolizer *s);

#ifdef __cplusplus
}
#endif

#endif /* CUMEMTRACE_SYMBOLIZER_H */
