/* SPDX-License-Identifier: MIT */
/* The shim as an NVTX injection library: with NVTX_INJECTION64_PATH naming
 * libcumemtrace.so (`cumemtrace run` sets it), every NVTX v3 instance in the
 * process (each library that includes the NVTX headers has its own: PyTorch,
 * cuDNN, the program) loads us on its first NVTX call, calls
 * InitializeInjectionNvtx2 and routes its ranges and marks here. The contract
 * is NVIDIA's nvtxDetail/nvtxInit.h and nvtxImpl.h: the init function gets
 * the instance's export table, asks it for each module's table of function
 * pointer slots and fills the slots it implements; the others stay no-ops.
 *
 * The payload extension (nvToolsExtPayload.h) comes the same way through
 * InitializeInjectionNvtxExtension: NCCL pushes a range with the core's
 * nvtxDomainRangePushEx and, once it knows the communicator, pops it with
 * nvtxRangePopPayload; without that slot filled the pop was a no-op and the
 * range stayed open until exit, with everything after it nested inside.
 *
 * Ranges become CMT_REC_MARK records (format.h); the analyzer turns them
 * into phases and steps. Nothing here allocates with malloc or takes a lock
 * on the path of a push or pop (phase_record.c). */
#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtPayload.h>

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <wchar.h>

#include "config.h"
#include "log.h"
#include "nvtx_injection.h"
#include "phase_record.h"
#include "real_symbols.h"
#include "recorder.h"
#include "shim.h"

/* Push/pop nesting level per thread, which nvtxRangePush and Pop return
 * (every domain counted together). */
static __thread int nvtx_level __attribute__((tls_model("initial-exec")));

/* Wide strings (the W variants) as UTF-8 in a buffer on the caller's stack. */
#define WIDE_NAME_MAX 256

static size_t utf8_of_wide(const wchar_t *w, char *out, size_t cap)
{
    size_t n = 0;
    for (; w && *w && n + 4 <= cap; w++) {
        uint32_t c = (uint32_t)*w;
        if (c < 0x80) {
            out[n++] = (char)c;
        } else if (c < 0x800) {
            out[n++] = (char)(0xc0 | (c >> 6));
            out[n++] = (char)(0x80 | (c & 0x3f));
        } else if (c < 0x10000) {
            out[n++] = (char)(0xe0 | (c >> 12));
            out[n++] = (char)(0x80 | ((c >> 6) & 0x3f));
            out[n++] = (char)(0x80 | (c & 0x3f));
        } else if (c < 0x110000) {
            out[n++] = (char)(0xf0 | (c >> 18));
            out[n++] = (char)(0x80 | ((c >> 12) & 0x3f));
            out[n++] = (char)(0x80 | ((c >> 6) & 0x3f));
            out[n++] = (char)(0x80 | (c & 0x3f));
        } else {
            out[n++] = '?';
        }
    }
    return n;
}

static struct cmt_phase_string *domain_of(nvtxDomainHandle_t d)
{
    return (struct cmt_phase_string *)(void *)d;
}

/* Records one event from attributes: ascii, wide or registered message. */
static void record_attributes(unsigned api, nvtxDomainHandle_t domain, const nvtxEventAttributes_t *a, uint64_t id)
{
    /* The message is inside the part of the structure every version has
     * (version 1 and 2 share the layout up to it); a caller that says its
     * structure is shorter gets an unnamed event. */
    size_t need = offsetof(nvtxEventAttributes_t, message) + sizeof a->message;
    if (!a || a->size < need) {
        cmt_phase_record(api, NULL, 0, NULL, domain_of(domain), id);
        return;
    }
    switch (a->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII:
        cmt_phase_record(api, a->message.ascii, a->message.ascii ? strlen(a->message.ascii) : 0, NULL,
                         domain_of(domain), id);
        return;
    case NVTX_MESSAGE_TYPE_UNICODE: {
        char buf[WIDE_NAME_MAX];
        size_t n = utf8_of_wide(a->message.unicode, buf, sizeof buf);
        cmt_phase_record(api, buf, n, NULL, domain_of(domain), id);
        return;
    }
    case NVTX_MESSAGE_TYPE_REGISTERED:
        cmt_phase_record(api, NULL, 0, (struct cmt_phase_string *)(void *)a->message.registered, domain_of(domain),
                         id);
        return;
    default:
        cmt_phase_record(api, NULL, 0, NULL, domain_of(domain), id);
        return;
    }
}

