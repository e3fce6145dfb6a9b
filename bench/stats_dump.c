/* stats_dump.c — one snapshot of an instance's stats page as JSON (for bench/pipeline.sh).
 *
 *   stats_dump --instance NAME
 *
 * Attaches the stats segment read-only (it writes nothing anywhere) and prints, for
 * every slot in use: role, index, pid, generation, current state, wall_ns, the time in
 * each named state (open interval included, so the states sum to wall_ns), the named
 * counters and, per named histogram, count, sum_ns, p50/p99/max as the upper bound of
 * their log2 bucket (stats.h: resolution is a factor of two) and the raw buckets, so
 * that a caller can difference two snapshots. Exit 0, 2 usage, 3 cannot attach. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "shm/shmlayout.h"
#include "shm/stats.h"
#include "shm/stats_reader.h"
#include "base/os.h"

/* Names come from another process's page: print only what is safe in a JSON string. */
static void put_name(const char *s, size_t max)
{
    putchar('"');
    for (size_t i = 0; i < max && s[i]; i++) {
        unsigned char c = (unsigned char)s[i];
        putchar(c >= 0x20 && c < 0x7f && c != '"' && c != '\\' ? c : '?');
    }
    putchar('"');
}

/* "NAME" as the key of an object's member, after a comma unless it is the first. */
static void put_key(int *first, const char *name)
{
    printf("%s", *first ? "" : ",");
    *first = 0;
    put_name(name, STATS_NAME_LEN);
}

/* "NAME":V as a member of an object (put_key). */
static void put_count(int *first, const char *name, uint64_t v)
{
    put_key(first, name);
    printf(":%llu", (unsigned long long)v);
}

static uint64_t hist_max(const struct stats_snapshot *sn, uint32_t h)
{
    for (int b = STATS_HIST_BUCKETS - 1; b > 0; b--)
        if (sn->hists[h].bucket[b]) return b >= 63 ? UINT64_MAX : (1ull << b) - 1;
    return 0;
}

static void dump_slot(uint32_t i, const struct stats_snapshot *sn)
{
    char nb[STATS_NAME_LEN + 1];
    int first = 1;

    printf("{\"slot\":%u,\"role\":\"%s\",\"index\":%u,\"pid\":%d,\"generation\":%u,\"state\":", i,
           stats_role_name(sn->role), sn->index, sn->pid, sn->generation);
    if (sn->state < STATS_MAX_STATES && sn->state_names[sn->state][0])
        put_name(sn->state_names[sn->state], STATS_NAME_LEN);
    else
        printf("\"%u\"", sn->state);
    printf(",\"wall_ns\":%llu,\"states\":{", (unsigned long long)sn->wall_ns);
    for (uint32_t s = 0; s < STATS_MAX_STATES; s++)
        if (sn->state_names[s][0] || sn->state_ns[s])
            put_count(&first, stats_state_name(sn, (int)s, nb, sizeof(nb)), sn->state_ns[s]);
    printf("},\"counters\":{");
    first = 1;
    for (uint32_t c = 0; c < STATS_MAX_COUNTERS; c++)
        if (sn->counter_names[c][0]) put_count(&first, sn->counter_names[c], sn->counters[c]);
    printf("},\"hists\":{");
    first = 1;
    for (uint32_t h = 0; h < STATS_MAX_HISTS; h++) {
        if (!sn->hist_names[h][0]) continue;
        put_key(&first, sn->hist_names[h]);
        printf(
            ":{\"count\":%llu,\"sum_ns\":%llu,\"p50_ns\":%llu,\"p99_ns\":%llu,\"max_ns\":%llu,\"buckets\":[",
            (unsigned long long)sn->hists[h].count, (unsigned long long)sn->hists[h].sum_ns,
            (unsigned long long)stats_hist_percentile(sn, h, 0.50),
            (unsigned long long)stats_hist_percentile(sn, h, 0.99), (unsigned long long)hist_max(sn, h));
        for (uint32_t b = 0; b < STATS_HIST_BUCKETS; b++)
            printf("%s%llu", b ? "," : "", (unsigned long long)sn->hists[h].bucket[b]);
        printf("]}");
    }
    printf("}}");
}

int main(int argc, char **argv)
{
    const char *instance = NULL;
    struct shmlayout_stats st;
    struct stats_snapshot sn;
    char err[256] = "";
    uint64_t now;
    int rc, n = 0;

    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--instance") && i + 1 < argc)
            instance = argv[++i];
        else {
            fprintf(stderr, "usage: stats_dump --instance NAME\n");
            return 2;
        }
    }
    if (!instance) {
        fprintf(stderr, "usage: stats_dump --instance NAME\n");
        return 2;
    }
    rc = shmlayout_stats_attach(&st, instance, SEGMENT_RDONLY, err, sizeof(err));
    if (rc) {
        fprintf(stderr, "stats_dump: instance %s: %s\n", instance, err[0] ? err : strerror(-rc));
        return 3;
    }
    now = os_now_ns();
    printf("{\"instance\":\"%s\",\"now_ns\":%llu,\"slots\":[", instance, (unsigned long long)now);
    for (uint32_t i = 0; i < st.page->slot_count; i++) {
        const struct stats_slot *s = stats_page_slot(st.page, i);
        if (!s || stats_slot_read(s, &sn, now, 1000) != 0 || sn.role == STATS_ROLE_NONE) continue;
        printf("%s", n++ ? ",\n" : "\n");
        dump_slot(i, &sn);
    }
    printf("\n]}\n");
    shmlayout_stats_detach(&st);
    return 0;
}
