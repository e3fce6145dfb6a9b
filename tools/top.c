/* top.c — `cuzk-top`'s views (live ncurses, --once text/JSON);
 * the readings come from stats_reader.h (shm/stats_reader.c). */
#include "base/version.h"
#include "tools/top.h"

#include <errno.h>
#include <getopt.h>
#include <locale.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <curses.h>

#include "proto/protocol.h"
#include "base/error.h"

/* ---- option parsing ------------------------------------------------------------ */

struct top_opts {
    const char *instance;
    char run_dir[PROTO_PATH_MAX];
    int once, json;
    double delay_s;
    int max_frames; /* tests: stop after N refreshes (0: run until q) */
};

/* "nodes: n0 3 synthesized, 3 buffers  n1 ...  cross-node 0" (several nodes only) */
static int nodes_line(const struct stats_reading *t, char *line, size_t len)
{
    struct stats_node nd[STATS_READING_MAX_NODES];
    int n = stats_reading_nodes(t, nd, STATS_READING_MAX_NODES), o;
    uint64_t cross = 0;

    if (n < 2) return 0;
    o = snprintf(line, len, "nodes:");
    for (int i = 0; i < n && o > 0 && (size_t)o < len; i++) {
        o += snprintf(line + o, len - (size_t)o, "  n%d %llu synthesized, %llu buffers", nd[i].node,
                      (unsigned long long)nd[i].synth_parts, (unsigned long long)nd[i].bufs_taken);
        cross += nd[i].cross_node;
    }
    if (o > 0 && (size_t)o < len)
        snprintf(line + o, len - (size_t)o, "   cross-node %llu", (unsigned long long)cross);
    return 1;
}

/* ---- the live view --------------------------------------------------------------- */

enum { SORT_SLOT, SORT_UTIL, SORT_RATE, SORT_N };

struct row {
    const struct stats_proc *p;
    int have_rate; /* a previous reading of the same process exists */
    double util, rate;
    double device;         /* gpuworkers: gpu_busy share of the last 10 s; -1: none yet */
    uint64_t gap50, gap99; /* gpuworkers: idle gaps of the last 10 s (0: none) */
};

/* A gpuworker's last 10 s for the DEV and GAP columns: its readings, at most one every
 * 100 ms, WIN_N deep (12.8 s); a new pid or generation starts it again. */
#define WIN_NS    10000000000ull
#define WIN_STEP  100000000ull
#define WIN_N     128
#define WIN_SLOTS 16
struct win_entry {
    uint64_t wall, busy, gap_count, gap[STATS_HIST_BUCKETS];
};
struct dev_win {
    int used, n, head;
    uint32_t slot, generation;
    int32_t pid;
    struct win_entry e[WIN_N];
};

struct view {
    struct stats_reading cur, prev;
    struct row *rows;
    int paused, sort, help, colour;
    struct dev_win win[WIN_SLOTS];
};

/* Push p's reading into its window and fill r's device share and gap percentiles from
 * the oldest reading at most 10 s old to this one. */
