/* SPDX-License-Identifier: MIT */
/* `cumemtrace check --format sarif`: SARIF 2.1.0 for code-scanning
 * dashboards. One run; one result per violation, located at the call site's
 * source line (relative to the SRCROOT base, the source root) with the
 * allocation's stack; traces that could not be judged become tool execution
 * notifications. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cmt_version.h"
#include "json_writer.h"
#include "render_parts.h"

/* Percent-encodes a path for a URI: unreserved characters and '/' stay. */
static void uri_path(char *buf, size_t len, const char *prefix, const char *path)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t u = (size_t)snprintf(buf, len, "%s", prefix);
    for (const unsigned char *p = (const unsigned char *)path; *p && u + 4 < len; p++) {
        unsigned char ch = *p;
        bool keep = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
                    ch == '-' || ch == '.' || ch == '_' || ch == '~' || ch == '/';
        if (keep) {
            buf[u++] = (char)ch;
        } else {
            buf[u++] = '%';
            buf[u++] = hex[ch >> 4];
            buf[u++] = hex[ch & 15];
        }
    }
    buf[u < len ? u : len - 1] = '\0';
}

/* artifactLocation: relative to SRCROOT when below the source root, else an
 * absolute file URI. */
static void artifact(const struct cmt_check *c, struct cmt_json *j, const char *path)
{
    char uri[3 * PATH_MAX + 16], shown[PATH_MAX];
    bool relative = cmt_check_path(c, path, shown, sizeof shown);
    cmt_json_key(j, "artifactLocation");
    cmt_json_begin_object(j);
    if (relative) {
        uri_path(uri, sizeof uri, "", shown);
        cmt_json_key(j, "uri");
        cmt_json_string(j, uri);
        cmt_json_key(j, "uriBaseId");
        cmt_json_string(j, "SRCROOT");
    } else {
        uri_path(uri, sizeof uri, shown[0] == '/' ? "file://" : "", shown);
        cmt_json_key(j, "uri");
        cmt_json_string(j, uri);
    }
    cmt_json_end_object(j);
}

/* A frame's physicalLocation: its source line, else its module. Returns
 * false when there is neither. */
static bool physical(const struct cmt_check *c, struct cmt_json *j, const struct cmt_frame *f)
{
    if (f->file && f->file[0] && f->line > 0) {
        cmt_json_key(j, "physicalLocation");
        cmt_json_begin_object(j);
        artifact(c, j, f->file);
        cmt_json_key(j, "region");
        cmt_json_begin_object(j);
        cmt_json_key(j, "startLine");
        cmt_json_uint(j, (uint64_t)f->line);
        cmt_json_end_object(j);
        cmt_json_end_object(j);
        return true;
    }
    if (f->module && f->module[0]) {
        cmt_json_key(j, "physicalLocation");
        cmt_json_begin_object(j);
        artifact(c, j, f->module);
        cmt_json_end_object(j);
        return true;
    }
    return false;
}

static void result_location(const struct cmt_check *c, const struct cmt_check_trace *t, struct cmt_json *j,
                            const struct cmt_finding *f)
{
    const struct cmt_stack_frames *sf = cmt_frames_get(t->report.frames, f->stack);
    const struct cmt_frame *at = f->site ? cmt_check_location_frame(sf) : NULL;
    if (!at && f->site && sf->n)
        at = &sf->frames[0];
    cmt_json_begin_object(j);
    if (!at || !physical(c, j, at)) {
        /* Nothing better than the trace itself. */
        cmt_json_key(j, "physicalLocation");
        cmt_json_begin_object(j);
        char abs[PATH_MAX];
        artifact(c, j, realpath(t->path, abs) ? abs : t->path);
        cmt_json_end_object(j);
    }
    if (at && at->function) {
        cmt_json_key(j, "logicalLocations");
        cmt_json_begin_array(j);
        cmt_json_begin_object(j);
        cmt_json_key(j, "name");
        cmt_json_string(j, at->function);
        cmt_json_key(j, "kind");
        cmt_json_string(j, "function");
        cmt_json_end_object(j);
        cmt_json_end_array(j);
    }
    cmt_json_end_object(j);
}

