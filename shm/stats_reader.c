/* stats_reader.c — snapshots of the stats page (stats_reader.h), their JSON and
 * Prometheus forms. Read by cuzk-top and `cuzk metrics` (tools/) and by cuzkd's
 * metrics endpoint (supervisor/) alike: it lives on the shared-memory floor, so that
 * neither has to import the other. */
#include "shm/stats_reader.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "shm/futex.h"
#include "shm/shmlayout.h"
#include "base/os.h"

const char *stats_role_name(uint32_t role)
{
    static const char *const n[] = { "none", "supervisor", "synth", "gpuworker", "finalizer", "client" };

    return role < sizeof(n) / sizeof(n[0]) ? n[role] : "unknown";
}

static int find_name(const char (*names)[STATS_NAME_LEN], int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (!strncmp(names[i], name, STATS_NAME_LEN)) return i;
    return -1;
}

int stats_hist_find(const struct stats_snapshot *s, const char *name)
{
    return find_name(s->hist_names, STATS_MAX_HISTS, name);
}

int stats_counter_find(const struct stats_snapshot *s, const char *name)
{
    return find_name(s->counter_names, STATS_MAX_COUNTERS, name);
}

int stats_gauge_find(const struct stats_snapshot *s, const char *name)
{
    return find_name(s->gauge_names, STATS_MAX_GAUGES, name);
}

int stats_main_hist(const struct stats_snapshot *s)
{
    int h = s->role == STATS_ROLE_GPUWORKER ? stats_hist_find(s, "prove") : -1;

    return h >= 0 ? h : stats_hist_find(s, "part");
}

uint64_t stats_work_ns(const struct stats_snapshot *s)
{
    uint64_t w = 0;

    for (int i = 0; i < STATS_MAX_STATES; i++)
        if (i != STATS_IDLE && i != STATS_WAIT_INPUT && i != STATS_WAIT_OUTPUT) w += s->state_ns[i];
    return w;
}

/* Resident set from /proc/PID/statm (second field, pages); 0 when unreadable. */
static uint64_t rss_of(int32_t pid)
{
    char path[64];
    unsigned long size, res;
    FILE *f;
    int ok;

    if (pid <= 0) return 0;
    snprintf(path, sizeof(path), "/proc/%d/statm", (int)pid);
    f = fopen(path, "r");
    if (!f) return 0;
    ok = fscanf(f, "%lu %lu", &size, &res) == 2;
    fclose(f);
    return ok ? (uint64_t)res * (uint64_t)sysconf(_SC_PAGESIZE) : 0;
}

static int pid_alive(int32_t pid)
{
    return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM);
}

int stats_reading_take(struct stats_reading *t, const char *instance)
{
    struct shmlayout_stats st;
    char err[256];
    int rc;

    memset(t, 0, sizeof(*t));
    snprintf(t->instance, sizeof(t->instance), "%s", instance);
    t->now_ns = os_now_ns();
    rc = shmlayout_stats_attach(&st, instance, SEGMENT_RDONLY, err, sizeof(err));
    if (rc) {
        if (rc == -ENOENT || rc == -EAGAIN)
            snprintf(t->why, sizeof(t->why),
                     "cuzkd instance \"%s\" is not running "
                     "(no stats segment cuzk-%s.stats%s)",
                     instance, instance, rc == -EAGAIN ? " ready yet" : "");
        else
            snprintf(t->why, sizeof(t->why), "%s", err);
        return 0;
    }
    t->found = 1;
    t->supervisor_pid = st.page->supervisor_pid;
    t->page_start_ns = st.page->start_ns;
    t->p = calloc(st.page->slot_count, sizeof(*t->p));
    if (!t->p) {
        shmlayout_stats_detach(&st);
        return -ENOMEM;
    }
    t->now_ns = os_now_ns();
    for (uint32_t i = 0; i < st.page->slot_count; i++) {
        const struct stats_slot *sl = stats_page_slot(st.page, i);
        struct stats_proc *p = &t->p[t->n];

        if (barrier_load_relaxed(&((struct stats_slot *)sl)->role) == STATS_ROLE_NONE) continue;
        p->slot = i;
        if (stats_slot_read(sl, &p->s, t->now_ns, 1000)) {
            p->torn = 1;
            continue;
        }
        if (p->s.role == STATS_ROLE_NONE) continue;
        p->alive = pid_alive(p->s.pid);
        p->rss_bytes = p->alive ? rss_of(p->s.pid) : 0;
        p->heartbeat_age_ns = t->now_ns > p->s.heartbeat_ns ? t->now_ns - p->s.heartbeat_ns : 0;
        t->n++;
    }
    shmlayout_stats_detach(&st);
    t->running = pid_alive(t->supervisor_pid);
    if (!t->running)
        snprintf(t->why, sizeof(t->why),
                 "cuzkd instance \"%s\" is not running (pid %d of "
                 "the stats segment is gone; the figures are its last)",
                 instance, (int)t->supervisor_pid);
    return 0;
}