static void win_update(struct view *v, const struct stats_proc *p, struct row *r)
{
    static struct stats_snapshot d; /* only hists[0]: the gap buckets' difference */
    const struct stats_snapshot *s = &p->s;
    int c = stats_counter_find(s, "gpu_busy_ns"), h = stats_hist_find(s, "gap");
    struct dev_win *w = NULL;
    const struct win_entry *o = NULL, *nw;

    r->device = -1;
    for (int i = 0; i < WIN_SLOTS && !w; i++)
        if (v->win[i].used && v->win[i].slot == p->slot) w = &v->win[i];
    for (int i = 0; i < WIN_SLOTS && !w; i++)
        if (!v->win[i].used) w = &v->win[i];
    if (!w || c < 0 || h < 0) return;
    if (!w->used || w->pid != s->pid || w->generation != s->generation) {
        memset(w, 0, sizeof(*w));
        w->used = 1;
        w->slot = p->slot;
        w->pid = s->pid;
        w->generation = s->generation;
    }
    if (!w->n || s->wall_ns >= w->e[(w->head + WIN_N - 1) % WIN_N].wall + WIN_STEP) {
        struct win_entry *e = &w->e[w->head];

        e->wall = s->wall_ns;
        e->busy = s->counters[c];
        e->gap_count = s->hists[h].count;
        memcpy(e->gap, s->hists[h].bucket, sizeof(e->gap));
        w->head = (w->head + 1) % WIN_N;
        if (w->n < WIN_N) w->n++;
    }
    nw = &w->e[(w->head + WIN_N - 1) % WIN_N];
    for (int k = w->n; k >= 1 && !o; k--) { /* oldest first */
        const struct win_entry *e = &w->e[(w->head + WIN_N - k) % WIN_N];

        if (e->wall + WIN_NS >= nw->wall && e != nw) o = e;
    }
    if (!o || nw->wall <= o->wall || nw->busy < o->busy || nw->gap_count < o->gap_count) return;
    r->device = (double)(nw->busy - o->busy) / (double)(nw->wall - o->wall);
    if (r->device > 1) r->device = 1;
    d.hists[0].count = nw->gap_count - o->gap_count;
    for (int b = 0; b < STATS_HIST_BUCKETS; b++) d.hists[0].bucket[b] = nw->gap[b] - o->gap[b];
    r->gap50 = stats_hist_percentile(&d, 0, 0.5);
    r->gap99 = stats_hist_percentile(&d, 0, 0.99);
}

static const char *fmt_ns(uint64_t ns, char *buf, size_t len)
{
    if (!ns)
        snprintf(buf, len, "-");
    else if (ns == UINT64_MAX)
        snprintf(buf, len, "inf");
    else if (ns < 1000000ull)
        snprintf(buf, len, "%.0fus", (double)ns / 1e3);
    else if (ns < 1000000000ull)
        snprintf(buf, len, "%.0fms", (double)ns / 1e6);
    else
        snprintf(buf, len, "%.1fs", (double)ns / 1e9);
    return buf;
}

/* Percentile q of histogram h of s, as fmt_ns writes it; none when s has no such
 * histogram (h < 0). */
static const char *fmt_pct(const struct stats_snapshot *s, int h, double q, const char *none, char *buf,
                           size_t len)
{
    return h >= 0 ? fmt_ns(stats_hist_percentile(s, (uint32_t)h, q), buf, len) : none;
}

static const char *fmt_bytes(uint64_t b, char *buf, size_t len)
{
    if (!b)
        snprintf(buf, len, "-");
    else if (b < (1ull << 30))
        snprintf(buf, len, "%.0fM", (double)b / (1 << 20));
    else
        snprintf(buf, len, "%.1fG", (double)b / (1 << 30));
    return buf;
}

/* Rates over the interval since the previous reading of the same process (same slot,
 * pid and generation, counters not lower): else none ("restarted" or first frame). */
static void compute_rows(struct view *v)
{
    for (uint32_t i = 0; i < v->cur.n; i++) {
        const struct stats_proc *p = &v->cur.p[i], *q = NULL;
        struct row *r = &v->rows[i];
        int c = stats_counter_find(&p->s, "parts_done");

        memset(r, 0, sizeof(*r));
        r->p = p;
        for (uint32_t k = 0; k < v->prev.n; k++)
            if (v->prev.p[k].slot == p->slot) q = &v->prev.p[k];
        if (q && q->s.pid == p->s.pid && q->s.generation == p->s.generation &&
            p->s.wall_ns > q->s.wall_ns + 100000000ull && stats_work_ns(&p->s) >= stats_work_ns(&q->s)) {
            double dt = (double)(p->s.wall_ns - q->s.wall_ns);

            r->have_rate = 1;
            r->util = (double)(stats_work_ns(&p->s) - stats_work_ns(&q->s)) / dt;
            if (c >= 0 && p->s.counters[c] >= q->s.counters[c])
                r->rate = (double)(p->s.counters[c] - q->s.counters[c]) * 1e9 / dt;
        }
        r->device = -1;
        if (p->s.role == STATS_ROLE_GPUWORKER) win_update(v, p, r);
        if (r->util > 1) r->util = 1;
    }
}

static int row_cmp_mode;

