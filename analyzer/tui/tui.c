/* SPDX-License-Identifier: MIT */
/* The live view (tui.h), drawn with ncurses. */
#include "tui.h"

#include <curses.h>
#include <errno.h>
#include <inttypes.h>
#include <langinfo.h>
#include <locale.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "units.h"

#define SZ(b) cmt_size_str((b), (char[32]){""}, 32)
#define MAX_ROWS 256

enum { PAIR_TITLE = 1, PAIR_RUNNING, PAIR_ENDED, PAIR_BAD, PAIR_CHART };

static volatile sig_atomic_t quit_requested;

static void on_quit_signal(int sig)
{
    (void)sig;
    quit_requested = 1;
}

struct view {
    struct cmt_top *top;
    const struct cmt_tui_options *o;
    enum cmt_top_sort sort;
    enum cmt_top_view kind;
    bool paused;
    bool color;
    bool utf8;
    /* the selection, by trace path and device ordinal: stable as rows come */
    char sel_path[512];
    int32_t sel_device;
    union {
        struct cmt_top_site sites[MAX_ROWS];
        struct cmt_top_thread threads[MAX_ROWS];
        struct cmt_top_phase phases[MAX_ROWS];
    } rows;
};

static uint64_t now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000u + (uint64_t)t.tv_nsec / 1000000u;
}

static void style_on(const struct view *v, int pair, int attrs)
{
    attron(attrs);
    if (v->color && pair)
        attron(COLOR_PAIR(pair));
}

static void style_off(const struct view *v, int pair, int attrs)
{
    attroff(attrs);
    if (v->color && pair)
        attroff(COLOR_PAIR(pair));
}

static int state_pair(enum cmt_top_state s)
{
    switch (s) {
    case CMT_TOP_RUNNING:
        return PAIR_RUNNING;
    case CMT_TOP_EXITED:
    case CMT_TOP_WAITING:
        return PAIR_ENDED;
    default:
        return PAIR_BAD;
    }
}

static const char *signed_size(int64_t v, char *buf, size_t len)
{
    char s[32];
    cmt_size_str(v < 0 ? (uint64_t)-v : (uint64_t)v, s, sizeof s);
    snprintf(buf, len, "%s%s", v < 0 ? "-" : "+", s);
    return buf;
}

/* One line, cut at the screen's width. */
static void line_at(int y, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void line_at(int y, const char *fmt, ...)
{
    if (y >= LINES)
        return;
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    mvaddnstr(y, 0, buf, COLS);
}

/* The selected (process, device) row in the table, found by path. */
static void find_selection(struct view *v, const struct cmt_top_process *const *p, size_t n, size_t *pi, size_t *di)
{
    *pi = 0;
    *di = 0;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(p[i]->path, v->sel_path) != 0)
            continue;
        *pi = i;
        for (size_t d = 0; d < p[i]->n_devices; d++)
            if (p[i]->devices[d].device == v->sel_device)
                *di = d;
        return;
    }
    if (n) {
        snprintf(v->sel_path, sizeof v->sel_path, "%s", p[0]->path);
        v->sel_device = p[0]->n_devices ? p[0]->devices[0].device : -1;
    }
}

static void select_row(struct view *v, const struct cmt_top_process *p, size_t d)
{
    snprintf(v->sel_path, sizeof v->sel_path, "%s", p->path);
    v->sel_device = d < p->n_devices ? p->devices[d].device : -1;
}

static void draw_chart(struct view *v, int y, const struct cmt_top_device *dev)
{
    static const char *const bars_utf8[] = {" ", "\u2581", "\u2582", "\u2583", "\u2584",
                                            "\u2585", "\u2586", "\u2587", "\u2588"};
    static const char bars_ascii[] = " _.-=+*#@";
    uint64_t max = 0;
    for (size_t i = 0; i < dev->n_chart; i++)
        if (dev->chart[i] > max)
            max = dev->chart[i];
    char head[96];
    int w = snprintf(head, sizeof head, "live, last %zu refreshes (top %s): ", dev->n_chart, SZ(max));
    line_at(y, "%s", head);
    int room = COLS - w;
    if (room <= 0)
        return;
    size_t n = dev->n_chart < (size_t)room ? dev->n_chart : (size_t)room;
    move(y, w);
    style_on(v, PAIR_CHART, 0);
    for (size_t i = dev->n_chart - n; i < dev->n_chart; i++) {
        unsigned level = max ? (unsigned)((dev->chart[i] * 8 + max - 1) / max) : 0;
        if (level > 8)
            level = 8;
        if (v->utf8)
            addstr(bars_utf8[level]);
        else
            addch((chtype)(unsigned char)bars_ascii[level]);
    }
    style_off(v, PAIR_CHART, 0);
}

