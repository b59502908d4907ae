/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_TEXT_ESCAPE_H
#define CUMEMTRACE_ANALYZER_TEXT_ESCAPE_H

#include <stdbool.h>
#include <stddef.h>

/* Strings from a trace (program arguments, thread and phase names, frames,
 * module paths, notes, device names, job variables...) are untrusted: a
 * program argument holding ESC [ 2 J, a BEL, a carriage return or a newline
 * would act on the terminal that shows a text report, or forge a line of it
 * (a "PASS" line of check). Text output prints each such string through
 * cmt_esc (docs/cli.md, "Strings from the trace"): control characters (C0,
 * DEL, and C1 as U+0080..U+009F) become \n, \r, \t, \e or \xNN, and bytes
 * that are not UTF-8 become \xNN; everything else is printed as it is. JSON
 * escapes in its own way; HTML, JUnit and SARIF escape their markup. */

/* Whether s needs escaping. */
bool cmt_text_needs_escape(const char *s);

/* s as text output prints it: s itself when it needs no escaping (the
 * common case costs one scan), else an escaped copy in one of
 * CMT_ESC_SLOTS buffers used in turn, valid until that many more calls (one
 * printf may take several). "" for NULL. The buffers are the calling
 * thread's (kept while it lives). */
#define CMT_ESC_SLOTS 16
const char *cmt_esc(const char *s);

/* The same into buf (always terminated; cut at a character boundary when
 * it does not fit). Returns buf. */
char *cmt_escape_into(const char *s, char *buf, size_t len);

#endif