static int push_level(void)
{
    return nvtx_level++;
}

static int pop_level(void)
{
    if (nvtx_level <= 0)
        return -1; /* NVTX's answer to a pop with nothing open */
    return --nvtx_level;
}

/* ---- core: the default domain ---------------------------------------------- */

static void NVTX_API mark_ex(const nvtxEventAttributes_t *a)
{
    record_attributes(CMT_API_MARK_INSTANT, NULL, a, 0);
}

static void NVTX_API mark_a(const char *m)
{
    cmt_phase_record(CMT_API_MARK_INSTANT, m, m ? strlen(m) : 0, NULL, NULL, 0);
}

static void NVTX_API mark_w(const wchar_t *m)
{
    char buf[WIDE_NAME_MAX];
    cmt_phase_record(CMT_API_MARK_INSTANT, buf, utf8_of_wide(m, buf, sizeof buf), NULL, NULL, 0);
}

static nvtxRangeId_t NVTX_API range_start_ex(const nvtxEventAttributes_t *a)
{
    uint64_t id = cmt_phase_next_range_id();
    record_attributes(CMT_API_MARK_RANGE_START, NULL, a, id);
    return id;
}

static nvtxRangeId_t NVTX_API range_start_a(const char *m)
{
    uint64_t id = cmt_phase_next_range_id();
    cmt_phase_record(CMT_API_MARK_RANGE_START, m, m ? strlen(m) : 0, NULL, NULL, id);
    return id;
}

static nvtxRangeId_t NVTX_API range_start_w(const wchar_t *m)
{
    uint64_t id = cmt_phase_next_range_id();
    char buf[WIDE_NAME_MAX];
    cmt_phase_record(CMT_API_MARK_RANGE_START, buf, utf8_of_wide(m, buf, sizeof buf), NULL, NULL, id);
    return id;
}

static void NVTX_API range_end(nvtxRangeId_t id)
{
    cmt_phase_record(CMT_API_MARK_RANGE_END, NULL, 0, NULL, NULL, id);
}

static int NVTX_API range_push_ex(const nvtxEventAttributes_t *a)
{
    record_attributes(CMT_API_MARK_PUSH, NULL, a, 0);
    return push_level();
}

static int NVTX_API range_push_a(const char *m)
{
    cmt_phase_record(CMT_API_MARK_PUSH, m, m ? strlen(m) : 0, NULL, NULL, 0);
    return push_level();
}

static int NVTX_API range_push_w(const wchar_t *m)
{
    char buf[WIDE_NAME_MAX];
    cmt_phase_record(CMT_API_MARK_PUSH, buf, utf8_of_wide(m, buf, sizeof buf), NULL, NULL, 0);
    return push_level();
}

static int NVTX_API range_pop(void)
{
    cmt_phase_record(CMT_API_MARK_POP, NULL, 0, NULL, NULL, 0);
    return pop_level();
}

/* Category and thread names: accepted, not recorded (the trace names
 * threads itself). */
static void NVTX_API name_category_a(uint32_t c, const char *n)
{
    (void)c;
    (void)n;
}

static void NVTX_API name_category_w(uint32_t c, const wchar_t *n)
{
    (void)c;
    (void)n;
}

static void NVTX_API name_os_thread_a(uint32_t t, const char *n)
{
    (void)t;
    (void)n;
}

static void NVTX_API name_os_thread_w(uint32_t t, const wchar_t *n)
{
    (void)t;
    (void)n;
}

/* ---- core2: domains and registered strings --------------------------------- */

static void NVTX_API domain_mark_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
    record_attributes(CMT_API_MARK_INSTANT, d, a, 0);
}

static nvtxRangeId_t NVTX_API domain_range_start_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
    uint64_t id = cmt_phase_next_range_id();
    record_attributes(CMT_API_MARK_RANGE_START, d, a, id);
    return id;
}

