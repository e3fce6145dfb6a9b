/* top.c — snapshots of the stats page (top.h), their JSON and Prometheus forms,
 * `cuzk metrics`, and `cuzk-top`'s live ncurses view. */
#include "cuzk/top.h"

#include <errno.h>
#include <getopt.h>
#include <locale.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <curses.h>
#include <jansson.h>

#include "cuzk/config.h"
#include "cuzk/shmlayout.h"

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

const char *top_role_name(uint32_t role)
{
	static const char *const n[] = { "none", "supervisor", "synth", "gpuworker", "finalizer",
					 "client" };

	return role < sizeof(n) / sizeof(n[0]) ? n[role] : "unknown";
}

static int find_name(const char (*names)[STATS_NAME_LEN], int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (!strncmp(names[i], name, STATS_NAME_LEN))
			return i;
	return -1;
}

int top_hist_find(const struct stats_snapshot *s, const char *name)
{
	return find_name(s->hist_names, STATS_MAX_HISTS, name);
}

int top_counter_find(const struct stats_snapshot *s, const char *name)
{
	return find_name(s->counter_names, STATS_MAX_COUNTERS, name);
}

int top_gauge_find(const struct stats_snapshot *s, const char *name)
{
	return find_name(s->gauge_names, STATS_MAX_GAUGES, name);
}

int top_main_hist(const struct stats_snapshot *s)
{
	int h = s->role == STATS_ROLE_GPUWORKER ? top_hist_find(s, "prove") : -1;

	return h >= 0 ? h : top_hist_find(s, "part");
}

uint64_t top_work_ns(const struct stats_snapshot *s)
{
	uint64_t w = 0;

	for (int i = 0; i < STATS_MAX_STATES; i++)
		if (i != STATS_IDLE && i != STATS_WAIT_INPUT && i != STATS_WAIT_OUTPUT)
			w += s->state_ns[i];
	return w;
}

/* Resident set from /proc/PID/statm (second field, pages); 0 when unreadable. */
static uint64_t rss_of(int32_t pid)
{
	char path[64];
	unsigned long size, res;
	FILE *f;
	int ok;

	if (pid <= 0)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/statm", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	ok = fscanf(f, "%lu %lu", &size, &res) == 2;
	fclose(f);
	return ok ? (uint64_t)res * (uint64_t)sysconf(_SC_PAGESIZE) : 0;
}

static int pid_alive(int32_t pid)
{
	return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM);
}