void stats_reading_free(struct stats_reading *t)
{
    free(t->p);
    t->p = NULL;
    t->n = 0;
}

/* ---- JSON ---------------------------------------------------------------------- */

static json_t *ju(uint64_t v)
{
    return json_integer(v > (uint64_t)INT64_MAX ? INT64_MAX : (json_int_t)v);
}

const char *stats_state_name(const struct stats_snapshot *s, int i, char *buf, size_t len)
{
    if (s->state_names[i][0]) {
        snprintf(buf, len, "%.*s", STATS_NAME_LEN, s->state_names[i]);
        return buf;
    }
    snprintf(buf, len, "state%d", i);
    return buf;
}

static json_t *proc_json(const struct stats_proc *p)
{
    const struct stats_snapshot *s = &p->s;
    json_t *o = json_object(), *st = json_object(), *c = json_object(), *h = json_object(),
           *g = json_object();
    char nb[STATS_NAME_LEN + 8];

    json_object_set_new(o, "slot", json_integer(p->slot));
    json_object_set_new(o, "role", json_string(stats_role_name(s->role)));
    json_object_set_new(o, "index", json_integer(s->index));
    json_object_set_new(o, "pid", json_integer(s->pid));
    json_object_set_new(o, "alive", json_boolean(p->alive));
    json_object_set_new(o, "generation", json_integer(s->generation));
    json_object_set_new(o, "restarts", json_integer(s->generation ? s->generation - 1 : 0));
    json_object_set_new(o, "state", json_string(stats_state_name(s, (int)s->state, nb, sizeof(nb))));
    json_object_set_new(o, "wall_ns", ju(s->wall_ns));
    json_object_set_new(o, "heartbeat_age_ns", ju(p->heartbeat_age_ns));
    json_object_set_new(o, "rss_bytes", ju(p->rss_bytes));
    json_object_set_new(o, "work_ns", ju(stats_work_ns(s)));
    for (int i = 0; i < STATS_MAX_STATES; i++)
        if (s->state_names[i][0] || s->state_ns[i])
            json_object_set_new(st, stats_state_name(s, i, nb, sizeof(nb)), ju(s->state_ns[i]));
    for (int i = 0; i < STATS_MAX_COUNTERS; i++)
        if (s->counter_names[i][0]) json_object_set_new(c, s->counter_names[i], ju(s->counters[i]));
    for (int i = 0; i < STATS_MAX_HISTS; i++) {
        json_t *x, *b;

        if (!s->hist_names[i][0]) continue;
        x = json_object();
        b = json_array();
        for (int k = 0; k < STATS_HIST_BUCKETS; k++) json_array_append_new(b, ju(s->hists[i].bucket[k]));
        json_object_set_new(x, "count", ju(s->hists[i].count));
        json_object_set_new(x, "sum_ns", ju(s->hists[i].sum_ns));
        json_object_set_new(x, "p50_ns", ju(stats_hist_percentile(s, (uint32_t)i, 0.50)));
        json_object_set_new(x, "p99_ns", ju(stats_hist_percentile(s, (uint32_t)i, 0.99)));
        json_object_set_new(x, "buckets", b);
        json_object_set_new(h, s->hist_names[i], x);
    }
    for (int i = 0; i < STATS_MAX_GAUGES; i++)
        if (s->gauge_names[i][0]) json_object_set_new(g, s->gauge_names[i], ju(s->gauges[i]));
    json_object_set_new(o, "states", st);
    json_object_set_new(o, "counters", c);
    json_object_set_new(o, "histograms", h);
    json_object_set_new(o, "gauges", g);
    return o;
}

static struct stats_node *node_get(struct stats_node *out, int *n, int max, int node)
{
    int i;

    for (i = 0; i < *n; i++)
        if (out[i].node == node) return &out[i];
    if (*n == max) return NULL;
    for (i = *n; i > 0 && out[i - 1].node > node; i--) /* keep node order */
        out[i] = out[i - 1];
    memset(&out[i], 0, sizeof(out[i]));
    out[i].node = node;
    (*n)++;
    return &out[i];
}