static void NVTX_API domain_range_end(nvtxDomainHandle_t d, nvtxRangeId_t id)
{
    cmt_phase_record(CMT_API_MARK_RANGE_END, NULL, 0, NULL, domain_of(d), id);
}

static int NVTX_API domain_range_push_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
    record_attributes(CMT_API_MARK_PUSH, d, a, 0);
    return push_level();
}

static int NVTX_API domain_range_pop(nvtxDomainHandle_t d)
{
    cmt_phase_record(CMT_API_MARK_POP, NULL, 0, NULL, domain_of(d), 0);
    return pop_level();
}

static void NVTX_API domain_name_category_a(nvtxDomainHandle_t d, uint32_t c, const char *n)
{
    (void)d;
    (void)c;
    (void)n;
}

static void NVTX_API domain_name_category_w(nvtxDomainHandle_t d, uint32_t c, const wchar_t *n)
{
    (void)d;
    (void)c;
    (void)n;
}

static nvtxStringHandle_t NVTX_API domain_register_string_a(nvtxDomainHandle_t d, const char *s)
{
    (void)d; /* strings are one namespace in the trace */
    return (nvtxStringHandle_t)(void *)cmt_phase_string_register(s ? s : "", s ? strlen(s) : 0);
}

static nvtxStringHandle_t NVTX_API domain_register_string_w(nvtxDomainHandle_t d, const wchar_t *s)
{
    (void)d;
    char buf[WIDE_NAME_MAX];
    return (nvtxStringHandle_t)(void *)cmt_phase_string_register(buf, utf8_of_wide(s, buf, sizeof buf));
}

static nvtxDomainHandle_t NVTX_API domain_create_a(const char *name)
{
    return (nvtxDomainHandle_t)(void *)cmt_phase_string_register(name ? name : "", name ? strlen(name) : 0);
}

static nvtxDomainHandle_t NVTX_API domain_create_w(const wchar_t *name)
{
    char buf[WIDE_NAME_MAX];
    return (nvtxDomainHandle_t)(void *)cmt_phase_string_register(buf, utf8_of_wide(name, buf, sizeof buf));
}

static void NVTX_API domain_destroy(nvtxDomainHandle_t d)
{
    (void)d; /* the handle's memory lives as long as the process: a late use stays safe */
}

static void NVTX_API initialize(const void *reserved)
{
    (void)reserved;
}

/* ---- the export table -------------------------------------------------------- */

struct slot {
    unsigned index;
    NvtxFunctionPointer fn;
};

#define SLOT(id, f) {id, (NvtxFunctionPointer)(void (*)(void))(f)}

static const struct slot core_slots[] = {
    SLOT(NVTX_CBID_CORE_MarkEx, mark_ex),
    SLOT(NVTX_CBID_CORE_MarkA, mark_a),
    SLOT(NVTX_CBID_CORE_MarkW, mark_w),
    SLOT(NVTX_CBID_CORE_RangeStartEx, range_start_ex),
    SLOT(NVTX_CBID_CORE_RangeStartA, range_start_a),
    SLOT(NVTX_CBID_CORE_RangeStartW, range_start_w),
    SLOT(NVTX_CBID_CORE_RangeEnd, range_end),
    SLOT(NVTX_CBID_CORE_RangePushEx, range_push_ex),
    SLOT(NVTX_CBID_CORE_RangePushA, range_push_a),
    SLOT(NVTX_CBID_CORE_RangePushW, range_push_w),
    SLOT(NVTX_CBID_CORE_RangePop, range_pop),
    SLOT(NVTX_CBID_CORE_NameCategoryA, name_category_a),
    SLOT(NVTX_CBID_CORE_NameCategoryW, name_category_w),
    SLOT(NVTX_CBID_CORE_NameOsThreadA, name_os_thread_a),
    SLOT(NVTX_CBID_CORE_NameOsThreadW, name_os_thread_w),
};