int top_snap_take(struct top_snap *t, const char *instance)
{
	struct shmlayout_stats st;
	char err[256];
	int rc;

	memset(t, 0, sizeof(*t));
	snprintf(t->instance, sizeof(t->instance), "%s", instance);
	t->now_ns = mono_ns();
	rc = shmlayout_stats_attach(&st, instance, SEGMENT_RDONLY, err, sizeof(err));
	if (rc) {
		if (rc == -ENOENT || rc == -EAGAIN)
			snprintf(t->why, sizeof(t->why), "cuzkd instance \"%s\" is not running "
				 "(no stats segment cuzk-%s.stats%s)", instance, instance,
				 rc == -EAGAIN ? " ready yet" : "");
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
	t->now_ns = mono_ns();
	for (uint32_t i = 0; i < st.page->slot_count; i++) {
		const struct stats_slot *sl = stats_page_slot(st.page, i);
		struct top_proc *p = &t->p[t->n];

		if (barrier_load_relaxed(&((struct stats_slot *)sl)->role) == STATS_ROLE_NONE)
			continue;
		p->slot = i;
		if (stats_slot_read(sl, &p->s, t->now_ns, 1000)) {
			p->torn = 1;
			continue;
		}
		if (p->s.role == STATS_ROLE_NONE)
			continue;
		p->alive = pid_alive(p->s.pid);
		p->rss_bytes = p->alive ? rss_of(p->s.pid) : 0;
		p->heartbeat_age_ns = t->now_ns > p->s.heartbeat_ns ? t->now_ns - p->s.heartbeat_ns : 0;
		t->n++;
	}
	shmlayout_stats_detach(&st);
	t->running = pid_alive(t->supervisor_pid);
	if (!t->running)
		snprintf(t->why, sizeof(t->why), "cuzkd instance \"%s\" is not running (pid %d of "
			 "the stats segment is gone; the figures are its last)", instance,
			 (int)t->supervisor_pid);
	return 0;
}

void top_snap_free(struct top_snap *t)
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

static const char *state_name(const struct stats_snapshot *s, int i, char *buf, size_t len)
{
	if (s->state_names[i][0]) {
		snprintf(buf, len, "%.*s", STATS_NAME_LEN, s->state_names[i]);
		return buf;
	}
	snprintf(buf, len, "state%d", i);
	return buf;
}

static json_t *proc_json(const struct top_proc *p)
{
	const struct stats_snapshot *s = &p->s;
	json_t *o = json_object(), *st = json_object(), *c = json_object(), *h = json_object(),
	       *g = json_object();
	char nb[STATS_NAME_LEN + 8];

	json_object_set_new(o, "slot", json_integer(p->slot));
	json_object_set_new(o, "role", json_string(top_role_name(s->role)));
	json_object_set_new(o, "index", json_integer(s->index));
	json_object_set_new(o, "pid", json_integer(s->pid));
	json_object_set_new(o, "alive", json_boolean(p->alive));
	json_object_set_new(o, "generation", json_integer(s->generation));
	json_object_set_new(o, "restarts", json_integer(s->generation ? s->generation - 1 : 0));
	json_object_set_new(o, "state", json_string(state_name(s, (int)s->state, nb, sizeof(nb))));
	json_object_set_new(o, "wall_ns", ju(s->wall_ns));
	json_object_set_new(o, "heartbeat_age_ns", ju(p->heartbeat_age_ns));
	json_object_set_new(o, "rss_bytes", ju(p->rss_bytes));
	json_object_set_new(o, "work_ns", ju(top_work_ns(s)));
	for (int i = 0; i < STATS_MAX_STATES; i++)
		if (s->state_names[i][0] || s->state_ns[i])
			json_object_set_new(st, state_name(s, i, nb, sizeof(nb)), ju(s->state_ns[i]));
	for (int i = 0; i < STATS_MAX_COUNTERS; i++)
		if (s->counter_names[i][0])
			json_object_set_new(c, s->counter_names[i], ju(s->counters[i]));
	for (int i = 0; i < STATS_MAX_HISTS; i++) {
		json_t *x, *b;

		if (!s->hist_names[i][0])
			continue;
		x = json_object();
		b = json_array();
		for (int k = 0; k < STATS_HIST_BUCKETS; k++)
			json_array_append_new(b, ju(s->hists[i].bucket[k]));
		json_object_set_new(x, "count", ju(s->hists[i].count));
		json_object_set_new(x, "sum_ns", ju(s->hists[i].sum_ns));
		json_object_set_new(x, "p50_ns", ju(stats_hist_percentile(s, (uint32_t)i, 0.50)));
		json_object_set_new(x, "p99_ns", ju(stats_hist_percentile(s, (uint32_t)i, 0.99)));
		json_object_set_new(x, "buckets", b);
		json_object_set_new(h, s->hist_names[i], x);
	}
	for (int i = 0; i < STATS_MAX_GAUGES; i++)
		if (s->gauge_names[i][0])
			json_object_set_new(g, s->gauge_names[i], ju(s->gauges[i]));
	json_object_set_new(o, "states", st);
	json_object_set_new(o, "counters", c);
	json_object_set_new(o, "histograms", h);
	json_object_set_new(o, "gauges", g);
	return o;
}

static struct top_node *node_get(struct top_node *out, int *n, int max, int node)
{
	int i;

	for (i = 0; i < *n; i++)
		if (out[i].node == node)
			return &out[i];
	if (*n == max)
		return NULL;
	for (i = *n; i > 0 && out[i - 1].node > node; i--) /* keep node order */
		out[i] = out[i - 1];
	memset(&out[i], 0, sizeof(out[i]));
	out[i].node = node;
	(*n)++;
	return &out[i];
}

int top_nodes(const struct top_snap *t, struct top_node *out, int max)
{
	int n = 0;

	for (uint32_t i = 0; i < t->n; i++) {
		const struct stats_snapshot *s = &t->p[i].s;
		int g = top_gauge_find(s, "numa_node"), c;
		struct top_node *nd;

		if (s->role != STATS_ROLE_SYNTH || g < 0)
			continue;
		if ((nd = node_get(out, &n, max, s->gauges[g] >= 255 ? -1 : (int)s->gauges[g]))) {
			nd->synths++;
			if ((c = top_counter_find(s, "parts_done")) >= 0)
				nd->synth_parts += s->counters[c];
			if ((c = top_counter_find(s, "cross_node")) >= 0)
				nd->cross_node += s->counters[c];
		}
		for (c = 0; c < STATS_MAX_COUNTERS; c++) {
			const char *nm = s->counter_names[c];
			char *end;
			long k;

			if (strncmp(nm, "bufs_n", 6))
				continue;
			k = strtol(nm + 6, &end, 10);
			if (end == nm + 6 || *end)
				k = -1; /* "bufs_nany" */
			if ((nd = node_get(out, &n, max, (int)k)))
				nd->bufs_taken += s->counters[c];
		}
	}
	return n;
}

static json_t *nodes_json(const struct top_snap *t)
{
	struct top_node nd[TOP_MAX_NODES];
	int n = top_nodes(t, nd, TOP_MAX_NODES);
	json_t *a = json_array();

	for (int i = 0; i < n; i++)
		json_array_append_new(a, json_pack("{s:i,s:i,s:o,s:o,s:o}", "node", nd[i].node,
						   "synths", (int)nd[i].synths, "synth_parts",
						   ju(nd[i].synth_parts), "bufs_taken",
						   ju(nd[i].bufs_taken), "cross_node",
						   ju(nd[i].cross_node)));
	return a;
}

/* "nodes: n0 3 synthesized, 3 buffers  n1 ...  cross-node 0" (several nodes only) */
static int nodes_line(const struct top_snap *t, char *line, size_t len)
{
	struct top_node nd[TOP_MAX_NODES];
	int n = top_nodes(t, nd, TOP_MAX_NODES), o;
	uint64_t cross = 0;

	if (n < 2)
		return 0;
	o = snprintf(line, len, "nodes:");
	for (int i = 0; i < n && o > 0 && (size_t)o < len; i++) {
		o += snprintf(line + o, len - (size_t)o, "  n%d %llu synthesized, %llu buffers",
			      nd[i].node, (unsigned long long)nd[i].synth_parts,
			      (unsigned long long)nd[i].bufs_taken);
		cross += nd[i].cross_node;
	}
	if (o > 0 && (size_t)o < len)
		snprintf(line + o, len - (size_t)o, "   cross-node %llu", (unsigned long long)cross);
	return 1;
}

int top_print_json(FILE *f, const struct top_snap *t)
{
	json_t *o = json_object(), *a = json_array(), *sh = json_object();
	char *text;

	json_object_set_new(o, "schema", json_integer(TOP_SCHEMA_VERSION));
	json_object_set_new(o, "instance", json_string(t->instance));
	json_object_set_new(o, "running", json_boolean(t->running));
	if (!t->running)
		json_object_set_new(o, "why", json_string(t->why));
	json_object_set_new(o, "now_ns", ju(t->now_ns));
	json_object_set_new(o, "supervisor_pid", json_integer(t->supervisor_pid));
	json_object_set_new(o, "uptime_ns", ju(t->found && t->now_ns > t->page_start_ns ?
					       t->now_ns - t->page_start_ns : 0));
	for (uint32_t i = 0; i < t->n; i++) {
		const struct stats_snapshot *s = &t->p[i].s;

		json_array_append_new(a, proc_json(&t->p[i]));
		if (s->role == STATS_ROLE_SUPERVISOR)
			for (int g = 0; g < STATS_MAX_GAUGES; g++)
				if (s->gauge_names[g][0])
					json_object_set_new(sh, s->gauge_names[g], ju(s->gauges[g]));
	}
	json_object_set_new(o, "shared", sh);
	json_object_set_new(o, "nodes", nodes_json(t));
	json_object_set_new(o, "processes", a);
	text = json_dumps(o, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
	json_decref(o);
	if (!text)
		return -ENOMEM;
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

		buf[i] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
			 c == '_' ? c : '_';
	}
	buf[i] = 0;
	return buf;
}

void top_print_prometheus(FILE *f, const struct top_snap *t)
{
	char a[STATS_NAME_LEN + 8], b[STATS_NAME_LEN + 8];

	fprintf(f, "# HELP cuzk_up 1 when the cuzkd instance's supervisor is alive.\n"
		"# TYPE cuzk_up gauge\ncuzk_up{instance_name=\"%s\"} %d\n", lbl(t->instance, a, sizeof(a)),
		t->running);
	fprintf(f, "# HELP cuzk_stage_seconds_total Wall time of each process by state; the "
		"states of one process sum to its wall time.\n# TYPE cuzk_stage_seconds_total counter\n");
	for (uint32_t i = 0; i < t->n; i++) {
		const struct stats_snapshot *s = &t->p[i].s;

		for (int k = 0; k < STATS_MAX_STATES; k++)
			if (s->state_names[k][0] || s->state_ns[k])
				fprintf(f, "cuzk_stage_seconds_total{stage=\"%s\",index=\"%u\",state=\"%s\"} "
					"%.9f\n", top_role_name(s->role), s->index,
					lbl(state_name(s, k, b, sizeof(b)), a, sizeof(a)),
					(double)s->state_ns[k] * 1e-9);
	}
	fprintf(f, "# HELP cuzk_stage_counter_total Monotonic counters of each process (names "
		"ending in _ns are nanoseconds).\n# TYPE cuzk_stage_counter_total counter\n");
	for (uint32_t i = 0; i < t->n; i++) {
		const struct stats_snapshot *s = &t->p[i].s;

		for (int k = 0; k < STATS_MAX_COUNTERS; k++)
			if (s->counter_names[k][0])
				fprintf(f, "cuzk_stage_counter_total{stage=\"%s\",index=\"%u\",counter=\"%s\"} "
					"%llu\n", top_role_name(s->role), s->index,
					lbl(s->counter_names[k], a, sizeof(a)),
					(unsigned long long)s->counters[k]);
	}
	fprintf(f, "# HELP cuzk_stage_step_seconds Duration of each step (log2 buckets).\n"
		"# TYPE cuzk_stage_step_seconds histogram\n");
	for (uint32_t i = 0; i < t->n; i++) {
		const struct stats_snapshot *s = &t->p[i].s;

		for (int k = 0; k < STATS_MAX_HISTS; k++) {
			uint64_t acc = 0;

			if (!s->hist_names[k][0])
				continue;
			lbl(s->hist_names[k], a, sizeof(a));
			for (int q = 0; q < HB_LO; q++)
				acc += s->hists[k].bucket[q];
			for (int q = HB_LO; q <= HB_HI; q++) {
				acc += s->hists[k].bucket[q];
				fprintf(f, "cuzk_stage_step_seconds_bucket{stage=\"%s\",index=\"%u\",step=\"%s\","
					"le=\"%.9g\"} %llu\n", top_role_name(s->role), s->index, a,
					(double)(1ull << q) * 1e-9, (unsigned long long)acc);
			}
			fprintf(f, "cuzk_stage_step_seconds_bucket{stage=\"%s\",index=\"%u\",step=\"%s\","
				"le=\"+Inf\"} %llu\n", top_role_name(s->role), s->index, a,
				(unsigned long long)s->hists[k].count);
			fprintf(f, "cuzk_stage_step_seconds_sum{stage=\"%s\",index=\"%u\",step=\"%s\"} %.9f\n",
				top_role_name(s->role), s->index, a, (double)s->hists[k].sum_ns * 1e-9);
			fprintf(f, "cuzk_stage_step_seconds_count{stage=\"%s\",index=\"%u\",step=\"%s\"} %llu\n",
				top_role_name(s->role), s->index, a,
				(unsigned long long)s->hists[k].count);
		}
	}
	fprintf(f, "# HELP cuzk_gauge Current values: ring depths, pool use, jobs and partitions "
		"by state (from cuzkd's slot).\n# TYPE cuzk_gauge gauge\n");
	for (uint32_t i = 0; i < t->n; i++) {
		const struct stats_snapshot *s = &t->p[i].s;

		for (int k = 0; k < STATS_MAX_GAUGES; k++)
			if (s->gauge_names[k][0])
				fprintf(f, "cuzk_gauge{stage=\"%s\",index=\"%u\",name=\"%s\"} %llu\n",
					top_role_name(s->role), s->index, lbl(s->gauge_names[k], a, sizeof(a)),
					(unsigned long long)s->gauges[k]);
	}
	fprintf(f, "# HELP cuzk_process_resident_bytes RSS of each process (/proc/PID/statm).\n"
		"# TYPE cuzk_process_resident_bytes gauge\n");
	for (uint32_t i = 0; i < t->n; i++)
		fprintf(f, "cuzk_process_resident_bytes{stage=\"%s\",index=\"%u\"} %llu\n",
			top_role_name(t->p[i].s.role), t->p[i].s.index,
			(unsigned long long)t->p[i].rss_bytes);
	fprintf(f, "# HELP cuzk_process_restarts Restarts of the process in its slot.\n"
		"# TYPE cuzk_process_restarts gauge\n");
	for (uint32_t i = 0; i < t->n; i++)
		fprintf(f, "cuzk_process_restarts{stage=\"%s\",index=\"%u\"} %u\n",
			top_role_name(t->p[i].s.role), t->p[i].s.index,
			t->p[i].s.generation ? t->p[i].s.generation - 1 : 0);
	fprintf(f, "# HELP cuzk_process_heartbeat_age_seconds Time since the process last beat.\n"
		"# TYPE cuzk_process_heartbeat_age_seconds gauge\n");
	for (uint32_t i = 0; i < t->n; i++)
		fprintf(f, "cuzk_process_heartbeat_age_seconds{stage=\"%s\",index=\"%u\"} %.9f\n",
			top_role_name(t->p[i].s.role), t->p[i].s.index,
			(double)t->p[i].heartbeat_age_ns * 1e-9);
}

/* ---- option parsing shared by cuzk-top and cuzk metrics --------------------------- */

struct top_opts {
	const char *instance;
	char run_dir[CONFIG_PATH_MAX];
	int once, json;
	double delay_s;
	int max_frames; /* tests: stop after N refreshes (0: run until q) */
};

int top_metrics_cmd(const char *instance, int argc, char **argv)
{
	struct top_snap t;
	int found;

	if (argc > 1) {
		fputs("usage: cuzk [--instance NAME] metrics\n"
		      "  the stats page in the Prometheus text format; for node_exporter's textfile\n"
		      "  collector: cuzk metrics > DIR/cuzk.prom.tmp && mv DIR/cuzk.prom.tmp "
		      "DIR/cuzk.prom\n", strcmp(argv[1], "--help") ? stderr : stdout);
		return strcmp(argv[1], "--help") ? 2 : 0;
	}
	if (top_snap_take(&t, instance))
		return 1;
	top_print_prometheus(stdout, &t);
	if (!t.found)
		fprintf(stderr, "cuzk metrics: %s\n", t.why);
	found = t.found;
	top_snap_free(&t);
	return found ? 0 : 20;
}

/* ---- the live view --------------------------------------------------------------- */

enum { SORT_SLOT, SORT_UTIL, SORT_RATE, SORT_N };

struct row {
	const struct top_proc *p;
	int have_rate;       /* a previous reading of the same process exists */
	double util, device, rate;
};

struct view {
	struct top_snap cur, prev;
	struct row *rows;
	int paused, sort, help, colour;
};

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
		const struct top_proc *p = &v->cur.p[i], *q = NULL;
		struct row *r = &v->rows[i];
		int c = top_counter_find(&p->s, "parts_done"), d = top_counter_find(&p->s, "device_ns");

		memset(r, 0, sizeof(*r));
		r->p = p;
		for (uint32_t k = 0; k < v->prev.n; k++)
			if (v->prev.p[k].slot == p->slot)
				q = &v->prev.p[k];
		if (q && q->s.pid == p->s.pid && q->s.generation == p->s.generation &&
		    p->s.wall_ns > q->s.wall_ns + 100000000ull &&
		    top_work_ns(&p->s) >= top_work_ns(&q->s)) {
			double dt = (double)(p->s.wall_ns - q->s.wall_ns);

			r->have_rate = 1;
			r->util = (double)(top_work_ns(&p->s) - top_work_ns(&q->s)) / dt;
			if (c >= 0 && p->s.counters[c] >= q->s.counters[c])
				r->rate = (double)(p->s.counters[c] - q->s.counters[c]) * 1e9 / dt;
			if (d >= 0 && p->s.counters[d] >= q->s.counters[d])
				r->device = (double)(p->s.counters[d] - q->s.counters[d]) / dt;
			else
				r->device = -1;
		} else {
			r->device = -1;
		}
		if (r->util > 1)
			r->util = 1;
	}
}