static int draw_rows(struct view *v, int y, int bottom, size_t pi, size_t di)
{
    size_t max = bottom > y + 1 ? (size_t)(bottom - y - 1) : 0;
    if (max > MAX_ROWS)
        max = MAX_ROWS;
    style_on(v, PAIR_TITLE, A_BOLD);
    if (v->kind == CMT_TOP_VIEW_SITES)
        line_at(y, "%-10s %8s %10s %12s  CALL SITE (by %s)", "LIVE", "COUNT", "AT PEAK", "GROWTH/STEP",
                cmt_top_sort_name(v->sort));
    else if (v->kind == CMT_TOP_VIEW_THREADS)
        line_at(y, "%-10s %8s  %-8s THREAD (by %s)", "LIVE", "COUNT", "TID",
                v->sort == CMT_TOP_SORT_COUNT ? "count" : "live");
    else
        line_at(y, "%-10s %10s %12s %8s  PHASE (by %s)", "PEAK", "LIVE", "LAST CHANGE", "ENTERED",
                cmt_top_sort_name(v->sort));
    style_off(v, PAIR_TITLE, A_BOLD);
    y++;
    if (v->kind == CMT_TOP_VIEW_SITES) {
        size_t n = cmt_top_sites(v->top, pi, di, v->sort, v->rows.sites, max);
        for (size_t k = 0; k < n; k++, y++) {
            const struct cmt_top_site *s = &v->rows.sites[k];
            char g[40];
            line_at(y, "%-10s %8" PRIu64 " %10s %12s  %s", SZ(s->live), s->count, SZ(s->at_peak),
                    signed_size(s->growth, g, sizeof g), s->label);
        }
    } else if (v->kind == CMT_TOP_VIEW_THREADS) {
        size_t n = cmt_top_threads(v->top, pi, di, v->sort, v->rows.threads, max);
        for (size_t k = 0; k < n; k++, y++) {
            const struct cmt_top_thread *t = &v->rows.threads[k];
            line_at(y, "%-10s %8" PRIu64 "  %-8u %s", SZ(t->live), t->count, t->tid, t->name);
        }
    } else {
        size_t n = cmt_top_phases(v->top, pi, di, v->sort, v->rows.phases, max);
        for (size_t k = 0; k < n; k++, y++) {
            const struct cmt_top_phase *p = &v->rows.phases[k];
            char g[40];
            line_at(y, "%-10s %10s %12s %8" PRIu64 "  %s%s", SZ(p->peak), SZ(p->live_at_end),
                    signed_size(p->last_change, g, sizeof g), p->entered, p->name, p->open ? " (open)" : "");
        }
    }
    return y;
}

/* The program's last line of output (run --live), read from its file's end. */
static void last_output_line(const char *path, char *buf, size_t len)
{
    buf[0] = '\0';
    FILE *f = fopen(path, "re");
    if (!f)
        return;
    char tail[380];
    if (fseek(f, -(long)(sizeof tail - 1), SEEK_END) != 0)
        rewind(f);
    size_t n = fread(tail, 1, sizeof tail - 1, f);
    fclose(f);
    tail[n] = '\0';
    while (n && (tail[n - 1] == '\n' || tail[n - 1] == '\r'))
        tail[--n] = '\0';
    char *start = strrchr(tail, '\n');
    snprintf(buf, len, "%s", start ? start + 1 : tail);
    for (char *c = buf; *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f)
            *c = ' ';
}