static int row_cmp(const void *a, const void *b)
{
    const struct row *x = a, *y = b;

    if (x->p->s.role != y->p->s.role) /* grouped by stage */
        return (int)x->p->s.role - (int)y->p->s.role;
    if (row_cmp_mode == SORT_UTIL && x->util != y->util) return x->util < y->util ? 1 : -1;
    if (row_cmp_mode == SORT_RATE && x->rate != y->rate) return x->rate < y->rate ? 1 : -1;
    return (int)x->p->slot - (int)y->p->slot;
}

static uint64_t shared_gauge(const struct stats_reading *t, const char *name)
{
    for (uint32_t i = 0; i < t->n; i++)
        if (t->p[i].s.role == STATS_ROLE_SUPERVISOR) {
            int g = stats_gauge_find(&t->p[i].s, name);

            return g >= 0 ? t->p[i].s.gauges[g] : 0;
        }
    return 0;
}

static void draw(struct view *v, double delay_s)
{
    static const char *const sort_names[] = { "slot", "util", "rate" };
    const struct stats_reading *t = &v->cur;
    int rows, cols, y = 0;
    char b1[32], b2[32], b3[32], b4[32], b5[32], b6[32], line[512];

    getmaxyx(stdscr, rows, cols);
    erase();
    if (v->colour) attron(A_BOLD);
    mvprintw(y++, 0, "cuzk-top  instance %s  %s  refresh %.1fs  sort %s%s", t->instance,
             t->running ? "running" : "NOT RUNNING", delay_s, sort_names[v->sort],
             v->paused ? "  [paused]" : "");
    if (v->colour) attroff(A_BOLD);
    if (!t->found) {
        mvprintw(y++, 0, "%.*s", cols, t->why);
        mvprintw(y++, 0, "waiting for it to start (q quits)");
        refresh();
        return;
    }
    if (!t->running) mvprintw(y++, 0, "%.*s", cols, t->why);
    {
        int n = 0;

        n += snprintf(line + n, sizeof(line) - (size_t)n, "rings: synth %llu",
                      (unsigned long long)shared_gauge(t, "ring_synth"));
        for (int w = 0; w < 8; w++) {
            char name[24];
            int found = 0;

            snprintf(name, sizeof(name), "ring_worker%d", w);
            for (uint32_t i = 0; i < t->n; i++)
                if (t->p[i].s.role == STATS_ROLE_SUPERVISOR && stats_gauge_find(&t->p[i].s, name) >= 0)
                    found = 1;
            if (found)
                n += snprintf(line + n, sizeof(line) - (size_t)n, "  w%d %llu", w,
                              (unsigned long long)shared_gauge(t, name));
        }
        snprintf(line + n, sizeof(line) - (size_t)n, "  final %llu   pool: %llu used, %llu free",
                 (unsigned long long)shared_gauge(t, "ring_final"),
                 (unsigned long long)shared_gauge(t, "pool_used"),
                 (unsigned long long)shared_gauge(t, "pool_free"));
        mvprintw(y++, 0, "%.*s", cols, line);
        if (nodes_line(t, line, sizeof(line))) mvprintw(y++, 0, "%.*s", cols, line);
        snprintf(line, sizeof(line),
                 "jobs: %llu running, %llu done, %llu failed   parts: "
                 "queued %llu synth %llu ready %llu proving %llu proved %llu final %llu done "
                 "%llu failed %llu",
                 (unsigned long long)shared_gauge(t, "jobs_running"),
                 (unsigned long long)shared_gauge(t, "jobs_done"),
                 (unsigned long long)shared_gauge(t, "jobs_failed"),
                 (unsigned long long)shared_gauge(t, "parts_queued"),
                 (unsigned long long)shared_gauge(t, "parts_synth"),
                 (unsigned long long)shared_gauge(t, "parts_ready"),
                 (unsigned long long)shared_gauge(t, "parts_proving"),
                 (unsigned long long)shared_gauge(t, "parts_proved"),
                 (unsigned long long)shared_gauge(t, "parts_final"),
                 (unsigned long long)shared_gauge(t, "parts_done"),
                 (unsigned long long)shared_gauge(t, "parts_failed"));
        mvprintw(y++, 0, "%.*s", cols, line);
    }
    y++;
    if (v->colour) attron(A_REVERSE);
    mvprintw(
        y++, 0, "%-*.*s", cols, cols,
        "STAGE        PID     STATE        UTIL                   DEV   PART/S  MAIN p50/p99    GAP p50/p99     RSS   RST  HB");
    if (v->colour) attroff(A_REVERSE);
    row_cmp_mode = v->sort;
    qsort(v->rows, t->n, sizeof(*v->rows), row_cmp);
    for (uint32_t i = 0; i < t->n && y < rows - 1; i++) {
        const struct row *r = &v->rows[i];
        const struct stats_snapshot *s = &r->p->s;
        int mh = stats_main_hist(s), gpu = s->role == STATS_ROLE_GPUWORKER && r->device >= 0;
        char stage[24], bar[24], st[STATS_NAME_LEN + 8], util[16], dev[16], rate[16];
        int nb = r->have_rate ? (int)(r->util * 16 + 0.5) : 0;

        snprintf(stage, sizeof(stage), "%s/%u", stats_role_name(s->role), s->index);
        for (int k = 0; k < 16; k++) bar[k] = k < nb ? '#' : '.';
        bar[16] = 0;
        if (r->have_rate) {
            snprintf(util, sizeof(util), "%3.0f%%", r->util * 100);
            snprintf(rate, sizeof(rate), "%.2f", r->rate);
        } else {
            snprintf(util, sizeof(util), "  - ");
            snprintf(rate, sizeof(rate), "-");
        }
        if (r->device >= 0)
            snprintf(dev, sizeof(dev), "%3.0f%%", r->device * 100);
        else
            snprintf(dev, sizeof(dev), "  -");
        stats_state_name(s, (int)s->state, st, sizeof(st));
        snprintf(line, sizeof(line), "%-12s %-7d %-12.12s [%s] %s %4s %7s  %6s/%-7s %6s/%-7s %6s %3u %s%s",
                 stage, (int)s->pid, r->p->alive ? st : "dead", bar, util, dev, rate,
                 fmt_pct(s, mh, 0.5, "-", b1, sizeof(b1)), fmt_pct(s, mh, 0.99, "-", b2, sizeof(b2)),
                 gpu ? fmt_ns(r->gap50, b3, sizeof(b3)) : "", gpu ? fmt_ns(r->gap99, b4, sizeof(b4)) : "",
                 fmt_bytes(r->p->rss_bytes, b5, sizeof(b5)), s->generation ? s->generation - 1 : 0,
                 fmt_ns(r->p->heartbeat_age_ns, b6, sizeof(b6)),
                 !r->p->alive                                 ? " STALE"
                     : r->p->heartbeat_age_ns > 2000000000ull ? " LATE"
                                                              : "");
        if (v->colour)
            attron(COLOR_PAIR(!r->p->alive || r->p->heartbeat_age_ns > 2000000000ull ? 2
                                  : r->have_rate && r->util > 0.5                    ? 1
                                                                                     : 3));
        mvprintw(y++, 0, "%.*s", cols, line);
        if (v->colour) attroff(COLOR_PAIR(1) | COLOR_PAIR(2) | COLOR_PAIR(3));
    }
    if (v->help && y + 6 < rows) {
        y++;
        mvprintw(y++, 0, "q quit   p pause/resume   s sort (slot, util, rate)   h this help");
        mvprintw(y++, 0, "UTIL: share of the last interval in work states (not idle/wait);");
        mvprintw(y++, 0, "DEV: device busy share, last 10 s (events; CPU: compute sections);");
        mvprintw(y++, 0, "MAIN: synth/finalizer part, worker prove; GAP: device idle gaps between");
        mvprintw(y++, 0, "partitions, last 10 s; RST: restarts;");
        mvprintw(y++, 0, "HB: heartbeat age. A pid change or counter drop resets the rates.");
    }
    mvprintw(rows - 1, 0, "%.*s", cols, "q quit  p pause  s sort  h help");
    refresh();
}