int stats_reading_nodes(const struct stats_reading *t, struct stats_node *out, int max)
{
    int n = 0;

    for (uint32_t i = 0; i < t->n; i++) {
        const struct stats_snapshot *s = &t->p[i].s;
        int g = stats_gauge_find(s, "numa_node"), c;
        struct stats_node *nd;

        if (s->role != STATS_ROLE_SYNTH || g < 0) continue;
        if ((nd = node_get(out, &n, max, s->gauges[g] >= 255 ? -1 : (int)s->gauges[g]))) {
            nd->synths++;
            if ((c = stats_counter_find(s, "parts_done")) >= 0) nd->synth_parts += s->counters[c];
            if ((c = stats_counter_find(s, "cross_node")) >= 0) nd->cross_node += s->counters[c];
        }
        for (c = 0; c < STATS_MAX_COUNTERS; c++) {
            const char *nm = s->counter_names[c];
            char *end;
            long k;

            if (strncmp(nm, "bufs_n", 6)) continue;
            k = strtol(nm + 6, &end, 10);
            if (end == nm + 6 || *end) k = -1; /* "bufs_nany" */
            if ((nd = node_get(out, &n, max, (int)k))) nd->bufs_taken += s->counters[c];
        }
    }
    return n;
}

static json_t *nodes_json(const struct stats_reading *t)
{
    struct stats_node nd[STATS_READING_MAX_NODES];
    int n = stats_reading_nodes(t, nd, STATS_READING_MAX_NODES);
    json_t *a = json_array();

    for (int i = 0; i < n; i++)
        json_array_append_new(a,
                              json_pack("{s:i,s:i,s:o,s:o,s:o}", "node", nd[i].node, "synths",
                                        (int)nd[i].synths, "synth_parts", ju(nd[i].synth_parts), "bufs_taken",
                                        ju(nd[i].bufs_taken), "cross_node", ju(nd[i].cross_node)));
    return a;
}