static void draw(struct view *v)
{
    erase();
    const struct cmt_top_process *const *p;
    size_t n = cmt_top_processes(v->top, &p);
    size_t running = 0;
    for (size_t i = 0; i < n; i++)
        running += p[i]->state == CMT_TOP_RUNNING;
    size_t pi = 0, di = 0;
    find_selection(v, p, n, &pi, &di);
    cmt_top_detail(v->top, pi); /* the selected process's holders (frames) only */
    style_on(v, PAIR_TITLE, A_REVERSE);
    char title[256];
    snprintf(title, sizeof title, "cumemtrace top  %zu %s, %zu running  every %.2g s  sort: %s  view: %s%s", n,
             cmt_plural(n, "process", "processes"), running, v->o->interval_ms / 1000.0, cmt_top_sort_name(v->sort),
             cmt_top_view_name(v->kind), v->paused ? "  [paused]" : "");
    mvaddnstr(0, 0, title, COLS);
    for (int x = (int)strlen(title); x < COLS; x++)
        addch(' '); /* the bar across the screen, in the title's colours */
    style_off(v, PAIR_TITLE, A_REVERSE);

    /* the table: one row per process and device */
    style_on(v, 0, A_BOLD);
    line_at(1, "  %-5s %-8s %-8s %4s %10s %10s %8s %-14s %11s %6s  %s", "RANK", "PID", "STATE", "DEV", "LIVE", "PEAK",
            "STEP", "PHASE", "GROWTH/STEP", "FAILED", "COMMAND");
    style_off(v, 0, A_BOLD);
    int y = 2;
    size_t rows = 0, sel_row = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t d = 0; d < (p[i]->n_devices ? p[i]->n_devices : 1); d++, rows++)
            if (i == pi && d == di)
                sel_row = rows;
    /* the table takes what its rows need, up to half the screen */
    int table_bottom = LINES / 2 > 4 ? LINES / 2 : 4;
    if ((size_t)table_bottom > 2 + (rows ? rows : 1))
        table_bottom = 2 + (int)(rows ? rows : 1);
    size_t room = (size_t)(table_bottom - y);
    size_t first = sel_row >= room ? sel_row - room + 1 : 0;
    size_t row = 0;
    for (size_t i = 0; i < n; i++) {
        for (size_t d = 0; d < (p[i]->n_devices ? p[i]->n_devices : 1); d++, row++) {
            if (row < first || y >= table_bottom)
                continue;
            const struct cmt_top_device *dev = d < p[i]->n_devices ? &p[i]->devices[d] : NULL;
            bool sel = i == pi && d == di;
            char rank[24] = "-", step[24] = "-", devs[8] = "-", live[32] = "-", peak[32] = "-", growth[40] = "-",
                 failed[24] = "-";
            if (p[i]->rank >= 0)
                snprintf(rank, sizeof rank, "%" PRId64, p[i]->rank);
            if (p[i]->has_step)
                snprintf(step, sizeof step, "%" PRIu64, p[i]->step);
            if (dev) {
                snprintf(devs, sizeof devs, "%d", dev->device);
                cmt_size_str(dev->live, live, sizeof live);
                cmt_size_str(dev->peak, peak, sizeof peak);
                if (dev->has_growth)
                    signed_size(dev->growth_per_step, growth, sizeof growth);
                snprintf(failed, sizeof failed, "%" PRIu64, dev->failed);
            }
            if (sel) {
                style_on(v, 0, A_REVERSE);
                move(y, 0);
                for (int x = 0; x < COLS; x++)
                    addch(' '); /* the selected row across the screen */
            }
            line_at(y, "%c %-5s %-8" PRIu64 " ", sel ? '>' : ' ', rank, p[i]->pid);
            int x = 2 + 5 + 1 + 8 + 1;
            style_on(v, sel ? 0 : state_pair(p[i]->state), 0);
            mvaddnstr(y, x, cmt_top_state_name(p[i]->state), COLS - x > 8 ? 8 : COLS - x);
            style_off(v, sel ? 0 : state_pair(p[i]->state), 0);
            x += 9;
            char rest[512];
            snprintf(rest, sizeof rest, "%4s %10s %10s %8s %-14.14s %11s %6s  %s", devs, live, peak, step,
                     p[i]->phase[0] ? p[i]->phase : "-", growth, failed, p[i]->command);
            if (x < COLS)
                mvaddnstr(y, x, rest, COLS - x);
            if (sel)
                style_off(v, 0, A_REVERSE);
            y++;
        }
    }
    y = table_bottom;
    if (n) {
        const struct cmt_top_process *sp = p[pi];
        const struct cmt_top_device *dev = di < sp->n_devices ? &sp->devices[di] : NULL;
        mvhline(y, 0, ACS_HLINE, COLS);
        y++;
        style_on(v, state_pair(sp->state), A_BOLD);
        line_at(y++, "pid %" PRIu64 " (%s): %s%s%s", sp->pid, sp->command,
                cmt_top_state_name(sp->state), sp->how[0] ? ": " : "", sp->how);
        style_off(v, state_pair(sp->state), A_BOLD);
        if (dev) {
            char step[24] = "-";
            if (sp->has_step)
                snprintf(step, sizeof step, "%" PRIu64, sp->step);
            line_at(y++, "device %d: live %s in %" PRIu64 ", peak %s at %s, step %s, phase %s", dev->device,
                    cmt_size_exact_str(dev->live, (char[48]){""}, 48), dev->live_count, SZ(dev->peak),
                    CMT_DURATION(dev->peak_ns), step, sp->phase[0] ? sp->phase : "-");
            char tensors[48] = "";
            if (dev->has_tensors)
                snprintf(tensors, sizeof tensors, " (tensors %s)", SZ(dev->tensors));
            line_at(y++, "holders: PyTorch reserve %s%s, cuBLAS %s, NCCL %s, other %s", SZ(dev->reserve), tensors,
                    SZ(dev->cublas), SZ(dev->nccl), SZ(dev->other));
            if (dev->failed) {
                style_on(v, PAIR_BAD, A_BOLD);
                line_at(y++, "failed allocations: %" PRIu64 ", the last of %s at %s", dev->failed,
                        SZ(dev->last_failed_size), dev->last_failed_site);
                style_off(v, PAIR_BAD, A_BOLD);
            }
            draw_chart(v, y++, dev);
            y++;
            int bottom = LINES - (v->o->program_output ? 2 : 1);
            draw_rows(v, y, bottom, pi, di);
        }
    } else {
        line_at(y + 1, "no trace yet: waiting for processes to start");
    }
    if (v->o->program_output) {
        char last[400];
        last_output_line(v->o->program_output, last, sizeof last);
        line_at(LINES - 2, "program output (in %s): %s", v->o->program_output, last);
    }
    static const char keys_help[] = "q quit  space pause  l/p/c/g sort by live/peak/count/growth  s next sort  "
                                    "tab/arrows process  d device  v view (1 sites 2 threads 3 phases)";
    style_on(v, 0, A_REVERSE);
    mvaddnstr(LINES - 1, 0, keys_help, COLS);
    for (int x = (int)sizeof keys_help - 1; x < COLS - 1; x++)
        addch(' ');
    style_off(v, 0, A_REVERSE);
    refresh();
}