static volatile sig_atomic_t top_quit;

static void on_sig(int sig)
{
    (void)sig;
    top_quit = 1;
}

static int run_live(const struct top_opts *o)
{
    struct view v;
    int frames = 0;

    memset(&v, 0, sizeof(v));
    setlocale(LC_ALL, "");
    if (!initscr()) {
        fprintf(stderr, "cuzk-top: cannot initialise the terminal (TERM=%s)\n",
                getenv("TERM") ? getenv("TERM") : "");
        return CUZK_EXIT_USAGE; /* the environment is part of the command line */
    }
    signal(SIGINT, on_sig);
    signal(SIGTERM, on_sig);
    cbreak();
    noecho();
    curs_set(0);
    keypad(stdscr, TRUE);
    if (has_colors()) {
        start_color();
        use_default_colors();
        init_pair(1, COLOR_GREEN, -1);
        init_pair(2, COLOR_RED, -1);
        init_pair(3, -1, -1);
        v.colour = 1;
    }
    v.help = 0;
    while (!top_quit) {
        int ch;

        if (!v.paused) {
            stats_reading_free(&v.prev);
            v.prev = v.cur;
            if (stats_reading_take(&v.cur, o->instance)) break;
            free(v.rows);
            v.rows = calloc(v.cur.n ? v.cur.n : 1, sizeof(*v.rows));
            if (!v.rows) break;
            compute_rows(&v);
        }
        draw(&v, o->delay_s);
        if (o->max_frames && ++frames >= o->max_frames) break;
        timeout((int)(o->delay_s * 1000));
        ch = getch();
        switch (ch) {
        case 'q':
        case 'Q': top_quit = 1; break;
        case 'p':
        case 'P': v.paused = !v.paused; break;
        case 's':
        case 'S': v.sort = (v.sort + 1) % SORT_N; break;
        case 'h':
        case 'H':
        case '?': v.help = !v.help; break;
        case KEY_RESIZE: /* ncurses has resized stdscr; the next draw fits */ break;
        default: break;
        }
    }
    endwin();
    stats_reading_free(&v.cur);
    stats_reading_free(&v.prev);
    free(v.rows);
    return 0;
}