static const struct slot core2_slots[] = {
    SLOT(NVTX_CBID_CORE2_DomainMarkEx, domain_mark_ex),
    SLOT(NVTX_CBID_CORE2_DomainRangeStartEx, domain_range_start_ex),
    SLOT(NVTX_CBID_CORE2_DomainRangeEnd, domain_range_end),
    SLOT(NVTX_CBID_CORE2_DomainRangePushEx, domain_range_push_ex),
    SLOT(NVTX_CBID_CORE2_DomainRangePop, domain_range_pop),
    SLOT(NVTX_CBID_CORE2_DomainNameCategoryA, domain_name_category_a),
    SLOT(NVTX_CBID_CORE2_DomainNameCategoryW, domain_name_category_w),
    SLOT(NVTX_CBID_CORE2_DomainRegisterStringA, domain_register_string_a),
    SLOT(NVTX_CBID_CORE2_DomainRegisterStringW, domain_register_string_w),
    SLOT(NVTX_CBID_CORE2_DomainCreateA, domain_create_a),
    SLOT(NVTX_CBID_CORE2_DomainCreateW, domain_create_w),
    SLOT(NVTX_CBID_CORE2_DomainDestroy, domain_destroy),
    SLOT(NVTX_CBID_CORE2_Initialize, initialize),
};

/* Fills the slots one module's table has room for (an older NVTX has fewer). */
static void fill_module(const NvtxExportTableCallbacks *cb, NvtxCallbackModule module, const struct slot *slots,
                        size_t n)
{
    NvtxFunctionTable table = NULL;
    unsigned int size = 0;
    if (!cb->GetModuleFunctionTable(module, &table, &size) || !table)
        return;
    for (size_t i = 0; i < n; i++)
        if (slots[i].index < size && table[slots[i].index])
            *table[slots[i].index] = slots[i].fn;
}

CMT_EXPORT int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_export_table);

/* Whether the shim is in the process's global scope (preloaded, or linked
 * in): only then are its hooks in place. A process that inherited
 * NVTX_INJECTION64_PATH but not LD_PRELOAD has NVTX dlopen us on our own;
 * recording ranges there would write a trace of phases with no allocation
 * in it. */
static bool preloaded(void)
{
    typedef void *(*dlsym_fn)(void *, const char *);
    dlsym_fn real = (dlsym_fn)cmt_glibc_dlsym();
    /* The main program's handle searches what was loaded at start-up (the
     * preloads among it) and RTLD_GLOBAL objects, not NVTX's RTLD_LOCAL
     * dlopen of us; RTLD_DEFAULT would search our own scope too. */
    void *main_program = dlopen(NULL, RTLD_LAZY | RTLD_NOLOAD);
    bool found = real && main_program &&
                 real(main_program, "InitializeInjectionNvtx2") == (void *)InitializeInjectionNvtx2;
    if (main_program)
        cmt_real_dlclose(main_program); /* the main program: unloads nothing, forgets no stack */
    return found;
}

/* Each NVTX instance calls this once, from whichever of its threads made
 * the first NVTX call (the instance makes its other threads wait); several
 * instances may call it at once. Everything it touches is the calling
 * instance's own table, so it needs no lock and may run any number of
 * times. Returns 0 (no tool: NVTX stays no-ops) when recording is off. */
CMT_EXPORT int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_export_table)
{
    cmt_shim_ensure_loaded();
    if (cmt_config.disabled || !get_export_table || !preloaded())
        return 0;
    const NvtxExportTableCallbacks *cb = get_export_table(NVTX_ETID_CALLBACKS);
    if (!cb || cb->struct_size < offsetof(NvtxExportTableCallbacks, GetModuleFunctionTable) +
                                     sizeof cb->GetModuleFunctionTable ||
        !cb->GetModuleFunctionTable)
        return 0;
    const NvtxExportTableVersionInfo *vi = get_export_table(NVTX_ETID_VERSIONINFO);
    if (vi && vi->struct_size >= sizeof *vi && vi->SetInjectionNvtxVersion)
        vi->SetInjectionNvtxVersion(NVTX_VERSION);
    fill_module(cb, NVTX_CB_MODULE_CORE, core_slots, sizeof core_slots / sizeof core_slots[0]);
    fill_module(cb, NVTX_CB_MODULE_CORE2, core2_slots, sizeof core2_slots / sizeof core2_slots[0]);
    return 1;
}

/* ---- the payload extension ----------------------------------------------------
 * Push, pop, start and end with payloads are ranges like the core's. The
 * payload's data is not read: a range pushed with a payload alone is recorded
 * without a name (its name is inside a schema of the caller's), and one popped
 * with a payload pops what the thread pushed last, as NVTX defines it. */