/* Moves the selection by step rows of the table (processes and devices). */
static void draw_reading(struct view *v)
{
    erase();
    style_on(v, PAIR_TITLE, A_REVERSE);
    const char *title = "cumemtrace top  reading what the traces hold so far...";
    mvaddnstr(0, 0, title, COLS);
    for (int x = (int)strlen(title); x < COLS; x++)
        addch(' ');
    style_off(v, PAIR_TITLE, A_REVERSE);
    refresh();
}

static void move_selection(struct view *v, int step, bool device_only)
{
    const struct cmt_top_process *const *p;
    size_t n = cmt_top_processes(v->top, &p);
    if (!n)
        return;
    size_t pi, di;
    find_selection(v, p, n, &pi, &di);
    if (device_only) {
        size_t nd = p[pi]->n_devices;
        if (nd)
            select_row(v, p[pi], (di + 1) % nd);
        return;
    }
    /* flatten */
    size_t total = 0, cur = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t d = 0; d < (p[i]->n_devices ? p[i]->n_devices : 1); d++, total++)
            if (i == pi && d == di)
                cur = total;
    size_t want = (cur + total + (size_t)(step % (int)total + (int)total)) % total;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t d = 0; d < (p[i]->n_devices ? p[i]->n_devices : 1); d++, k++)
            if (k == want)
                select_row(v, p[i], d);
}