/* --once: a gpuworker's device figures over its lifetime: gpu_busy and in-flight occupancy
 * shares, the idle gaps, its CPU seconds and NVML's gauges where it has them. */
static void gpu_once_line(const struct stats_snapshot *s)
{
    int b = stats_counter_find(s, "gpu_busy_ns"), l = stats_counter_find(s, "lane_occupy_ns");
    int h = stats_hist_find(s, "gap"), cpu = stats_gauge_find(s, "cpu_ns"),
        ok = stats_gauge_find(s, "nvml_ok");
    double wall = s->wall_ns ? (double)s->wall_ns : 1;
    char b1[32], b2[32];

    printf("  device %u: gpu_busy %.1f%%  in-flight occupancy %.1f%%  gaps %llu p50 %s p99 %s  cpu %.2f s",
           s->index, b >= 0 ? 100.0 * (double)s->counters[b] / wall : 0.0,
           l >= 0 ? 100.0 * (double)s->counters[l] / wall : 0.0,
           h >= 0 ? (unsigned long long)s->hists[h].count : 0ull, fmt_pct(s, h, 0.5, "-", b1, sizeof(b1)),
           fmt_pct(s, h, 0.99, "-", b2, sizeof(b2)), cpu >= 0 ? (double)s->gauges[cpu] * 1e-9 : 0.0);
    if (ok >= 0 && s->gauges[ok]) {
        int u = stats_gauge_find(s, "nvml_util_pct"), m = stats_gauge_find(s, "nvml_mem_bytes");
        int pw = stats_gauge_find(s, "nvml_power_mw"), sm = stats_gauge_find(s, "nvml_sm_mhz");

        printf("  nvml util %llu%% mem %s power %.0f W sm %llu MHz",
               u >= 0 ? (unsigned long long)s->gauges[u] : 0ull,
               fmt_bytes(m >= 0 ? s->gauges[m] : 0, b1, sizeof(b1)),
               pw >= 0 ? (double)s->gauges[pw] / 1e3 : 0.0,
               sm >= 0 ? (unsigned long long)s->gauges[sm] : 0ull);
    } else {
        printf("  nvml none");
    }
    printf("\n");
}