static int row_cmp_mode;

static int row_cmp(const void *a, const void *b)
{
	const struct row *x = a, *y = b;

	if (x->p->s.role != y->p->s.role) /* grouped by stage */
		return (int)x->p->s.role - (int)y->p->s.role;
	if (row_cmp_mode == SORT_UTIL && x->util != y->util)
		return x->util < y->util ? 1 : -1;
	if (row_cmp_mode == SORT_RATE && x->rate != y->rate)
		return x->rate < y->rate ? 1 : -1;
	return (int)x->p->slot - (int)y->p->slot;
}

static uint64_t shared_gauge(const struct top_snap *t, const char *name)
{
	for (uint32_t i = 0; i < t->n; i++)
		if (t->p[i].s.role == STATS_ROLE_SUPERVISOR) {
			int g = top_gauge_find(&t->p[i].s, name);

			return g >= 0 ? t->p[i].s.gauges[g] : 0;
		}
	return 0;
}

static void draw(struct view *v, double delay_s)
{
	static const char *const sort_names[] = { "slot", "util", "rate" };
	const struct top_snap *t = &v->cur;
	int rows, cols, y = 0;
	char b1[32], b2[32], b3[32], b4[32], b5[32], line[512];

	getmaxyx(stdscr, rows, cols);
	erase();
	if (v->colour)
		attron(A_BOLD);
	mvprintw(y++, 0, "cuzk-top  instance %s  %s  refresh %.1fs  sort %s%s", t->instance,
		 t->running ? "running" : "NOT RUNNING", delay_s, sort_names[v->sort],
		 v->paused ? "  [paused]" : "");
	if (v->colour)
		attroff(A_BOLD);
	if (!t->found) {
		mvprintw(y++, 0, "%.*s", cols, t->why);
		mvprintw(y++, 0, "waiting for it to start (q quits)");
		refresh();
		return;
	}
	if (!t->running)
		mvprintw(y++, 0, "%.*s", cols, t->why);
	{
		int n = 0;

		n += snprintf(line + n, sizeof(line) - (size_t)n, "rings: synth %llu",
			      (unsigned long long)shared_gauge(t, "ring_synth"));
		for (int w = 0; w < 8; w++) {
			char name[24];
			int found = 0;

			snprintf(name, sizeof(name), "ring_worker%d", w);
			for (uint32_t i = 0; i < t->n; i++)
				if (t->p[i].s.role == STATS_ROLE_SUPERVISOR &&
				    top_gauge_find(&t->p[i].s, name) >= 0)
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
		if (nodes_line(t, line, sizeof(line)))
			mvprintw(y++, 0, "%.*s", cols, line);
		snprintf(line, sizeof(line), "jobs: %llu running, %llu done, %llu failed   parts: "
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
	if (v->colour)
		attron(A_REVERSE);
	mvprintw(y++, 0, "%-*.*s", cols, cols,
		 "STAGE        PID     STATE        UTIL                   DEV   PART/S  MAIN p50/p99    GAP p50/p99     RSS   RST  HB");
	if (v->colour)
		attroff(A_REVERSE);
	row_cmp_mode = v->sort;
	qsort(v->rows, t->n, sizeof(*v->rows), row_cmp);
	for (uint32_t i = 0; i < t->n && y < rows - 1; i++) {
		const struct row *r = &v->rows[i];
		const struct stats_snapshot *s = &r->p->s;
		int mh = top_main_hist(s), gh = s->role == STATS_ROLE_GPUWORKER ? top_hist_find(s, "gap") : -1;
		char stage[24], bar[24], st[STATS_NAME_LEN + 8], util[16], dev[16], rate[16];
		int nb = r->have_rate ? (int)(r->util * 16 + 0.5) : 0;

		snprintf(stage, sizeof(stage), "%s/%u", top_role_name(s->role), s->index);
		for (int k = 0; k < 16; k++)
			bar[k] = k < nb ? '#' : '.';
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
		state_name(s, (int)s->state, st, sizeof(st));
		snprintf(line, sizeof(line), "%-12s %-7d %-12.12s [%s] %s %4s %7s  %6s/%-7s %6s/%-7s %6s %3u %s%s",
			 stage, (int)s->pid, r->p->alive ? st : "dead", bar, util, dev, rate,
			 mh >= 0 ? fmt_ns(stats_hist_percentile(s, (uint32_t)mh, 0.5), b1, sizeof(b1)) : "-",
			 mh >= 0 ? fmt_ns(stats_hist_percentile(s, (uint32_t)mh, 0.99), b2, sizeof(b2)) : "-",
			 gh >= 0 ? fmt_ns(stats_hist_percentile(s, (uint32_t)gh, 0.5), b3, sizeof(b3)) : "",
			 gh >= 0 ? fmt_ns(stats_hist_percentile(s, (uint32_t)gh, 0.99), b4, sizeof(b4)) : "",
			 fmt_bytes(r->p->rss_bytes, b5, sizeof(b5)), s->generation ? s->generation - 1 : 0,
			 fmt_ns(r->p->heartbeat_age_ns, b1, sizeof(b1)),
			 !r->p->alive ? " STALE" : r->p->heartbeat_age_ns > 2000000000ull ? " LATE" : "");
		if (v->colour)
			attron(COLOR_PAIR(!r->p->alive || r->p->heartbeat_age_ns > 2000000000ull ? 2 :
					  r->have_rate && r->util > 0.5 ? 1 : 3));
		mvprintw(y++, 0, "%.*s", cols, line);
		if (v->colour)
			attroff(COLOR_PAIR(1) | COLOR_PAIR(2) | COLOR_PAIR(3));
	}
	if (v->help && y + 6 < rows) {
		y++;
		mvprintw(y++, 0, "q quit   p pause/resume   s sort (slot, util, rate)   h this help");
		mvprintw(y++, 0, "UTIL: share of the last interval in work states (not idle/wait);");
		mvprintw(y++, 0, "DEV: worker compute sections (NTT+MSM) share; MAIN: synth/finalizer");
		mvprintw(y++, 0, "part, worker prove; GAP: worker end-to-start gap; RST: restarts;");
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
		return 1;
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
			top_snap_free(&v.prev);
			v.prev = v.cur;
			if (top_snap_take(&v.cur, o->instance))
				break;
			free(v.rows);
			v.rows = calloc(v.cur.n ? v.cur.n : 1, sizeof(*v.rows));
			if (!v.rows)
				break;
			compute_rows(&v);
		}
		draw(&v, o->delay_s);
		if (o->max_frames && ++frames >= o->max_frames)
			break;
		timeout((int)(o->delay_s * 1000));
		ch = getch();
		switch (ch) {
		case 'q': case 'Q': top_quit = 1; break;
		case 'p': case 'P': v.paused = !v.paused; break;
		case 's': case 'S': v.sort = (v.sort + 1) % SORT_N; break;
		case 'h': case 'H': case '?': v.help = !v.help; break;
		case KEY_RESIZE: /* ncurses has resized stdscr; the next draw fits */ break;
		default: break;
		}
	}
	endwin();
	top_snap_free(&v.cur);
	top_snap_free(&v.prev);
	free(v.rows);
	return 0;
}

/* --once without --json: one plain table, utilisation over each process's lifetime. */
static void print_once_text(const struct top_snap *t)
{
	char b1[32], b2[32], b3[32];

	char line[512];

	printf("instance %s: %s\n", t->instance, t->running ? "running" : t->why);
	if (nodes_line(t, line, sizeof(line)))
		printf("%s\n", line);
	for (uint32_t i = 0; i < t->n; i++) {
		const struct stats_snapshot *s = &t->p[i].s;
		int mh = top_main_hist(s), c = top_counter_find(s, "parts_done");
		char st[STATS_NAME_LEN + 8];

		printf("%-10s %u pid %-7d %-12s work %5.1f%%  parts %-6llu p50 %-6s p99 %-6s rss %-6s "
		       "restarts %u\n", top_role_name(s->role), s->index, (int)s->pid,
		       state_name(s, (int)s->state, st, sizeof(st)),
		       s->wall_ns ? 100.0 * (double)top_work_ns(s) / (double)s->wall_ns : 0.0,
		       c >= 0 ? (unsigned long long)s->counters[c] : 0ull,
		       mh >= 0 ? fmt_ns(stats_hist_percentile(s, (uint32_t)mh, 0.5), b1, sizeof(b1)) : "-",
		       mh >= 0 ? fmt_ns(stats_hist_percentile(s, (uint32_t)mh, 0.99), b2, sizeof(b2)) : "-",
		       fmt_bytes(t->p[i].rss_bytes, b3, sizeof(b3)), s->generation ? s->generation - 1 : 0);
	}
}

static void top_usage(FILE *f)
{
	fputs("usage: cuzk-top [--instance NAME] [--run-dir DIR] [-d SECONDS] [--once [--json]]\n"
	      "  live view of a cuzkd instance's stats page (mapped read-only)\n"
	      "  -d SECONDS   refresh interval (default 1)\n"
	      "  --once       print one snapshot and exit (--json: the schema in README.md)\n"
	      "  keys: q quit, p pause, s sort (slot/util/rate), h help\n"
	      "exit codes: 0 ok, 2 usage, 20 (--once) no such instance running\n", f);
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
		{ "help", no_argument, NULL, 'h' },
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
				return 2;
			}
			break;
		case 'o': o.once = 1; break;
		case 'j': o.json = 1; break;
		case 'f': o.max_frames = atoi(optarg); break;
		case 'h': top_usage(stdout); return 0;
		default: top_usage(stderr); return 2;
		}
	}
	if (optind != argc || (o.json && !o.once)) {
		top_usage(stderr);
		return 2;
	}
	if (o.once) {
		struct top_snap t;
		int found;

		if (top_snap_take(&t, o.instance))
			return 1;
		if (o.json)
			top_print_json(stdout, &t);
		else
			print_once_text(&t);
		found = t.found;
		top_snap_free(&t);
		return found ? 0 : 20;
	}
	return run_live(&o);
}