static void result_stack(const struct cmt_check *c, const struct cmt_check_trace *t, struct cmt_json *j,
                         const struct cmt_finding *f)
{
    const struct cmt_stack_frames *sf = cmt_frames_get(t->report.frames, f->stack);
    if (!f->site || sf->n == 0)
        return;
    cmt_json_key(j, "stacks");
    cmt_json_begin_array(j);
    cmt_json_begin_object(j);
    cmt_json_key(j, "message");
    cmt_json_begin_object(j);
    cmt_json_key(j, "text");
    cmt_json_string(j, f->rule == CMT_RULE_FAILED_ALLOCATION ? "stack of the failed allocation"
                       : f->rule == CMT_RULE_PEAK || f->rule == CMT_RULE_PEAK_GROWTH
                           ? "stack of the largest call site live at the peak"
                           : "stack of the leaked allocations");
    cmt_json_end_object(j);
    cmt_json_key(j, "frames");
    cmt_json_begin_array(j);
    for (size_t i = 0; i < sf->n; i++) {
        const struct cmt_frame *fr = &sf->frames[i];
        char text[1024];
        cmt_check_describe_frame(c, fr, text, sizeof text);
        cmt_json_begin_object(j);
        cmt_json_key(j, "location");
        cmt_json_begin_object(j);
        physical(c, j, fr);
        cmt_json_key(j, "message");
        cmt_json_begin_object(j);
        cmt_json_key(j, "text");
        cmt_json_string(j, text);
        cmt_json_end_object(j);
        cmt_json_end_object(j);
        if (fr->module && fr->module[0]) {
            cmt_json_key(j, "module");
            cmt_json_string(j, cmt_basename(fr->module));
        }
        cmt_json_end_object(j);
    }
    cmt_json_end_array(j);
    cmt_json_end_object(j);
    cmt_json_end_array(j);
}

static void result(const struct cmt_check *c, const struct cmt_check_trace *t, struct cmt_json *j,
                   const struct cmt_finding *f)
{
    cmt_json_begin_object(j);
    cmt_json_key(j, "ruleId");
    cmt_json_string(j, cmt_rule_id(f->rule));
    cmt_json_key(j, "ruleIndex");
    cmt_json_uint(j, (uint64_t)f->rule);
    cmt_json_key(j, "level");
    cmt_json_string(j, "error");
    cmt_json_key(j, "message");
    cmt_json_begin_object(j);
    cmt_json_key(j, "text");
    char text[800];
    snprintf(text, sizeof text, "%s (%s)", f->message, t->name);
    cmt_json_string(j, text);
    cmt_json_end_object(j);
    cmt_json_key(j, "locations");
    cmt_json_begin_array(j);
    result_location(c, t, j, f);
    cmt_json_end_array(j);
    result_stack(c, t, j, f);
    cmt_json_key(j, "partialFingerprints");
    cmt_json_begin_object(j);
    char fp[24];
    snprintf(fp, sizeof fp, "%016llx", (unsigned long long)f->fingerprint);
    cmt_json_key(j, "cumemtraceSite/v1");
    cmt_json_string(j, fp);
    cmt_json_end_object(j);
    cmt_json_key(j, "properties");
    cmt_json_begin_object(j);
    cmt_json_key(j, "trace");
    cmt_json_string(j, t->path);
    cmt_json_key(j, "program");
    cmt_json_string(j, t->name);
    cmt_json_key(j, "bytes");
    cmt_json_uint(j, f->bytes);
    cmt_json_key(j, "count");
    cmt_json_uint(j, f->count);
    cmt_json_end_object(j);
    cmt_json_end_object(j);
}