static int NVTX_API payload_range_push(nvtxDomainHandle_t d, const nvtxPayloadData_t *p, size_t n)
{
    (void)p;
    (void)n;
    cmt_phase_record(CMT_API_MARK_PUSH, NULL, 0, NULL, domain_of(d), 0);
    return push_level();
}

static int NVTX_API payload_range_pop(nvtxDomainHandle_t d, const nvtxPayloadData_t *p, size_t n)
{
    (void)p;
    (void)n;
    cmt_phase_record(CMT_API_MARK_POP, NULL, 0, NULL, domain_of(d), 0);
    return pop_level();
}

static nvtxRangeId_t NVTX_API payload_range_start(nvtxDomainHandle_t d, const nvtxPayloadData_t *p, size_t n)
{
    (void)p;
    (void)n;
    uint64_t id = cmt_phase_next_range_id();
    cmt_phase_record(CMT_API_MARK_RANGE_START, NULL, 0, NULL, domain_of(d), id);
    return id;
}

static void NVTX_API payload_range_end(nvtxDomainHandle_t d, nvtxRangeId_t id, const nvtxPayloadData_t *p,
                                       size_t n)
{
    (void)p;
    (void)n;
    cmt_phase_record(CMT_API_MARK_RANGE_END, NULL, 0, NULL, domain_of(d), id);
}

static const struct {
    size_t index;
    intptr_t fn;
} payload_slots[] = {
    {NVTX3EXT_CBID_nvtxRangePushPayload, (intptr_t)payload_range_push},
    {NVTX3EXT_CBID_nvtxRangePopPayload, (intptr_t)payload_range_pop},
    {NVTX3EXT_CBID_nvtxRangeStartPayload, (intptr_t)payload_range_start},
    {NVTX3EXT_CBID_nvtxRangeEndPayload, (intptr_t)payload_range_end},
};

CMT_EXPORT int InitializeInjectionNvtxExtension(nvtxExtModuleInfo_t *info);

/* Each NVTX instance's extension module calls this once, as the core calls
 * InitializeInjectionNvtx2. Returns 1 with the slots we serve filled (the
 * others become no-ops, and nvtxDomainIsEnabled answers 1), 0 for a module
 * we do not serve or when recording is off. The slot numbers are the
 * payload extension's since its first version; a shorter segment gets the
 * slots it has. */
CMT_EXPORT int InitializeInjectionNvtxExtension(nvtxExtModuleInfo_t *info)
{
    cmt_shim_ensure_loaded();
    if (cmt_config.disabled || !info || info->structSize < offsetof(nvtxExtModuleInfo_t, segments) +
                                                             sizeof info->segments ||
        info->moduleId != NVTX_EXT_PAYLOAD_MODULEID || info->segmentsCount < 1 || !info->segments || !preloaded())
        return 0;
    nvtxExtModuleSegment_t *seg = &info->segments[0];
    if (!seg->functionSlots)
        return 0;
    for (size_t i = 0; i < sizeof payload_slots / sizeof payload_slots[0]; i++)
        if (payload_slots[i].index < seg->slotCount)
            seg->functionSlots[payload_slots[i].index] = payload_slots[i].fn;
    return 1;
}

/* ---- another tool in the variable ------------------------------------------- */

/* Whether path names this very library (same file, whatever the spelling). */
static bool names_this_library(const char *path)
{
    Dl_info info;
    struct stat a, b;
    if (!dladdr((void *)InitializeInjectionNvtx2, &info) || !info.dli_fname)
        return false;
    return stat(path, &a) == 0 && stat(info.dli_fname, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

void cmt_nvtx_note_environment(void)
{
    const char *path = secure_getenv("NVTX_INJECTION64_PATH");
    if (!path || !*path || names_this_library(path))
        return;
    cmt_recorder_note(CMT_NOTE_NVTX, "NVTX_INJECTION64_PATH names another tool: NVTX ranges not recorded");
    if (!cmt_config.quiet)
        cmt_log_warning("NVTX_INJECTION64_PATH names another tool (%s): NVTX ranges not recorded as phases; run "
                        "without that tool to record them",
                        path);
}