/* --once without --json: one plain table, utilisation over each process's lifetime. */
static void print_once_text(const struct stats_reading *t)
{
    char b1[32], b2[32], b3[32];

    char line[512];

    printf("instance %s: %s\n", t->instance, t->running ? "running" : t->why);
    if (nodes_line(t, line, sizeof(line))) printf("%s\n", line);
    for (uint32_t i = 0; i < t->n; i++) {
        const struct stats_snapshot *s = &t->p[i].s;
        int mh = stats_main_hist(s), c = stats_counter_find(s, "parts_done");
        char st[STATS_NAME_LEN + 8];

        printf("%-10s %u pid %-7d %-12s work %5.1f%%  parts %-6llu p50 %-6s p99 %-6s rss %-6s "
               "restarts %u\n",
               stats_role_name(s->role), s->index, (int)s->pid,
               stats_state_name(s, (int)s->state, st, sizeof(st)),
               s->wall_ns ? 100.0 * (double)stats_work_ns(s) / (double)s->wall_ns : 0.0,
               c >= 0 ? (unsigned long long)s->counters[c] : 0ull, fmt_pct(s, mh, 0.5, "-", b1, sizeof(b1)),
               fmt_pct(s, mh, 0.99, "-", b2, sizeof(b2)), fmt_bytes(t->p[i].rss_bytes, b3, sizeof(b3)),
               s->generation ? s->generation - 1 : 0);
        if (s->role == STATS_ROLE_GPUWORKER) gpu_once_line(s);
    }
}

static void top_usage(FILE *f)
{
    fputs("usage: cuzk-top [--instance NAME] [--run-dir DIR] [-d SECONDS] [--once [--json]]\n"
          "  live view of a cuzkd instance's stats page (mapped read-only)\n"
          "  -d SECONDS   refresh interval (default 1)\n"
          "  --once       print one snapshot and exit (--json: the schema in docs/operations.md)\n"
          "  --version    print the version and exit\n"
          "  keys: q quit, p pause, s sort (slot/util/rate), h help\n",
          f);
    /* 20: --once, no such instance running */
    cuzk_exit_help(f, CUZK_PROG_CLIENT, (const int[]){ 0, 2, 10, 20, -1 });
}

int top_main(int argc, char **argv)
{
    static const struct option opts[] = {
        { "instance", required_argument, NULL, 'i' },
        { "run-dir", required_argument, NULL, 'r' },
        { "delay", required_argument, NULL, 'd' },
        { "once", no_argument, NULL, 'o' },
        { "json", no_argument, NULL, 'j' },
        { "frames", required_argument, NULL, 'f' },
        { "version", no_argument, NULL, 'V' },
        CUZK_OPT_HELP,
        { NULL, 0, NULL, 0 },
    };
    struct top_opts o = { .instance = "default", .delay_s = 1.0 };
    int c;

    while ((c = getopt_long(argc, argv, "d:h", opts, NULL)) != -1) {
        switch (c) {
        case 'i': o.instance = optarg; break;
        case 'r': snprintf(o.run_dir, sizeof(o.run_dir), "%s", optarg); break;
        case 'd':
            o.delay_s = atof(optarg);
            if (o.delay_s < 0.1 || o.delay_s > 3600) {
                fprintf(stderr, "cuzk-top: -d %s: give 0.1 to 3600 seconds\n", optarg);
                return CUZK_EXIT_USAGE;
            }
            break;
        case 'o': o.once = 1; break;
        case 'j': o.json = 1; break;
        case 'f': o.max_frames = atoi(optarg); break;
        case 'h': top_usage(stdout); return 0;
        case 'V': printf("cuzk-top %s\n", cuzk_version()); return 0;
        default: top_usage(stderr); return CUZK_EXIT_USAGE;
        }
    }
    if (optind != argc || (o.json && !o.once)) {
        top_usage(stderr);
        return CUZK_EXIT_USAGE;
    }
    if (o.once) {
        struct stats_reading t;
        int found, rc = stats_reading_take(&t, o.instance);

        if (rc) {
            fprintf(stderr, "cuzk-top: %s\n", cuzk_strerror(rc));
            return cuzk_exit_code(rc, CUZK_PROG_CLIENT);
        }
        if (o.json)
            stats_reading_json(stdout, &t);
        else
            print_once_text(&t);
        found = t.found;
        stats_reading_free(&t);
        return found ? CUZK_EXIT_OK : CUZK_EXIT_NO_DAEMON;
    }
    return run_live(&o);
}