/* Returns true to quit. */
static bool on_key(struct view *v, int ch)
{
    switch (ch) {
    case 'q':
    case 'Q':
        return true;
    case ' ':
    case 'P':
        v->paused = !v->paused;
        break;
    case 'l':
        v->sort = CMT_TOP_SORT_LIVE;
        break;
    case 'p':
        v->sort = CMT_TOP_SORT_PEAK;
        break;
    case 'c':
        v->sort = CMT_TOP_SORT_COUNT;
        break;
    case 'g':
        v->sort = CMT_TOP_SORT_GROWTH;
        break;
    case 's':
        v->sort = (enum cmt_top_sort)((v->sort + 1) % CMT_TOP_SORT_N);
        break;
    case 'v':
        v->kind = (enum cmt_top_view)((v->kind + 1) % CMT_TOP_VIEW_N);
        break;
    case '1':
    case '2':
    case '3':
        v->kind = (enum cmt_top_view)(ch - '1');
        break;
    case '\t':
    case KEY_DOWN:
    case 'j':
        move_selection(v, 1, false);
        break;
    case KEY_BTAB:
    case KEY_UP:
    case 'k':
        move_selection(v, -1, false);
        break;
    case 'd':
        move_selection(v, 1, true);
        break;
    default:
        break;
    }
    return false;
}

int cmt_tui_run(struct cmt_top *t, const struct cmt_tui_options *o, char *err, size_t errlen)
{
    if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) {
        snprintf(err, errlen, "the live view needs a terminal: run it in one, or give --once for one snapshot");
        return -1;
    }
    struct view *v = calloc(1, sizeof *v);
    if (!v) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    v->top = t;
    v->o = o;
    v->sort = o->sort;
    v->kind = o->view;
    v->sel_device = -1;
    setlocale(LC_ALL, "");
    v->utf8 = !strcmp(nl_langinfo(CODESET), "UTF-8");
    if (!newterm(NULL, stdout, stdin)) {
        snprintf(err, errlen, "cannot drive this terminal (TERM=%s): set TERM to your terminal's type",
                 getenv("TERM") ? getenv("TERM") : "");
        free(v);
        return -1;
    }
    cbreak();
    noecho();
    keypad(stdscr, TRUE);
    curs_set(0);
    v->color = o->color && has_colors();
    if (v->color) {
        start_color();
        use_default_colors(); /* the terminal's own background and foreground */
        init_pair(PAIR_TITLE, COLOR_CYAN, -1);
        init_pair(PAIR_RUNNING, COLOR_GREEN, -1);
        init_pair(PAIR_ENDED, COLOR_BLUE, -1);
        init_pair(PAIR_BAD, COLOR_RED, -1);
        init_pair(PAIR_CHART, COLOR_YELLOW, -1);
    }
    struct sigaction sa, old_int, old_term;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_quit_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    quit_requested = 0;
    bool quit = false;
    /* The first poll reads everything committed so far: seconds for a long
     * trace already written. Say so on the screen rather than leave it
     * blank meanwhile. */
    draw_reading(v);
    while (!quit && !quit_requested) {
        if (!v->paused) {
            if (o->on_tick)
                o->on_tick(o->ctx, t);
            cmt_top_poll(t, false);
        }
        draw(v);
        if (o->done && o->done(o->ctx) && cmt_top_all_ended(t))
            break;
        uint64_t deadline = now_ms() + o->interval_ms;
        for (;;) {
            uint64_t now = now_ms();
            if (now >= deadline || quit_requested)
                break;
            timeout((int)(deadline - now));
            int ch = getch();
            if (ch == ERR)
                continue;
            if (ch == KEY_RESIZE) {
                draw(v);
                continue;
            }
            if (on_key(v, ch)) {
                quit = true;
                break;
            }
            draw(v);
        }
    }
    endwin();
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    free(v);
    return 0;
}