static void rules(struct cmt_json *j)
{
    cmt_json_key(j, "rules");
    cmt_json_begin_array(j);
    for (unsigned r = 0; r < CMT_RULE_COUNT; r++) {
        cmt_json_begin_object(j);
        cmt_json_key(j, "id");
        cmt_json_string(j, cmt_rule_id(r));
        cmt_json_key(j, "shortDescription");
        cmt_json_begin_object(j);
        cmt_json_key(j, "text");
        cmt_json_string(j, cmt_rule_description(r));
        cmt_json_end_object(j);
        cmt_json_key(j, "defaultConfiguration");
        cmt_json_begin_object(j);
        cmt_json_key(j, "level");
        cmt_json_string(j, "error");
        cmt_json_end_object(j);
        cmt_json_end_object(j);
    }
    cmt_json_end_array(j);
}

void cmt_check_render_sarif(const struct cmt_check *c, FILE *out)
{
    struct cmt_json j;
    cmt_json_init(&j, out, true);
    cmt_json_begin_object(&j);
    cmt_json_key(&j, "$schema");
    cmt_json_string(&j, "https://json.schemastore.org/sarif-2.1.0.json");
    cmt_json_key(&j, "version");
    cmt_json_string(&j, "2.1.0");
    cmt_json_key(&j, "runs");
    cmt_json_begin_array(&j);
    cmt_json_begin_object(&j);

    cmt_json_key(&j, "tool");
    cmt_json_begin_object(&j);
    cmt_json_key(&j, "driver");
    cmt_json_begin_object(&j);
    cmt_json_key(&j, "name");
    cmt_json_string(&j, "cumemtrace");
    cmt_json_key(&j, "version");
    cmt_json_string(&j, CMT_VERSION);
    rules(&j);
    cmt_json_end_object(&j);
    cmt_json_end_object(&j);

    if (c->source_root[0]) {
        char uri[3 * PATH_MAX + 16];
        uri_path(uri, sizeof uri, "file://", c->source_root);
        size_t n = strlen(uri);
        if (n + 1 < sizeof uri && (n == 0 || uri[n - 1] != '/'))
            strcpy(uri + n, "/");
        cmt_json_key(&j, "originalUriBaseIds");
        cmt_json_begin_object(&j);
        cmt_json_key(&j, "SRCROOT");
        cmt_json_begin_object(&j);
        cmt_json_key(&j, "uri");
        cmt_json_string(&j, uri);
        cmt_json_end_object(&j);
        cmt_json_end_object(&j);
    }

    cmt_json_key(&j, "invocations");
    cmt_json_begin_array(&j);
    cmt_json_begin_object(&j);
    cmt_json_key(&j, "executionSuccessful");
    cmt_json_bool(&j, c->n_error == 0);
    cmt_json_key(&j, "exitCode");
    cmt_json_int(&j, c->program ? c->program->final_status : cmt_check_status(c));
    cmt_json_key(&j, "toolExecutionNotifications");
    cmt_json_begin_array(&j);
    for (size_t i = 0; i < c->n_traces; i++) {
        const struct cmt_check_trace *t = c->traces[i];
        if (!t->error[0])
            continue;
        cmt_json_begin_object(&j);
        cmt_json_key(&j, "level");
        cmt_json_string(&j, t->status == CMT_TRACE_ERROR ? "error" : "warning");
        cmt_json_key(&j, "message");
        cmt_json_begin_object(&j);
        cmt_json_key(&j, "text");
        char text[PATH_MAX + 900];
        snprintf(text, sizeof text, "%s: %s", t->path, t->error);
        cmt_json_string(&j, text);
        cmt_json_end_object(&j);
        cmt_json_end_object(&j);
    }
    cmt_json_end_array(&j);
    cmt_json_end_object(&j);
    cmt_json_end_array(&j);

    cmt_json_key(&j, "results");
    cmt_json_begin_array(&j);
    for (size_t i = 0; i < c->n_traces; i++) {
        const struct cmt_check_trace *t = c->traces[i];
        for (size_t k = 0; k < t->n_findings; k++)
            if (t->findings[k].level == CMT_LEVEL_ERROR)
                result(c, t, &j, &t->findings[k]);
    }
    cmt_json_end_array(&j);

    cmt_json_end_object(&j);
    cmt_json_end_array(&j);
    cmt_json_end_object(&j);
    cmt_json_finish(&j);
}