int stats_reading_json(FILE *f, const struct stats_reading *t)
{
    json_t *o = json_object(), *a = json_array(), *sh = json_object();
    char *text;

    json_object_set_new(o, "schema", json_integer(STATS_READING_SCHEMA));
    json_object_set_new(o, "instance", json_string(t->instance));
    json_object_set_new(o, "running", json_boolean(t->running));
    if (!t->running) json_object_set_new(o, "why", json_string(t->why));
    json_object_set_new(o, "now_ns", ju(t->now_ns));
    json_object_set_new(o, "supervisor_pid", json_integer(t->supervisor_pid));
    json_object_set_new(o, "uptime_ns",
                        ju(t->found && t->now_ns > t->page_start_ns ? t->now_ns - t->page_start_ns : 0));
    for (uint32_t i = 0; i < t->n; i++) {
        const struct stats_snapshot *s = &t->p[i].s;

        json_array_append_new(a, proc_json(&t->p[i]));
        if (s->role == STATS_ROLE_SUPERVISOR)
            for (int g = 0; g < STATS_MAX_GAUGES; g++)
                if (s->gauge_names[g][0]) json_object_set_new(sh, s->gauge_names[g], ju(s->gauges[g]));
    }
    json_object_set_new(o, "shared", sh);
    json_object_set_new(o, "nodes", nodes_json(t));
    json_object_set_new(o, "processes", a);
    text = json_dumps(o, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
    json_decref(o);
    if (!text) return -ENOMEM;
    fprintf(f, "%s\n", text);
    free(text);
    return 0;
}

/* ---- Prometheus text format ----------------------------------------------------- */

/* Histogram buckets exported: le = 2^b ns for b in [HB_LO, HB_HI] (1 us .. ~18 min),
 * bucket b of the page holding [2^(b-1), 2^b). */
#define HB_LO 10
#define HB_HI 40

/* Names in the page are [A-Za-z0-9_] by convention; anything else becomes '_' so a
 * label value never needs escaping. */
static const char *lbl(const char *name, char *buf, size_t len)
{
    size_t i;

    for (i = 0; i + 1 < len && i < STATS_NAME_LEN && name[i]; i++) {
        char c = name[i];

        buf[i] =
            (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ? c : '_';
    }
    buf[i] = 0;
    return buf;
}

/* A metric family's HELP and TYPE lines. */
static void family(FILE *f, const char *name, const char *type, const char *help)
{
    fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* The start of a sample of process s, NAME{stage="ROLE",index="N": the caller adds its
 * own labels, the closing brace and the value. */
static void sample(FILE *f, const char *name, const struct stats_snapshot *s)
{
    fprintf(f, "%s{stage=\"%s\",index=\"%u\"", name, stats_role_name(s->role), s->index);
}

/* One sample per named entry of a process's counters or gauges: label="NAME". */
static void named(FILE *f, const char *name, const char *label, const struct stats_snapshot *s,
                  const char (*names)[STATS_NAME_LEN], const uint64_t *v, int n)
{
    char a[STATS_NAME_LEN + 8];

    for (int k = 0; k < n; k++)
        if (names[k][0]) {
            sample(f, name, s);
            fprintf(f, ",%s=\"%s\"} %llu\n", label, lbl(names[k], a, sizeof(a)), (unsigned long long)v[k]);
        }
}

/* Histogram h of s as Prometheus buckets: name_bucket{LABELS,le=...}, name_sum,
 * name_count; labels is the text inside the braces. */
static void hist_out(FILE *f, const char *name, const char *labels, const struct stats_snapshot *s, int h)
{
    uint64_t acc = 0;

    for (int q = 0; q < HB_LO; q++) acc += s->hists[h].bucket[q];
    for (int q = HB_LO; q <= HB_HI; q++) {
        acc += s->hists[h].bucket[q];
        fprintf(f, "%s_bucket{%s,le=\"%.9g\"} %llu\n", name, labels, (double)(1ull << q) * 1e-9,
                (unsigned long long)acc);
    }
    fprintf(f, "%s_bucket{%s,le=\"+Inf\"} %llu\n", name, labels, (unsigned long long)s->hists[h].count);
    fprintf(f, "%s_sum{%s} %.9f\n", name, labels, (double)s->hists[h].sum_ns * 1e-9);
    fprintf(f, "%s_count{%s} %llu\n", name, labels, (unsigned long long)s->hists[h].count);
}

/* A counter family in seconds from each gpuworker's nanosecond counter of that name
 * (a worker that lacks the counter is left out). */
static void gpu_seconds_family(FILE *f, const struct stats_reading *t, const char *counter,
                               const char *metric, const char *help)
{
    int k;

    family(f, metric, "counter", help);
    for (uint32_t i = 0; i < t->n; i++)
        if (t->p[i].s.role == STATS_ROLE_GPUWORKER && (k = stats_counter_find(&t->p[i].s, counter)) >= 0)
            fprintf(f, "%s{device=\"%u\"} %.9f\n", metric, t->p[i].s.index,
                    (double)t->p[i].s.counters[k] * 1e-9);
}

/* The devices' figures, one series per gpuworker (device = its index, the device it
 * drives): busy time from the device's own clock (CUDA events; the CPU backend: its
 * compute sections), the host's in-flight occupancy beside it, the idle gaps between
 * partitions, and NVML's gauges where the driver has NVML (cuzk_gpu_nvml_up 1). */
static void gpu_families(FILE *f, const struct stats_reading *t)
{
    static const struct {
        const char *gauge, *metric, *help;
        double scale;
        int nvml;
    } g[] = {
        { "nvml_ok", "cuzk_gpu_nvml_up", "1 when NVML answers for the device (0: no driver library).", 1, 0 },
        { "nvml_util_pct", "cuzk_gpu_utilization_ratio",
          "NVML: share of the last sample period a kernel ran (sampled every 100 ms).", 0.01, 1 },
        { "nvml_mem_bytes", "cuzk_gpu_memory_used_bytes", "NVML: device memory in use, every process.", 1,
          1 },
        { "nvml_power_mw", "cuzk_gpu_power_watts", "NVML: board power draw.", 1e-3, 1 },
        { "nvml_sm_mhz", "cuzk_gpu_sm_clock_hertz", "NVML: SM clock.", 1e6, 1 },
        { "cpu_ns", "cuzk_gpuworker_cpu_seconds", "CPU time (user + system) of the device's worker process.",
          1e-9, 0 },
    };
    char lab[64];
    int k;

    gpu_seconds_family(f, t, "gpu_busy_ns", "cuzk_gpu_busy_seconds_total",
                       "Time the device had partition work: the union of the partitions' spans from their "
                       "first copy to their last device-to-host copy (CUDA events; CPU backend: its compute "
                       "sections).");
    gpu_seconds_family(
        f, t, "lane_occupy_ns", "cuzk_gpu_lane_occupied_seconds_total",
        "Host clock: time at least one in-flight thread held a partition (circuit loads, host round trips "
        "included).");
    family(f, "cuzk_gpu_idle_gap_seconds", "histogram",
           "Device idle time between one partition's last device step and the next one's first copy "
           "(0: they overlapped).");
    for (uint32_t i = 0; i < t->n; i++)
        if (t->p[i].s.role == STATS_ROLE_GPUWORKER && (k = stats_hist_find(&t->p[i].s, "gap")) >= 0) {
            snprintf(lab, sizeof(lab), "device=\"%u\"", t->p[i].s.index);
            hist_out(f, "cuzk_gpu_idle_gap_seconds", lab, &t->p[i].s, k);
        }
    for (size_t j = 0; j < sizeof(g) / sizeof(g[0]); j++) {
        family(f, g[j].metric, "gauge", g[j].help);
        for (uint32_t i = 0; i < t->n; i++) {
            const struct stats_snapshot *s = &t->p[i].s;
            int ok = stats_gauge_find(s, "nvml_ok");

            if (s->role != STATS_ROLE_GPUWORKER || (k = stats_gauge_find(s, g[j].gauge)) < 0) continue;
            if (g[j].nvml && (ok < 0 || !s->gauges[ok])) continue; /* no NVML: no figure, not a 0 */
            fprintf(f, "%s{device=\"%u\"} %.15g\n", g[j].metric, s->index, (double)s->gauges[k] * g[j].scale);
        }
    }
}

void stats_reading_prometheus(FILE *f, const struct stats_reading *t)
{
    char a[STATS_NAME_LEN + 8], b[STATS_NAME_LEN + 8];

    family(f, "cuzk_up", "gauge", "1 when the cuzkd instance's supervisor is alive.");
    fprintf(f, "cuzk_up{instance_name=\"%s\"} %d\n", lbl(t->instance, a, sizeof(a)), t->running);
    family(f, "cuzk_stage_seconds_total", "counter",
           "Wall time of each process by state; the states of one process sum to its wall time.");
    for (uint32_t i = 0; i < t->n; i++) {
        const struct stats_snapshot *s = &t->p[i].s;

        for (int k = 0; k < STATS_MAX_STATES; k++)
            if (s->state_names[k][0] || s->state_ns[k]) {
                sample(f, "cuzk_stage_seconds_total", s);
                fprintf(f, ",state=\"%s\"} %.9f\n", lbl(stats_state_name(s, k, b, sizeof(b)), a, sizeof(a)),
                        (double)s->state_ns[k] * 1e-9);
            }
    }
    family(f, "cuzk_stage_counter_total", "counter",
           "Monotonic counters of each process (names ending in _ns are nanoseconds).");
    for (uint32_t i = 0; i < t->n; i++)
        named(f, "cuzk_stage_counter_total", "counter", &t->p[i].s, t->p[i].s.counter_names,
              t->p[i].s.counters, STATS_MAX_COUNTERS);
    family(f, "cuzk_stage_step_seconds", "histogram", "Duration of each step (log2 buckets).");
    for (uint32_t i = 0; i < t->n; i++) {
        const struct stats_snapshot *s = &t->p[i].s;

        for (int k = 0; k < STATS_MAX_HISTS; k++) {
            char labels[96];

            if (!s->hist_names[k][0]) continue;
            snprintf(labels, sizeof(labels), "stage=\"%s\",index=\"%u\",step=\"%s\"",
                     stats_role_name(s->role), s->index, lbl(s->hist_names[k], a, sizeof(a)));
            hist_out(f, "cuzk_stage_step_seconds", labels, s, k);
        }
    }
    family(f, "cuzk_gauge", "gauge",
           "Current values: ring depths, pool use, jobs and partitions by state (from cuzkd's slot).");
    for (uint32_t i = 0; i < t->n; i++)
        named(f, "cuzk_gauge", "name", &t->p[i].s, t->p[i].s.gauge_names, t->p[i].s.gauges, STATS_MAX_GAUGES);
    family(f, "cuzk_process_resident_bytes", "gauge", "RSS of each process (/proc/PID/statm).");
    for (uint32_t i = 0; i < t->n; i++) {
        sample(f, "cuzk_process_resident_bytes", &t->p[i].s);
        fprintf(f, "} %llu\n", (unsigned long long)t->p[i].rss_bytes);
    }
    family(f, "cuzk_process_restarts", "gauge", "Restarts of the process in its slot.");
    for (uint32_t i = 0; i < t->n; i++) {
        sample(f, "cuzk_process_restarts", &t->p[i].s);
        fprintf(f, "} %u\n", t->p[i].s.generation ? t->p[i].s.generation - 1 : 0);
    }
    family(f, "cuzk_process_heartbeat_age_seconds", "gauge", "Time since the process last beat.");
    for (uint32_t i = 0; i < t->n; i++) {
        sample(f, "cuzk_process_heartbeat_age_seconds", &t->p[i].s);
        fprintf(f, "} %.9f\n", (double)t->p[i].heartbeat_age_ns * 1e-9);
    }
    gpu_families(f, t);
}
