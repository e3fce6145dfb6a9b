/* check.c — `cuzkd --check` (check.h): limits, /dev/shm, huge pages, io_uring, GPUs,
 * NUMA, stage executables, run and state directories and the placement, each with a fix. */
#include "supervisor/check.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <liburing.h>
#include <limits.h>
#include <numa.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/statvfs.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/error.h"
#include "sup.h"

int check_sd_notify(const char *state)
{
    const char *path = getenv("NOTIFY_SOCKET");
    struct sockaddr_un a = { .sun_family = AF_UNIX };
    size_t n;
    socklen_t alen;
    int fd, rc = 1;

    if (!path || !*path) return 0;
    n = strlen(path);
    if ((path[0] != '/' && path[0] != '@') || n >= sizeof(a.sun_path)) return -EINVAL;
    memcpy(a.sun_path, path, n);
    if (path[0] == '@') a.sun_path[0] = '\0'; /* abstract namespace */
    alen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n);
    fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -errno;
    if (sendto(fd, state, strlen(state), MSG_NOSIGNAL, (struct sockaddr *)&a, alen) < 0) rc = -errno;
    close(fd);
    return rc;
}

int check_parse_gpu_list(const char *list, struct plan_driver_gpus *d)
{
    char buf[PIPE_MAX_WORKERS * 20], *save = NULL, *tok;

    memset(d, 0, sizeof(*d));
    if (!list || strlen(list) >= sizeof(buf)) return -EINVAL;
    if (!strcmp(list, "none")) return 0;
    snprintf(buf, sizeof(buf), "%s", list);
    for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (d->n == PIPE_MAX_WORKERS || plan_pci_parse(tok, &d->pci[d->n])) return -EINVAL;
        d->n++;
    }
    return 0;
}

/* The probe itself, in the child of check_driver_gpus. */
static int driver_probe_here(struct plan_driver_gpus *d, char *why, size_t len)
{
    typedef int (*cu_init_t)(unsigned);
    typedef int (*cu_count_t)(int *);
    typedef int (*cu_get_t)(int *, int);
    typedef int (*cu_busid_t)(char *, int, int);
    typedef int (*cu_ename_t)(int, const char **);
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    cu_init_t cu_init;
    cu_count_t cu_count;
    cu_get_t cu_get;
    cu_busid_t cu_busid;
    int n = 0, rc;

    memset(d, 0, sizeof(*d));
    if (!h) {
        snprintf(why, len, "no NVIDIA driver library (libcuda.so.1 not found)");
        return -ENOENT;
    }
    cu_init = (cu_init_t)dlsym(h, "cuInit");
    cu_count = (cu_count_t)dlsym(h, "cuDeviceGetCount");
    cu_get = (cu_get_t)dlsym(h, "cuDeviceGet");
    cu_busid = (cu_busid_t)dlsym(h, "cuDeviceGetPCIBusId");
    if (!cu_init || !cu_count || !cu_get || !cu_busid) {
        snprintf(why, len, "libcuda.so.1 lacks cuInit/cuDeviceGetPCIBusId");
        dlclose(h);
        return -ENOENT;
    }
    if ((rc = cu_init(0)) != 0) {
        cu_ename_t ename = (cu_ename_t)dlsym(h, "cuGetErrorName");
        const char *name = NULL;

        /* 100: CUDA_ERROR_NO_DEVICE — a driver and no GPU is a valid answer */
        if (rc == 100) return 0;
        if (!ename || ename(rc, &name) != 0 || !name) name = "an unnamed CUDA error";
        snprintf(why, len,
                 "cuInit failed with %s (%d): the kernel module is not loaded, "
                 "/dev/nvidia* is not accessible to this user, or the driver does "
                 "not match its kernel module (check nvidia-smi and dmesg)",
                 name, rc);
        return -ENODEV;
    }
    if (cu_count(&n) != 0) n = 0;
    for (int i = 0; i < n && d->n < PIPE_MAX_WORKERS; i++) {
        char bus[32];
        int dev;

        if (cu_get(&dev, i) || cu_busid(bus, sizeof(bus), dev) || plan_pci_parse(bus, &d->pci[d->n]))
            continue;
        d->n++;
    }
    /* The library stays loaded: unloading libcuda after cuInit is not supported. */
    return 0;
}

/* What the child sends back. */
struct driver_probe_msg {
    int rc;
    struct plan_driver_gpus d;
    char why[256];
};

/* The driver is initialised in a short-lived child, never in cuzkd: a process that has
 * called cuInit must not fork without exec (CUDA's rule: the child of such a fork
 * cannot use CUDA, and the parent's context state is undefined in it), and cuzkd forks
 * to daemonize and to start every stage. The child answers through a pipe and exits;
 * cuzkd itself never maps libcuda. */
int check_driver_gpus(struct plan_driver_gpus *d, char *why, size_t len)
{
    struct driver_probe_msg m;
    int pfd[2], status = 0;
    size_t got = 0;
    pid_t pid;

    memset(d, 0, sizeof(*d));
    if (pipe2(pfd, O_CLOEXEC) < 0) {
        snprintf(why, len, "cannot probe the CUDA driver: pipe: %s", strerror(errno));
        return -errno;
    }
    pid = fork();
    if (pid < 0) {
        int e = errno;

        close(pfd[0]);
        close(pfd[1]);
        snprintf(why, len, "cannot probe the CUDA driver: fork: %s", strerror(e));
        return -e;
    }
    if (pid == 0) {
        const char *p = (const char *)&m;
        size_t off = 0;

        close(pfd[0]);
        memset(&m, 0, sizeof(m));
        m.rc = driver_probe_here(&m.d, m.why, sizeof(m.why));
        while (off < sizeof(m)) {
            ssize_t w = write(pfd[1], p + off, sizeof(m) - off);

            if (w < 0 && errno == EINTR) continue;
            if (w <= 0) _exit(1);
            off += (size_t)w;
        }
        _exit(0); /* no atexit handlers, no stdio flush of the parent's buffers */
    }
    close(pfd[1]);
    while (got < sizeof(m)) {
        ssize_t r = read(pfd[0], (char *)&m + got, sizeof(m) - got);

        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        got += (size_t)r;
    }
    close(pfd[0]);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (got != sizeof(m)) {
        snprintf(why, len,
                 "the CUDA driver probe (a child process) died before answering "
                 "(%s %d): the driver may be broken (check nvidia-smi and dmesg)",
                 WIFSIGNALED(status) ? "signal" : "exit",
                 WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
        return -ENODEV;
    }
    if (m.rc) {
        snprintf(why, len, "%s", m.why);
        return m.rc;
    }
    *d = m.d;
    return 0;
}

struct report {
    FILE *f;
    unsigned ok, warn, fail;
};

__attribute__((format(printf, 4, 5))) static void item(struct report *r, const char *level, const char *what,
                                                       const char *fmt, ...)
{
    va_list ap;

    if (!strcmp(level, "ok"))
        r->ok++;
    else if (!strcmp(level, "warn"))
        r->warn++;
    else if (!strcmp(level, "FAIL"))
        r->fail++;
    fprintf(r->f, "%-5s %-10s ", level, what);
    va_start(ap, fmt);
    vfprintf(r->f, fmt, ap);
    va_end(ap);
    fputc('\n', r->f);
}

static void fix(struct report *r, const char *text)
{
    fprintf(r->f, "      %-10s fix: %s\n", "", text);
}

static void human(uint64_t b, char *buf, size_t len)
{
    if (b >= (10ull << 30))
        snprintf(buf, len, "%llu GiB", (unsigned long long)(b >> 30));
    else
        snprintf(buf, len, "%llu MiB", (unsigned long long)(b >> 20));
}

static int read_line(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "re");

    if (!f) return -errno;
    if (!fgets(buf, (int)len, f)) buf[0] = '\0';
    fclose(f);
    buf[strcspn(buf, "\n")] = '\0';
    return 0;
}

static void check_memlock(struct report *r, uint64_t need)
{
    struct rlimit rl;
    char a[32], b[32];

    human(need, a, sizeof(a));
    if (getrlimit(RLIMIT_MEMLOCK, &rl)) {
        item(r, "warn", "memlock", "getrlimit: %s", strerror(errno));
        return;
    }
    if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= need) {
        if (rl.rlim_cur == RLIM_INFINITY)
            snprintf(b, sizeof(b), "unlimited");
        else
            human(rl.rlim_cur, b, sizeof(b));
        item(r, "ok", "memlock", "limit %s; the buffers need %s", b, a);
        return;
    }
    human(rl.rlim_cur, b, sizeof(b));
    item(r, "warn", "memlock",
         "limit %s is below the %s of buffers: they will not be "
         "locked (pageable; DMA from them is slower and they may be swapped)",
         b, a);
    fix(r,
        "LimitMEMLOCK=infinity in the unit (the installed cuzkd.service has it); by hand: "
        "ulimit -l unlimited, or a memlock line in /etc/security/limits.conf");
}

static void check_shm(struct report *r, uint64_t need)
{
    struct statvfs v;
    char a[32], b[32];
    uint64_t avail;

    human(need, a, sizeof(a));
    if (statvfs("/dev/shm", &v)) {
        item(r, "FAIL", "/dev/shm", "%s: the segments live there", strerror(errno));
        fix(r, "mount a tmpfs on /dev/shm (mount -t tmpfs -o size=SIZE tmpfs /dev/shm)");
        return;
    }
    avail = (uint64_t)v.f_bavail * v.f_frsize;
    human(avail, b, sizeof(b));
    if (avail >= need) {
        item(r, "ok", "/dev/shm", "%s free; the data segment needs about %s", b, a);
        return;
    }
    item(r, "FAIL", "/dev/shm",
         "%s free, the data segment needs about %s: cuzkd would fail "
         "to create it (or be killed by SIGBUS when it fills)",
         b, a);
    fix(r,
        "mount -o remount,size=<more>G /dev/shm (and the same in /etc/fstab), or lower "
        "buffers / buffer-mb");
}

static void check_huge(struct report *r)
{
    char line[256], *a, *b;
    FILE *f;
    unsigned long total = 0, freep = 0;

    if (read_line("/sys/kernel/mm/transparent_hugepage/shmem_enabled", line, sizeof(line))) {
        item(r, "warn", "hugepages",
             "no transparent huge pages in this kernel: buffers use "
             "4 KiB pages");
        fix(r, "a kernel with CONFIG_TRANSPARENT_HUGEPAGE (any current distribution kernel)");
        return;
    }
    a = strchr(line, '[');
    b = a ? strchr(a, ']') : NULL;
    if (a && b) *b = '\0';
    f = fopen("/proc/meminfo", "re");
    if (f) {
        char l[256];

        while (fgets(l, sizeof(l), f)) {
            sscanf(l, "HugePages_Total: %lu", &total);
            sscanf(l, "HugePages_Free: %lu", &freep);
        }
        fclose(f);
    }
    if (a &&
        (!strcmp(a + 1, "always") || !strcmp(a + 1, "advise") || !strcmp(a + 1, "within_size") ||
         !strcmp(a + 1, "force"))) {
        item(r, "ok", "hugepages",
             "shmem THP \"%s\": buffers get huge pages (reserved "
             "hugetlb pages: %lu, %lu free; cuzk does not need them)",
             a + 1, total, freep);
        return;
    }
    item(r, "warn", "hugepages",
         "shmem THP is \"%s\": buffers get 4 KiB pages (more TLB "
         "misses, slower cudaHostRegister); reserved hugetlb pages: %lu",
         a ? a + 1 : line, total);
    fix(r,
        "echo advise > /sys/kernel/mm/transparent_hugepage/shmem_enabled (at boot: a "
        "tmpfiles.d line, or transparent_hugepage_shmem=advise on kernels >= 6.14)");
}

static void check_uring(struct report *r)
{
    struct io_uring ring;
    char dis[32] = "";
    int rc = io_uring_queue_init(4, &ring, 0);

    read_line("/proc/sys/kernel/io_uring_disabled", dis, sizeof(dis));
    if (!rc) {
        io_uring_queue_exit(&ring);
        item(r, "ok", "io_uring", "allowed (kernel.io_uring_disabled=%s)", dis[0] ? dis : "absent");
        return;
    }
    item(r, "FAIL", "io_uring",
         "blocked: io_uring_setup: %s (kernel.io_uring_disabled=%s); "
         "cuzkd's event loop needs it",
         strerror(-rc), dis[0] ? dis : "absent");
    fix(r,
        "sysctl kernel.io_uring_disabled=0 (or =1 with cuzk's group in "
        "kernel.io_uring_group); in a container, allow io_uring_setup/enter/register in "
        "its seccomp profile");
}

static void check_gpus(struct report *r, const struct cuzkd_config *c, struct plan_driver_gpus *drv,
                       int *have_drv)
{
    char why[256];
    int cuda = c->dev_kind == CONFIG_DEV_CUDA, rc;

#ifdef CUZK_HAVE_CUDA
    const char *built = "built with the CUDA backend";
#else
    const char *built = "built without the CUDA backend";
#endif
    *have_drv = 0;
    if (c->driver_gpus[0]) {
        rc = check_parse_gpu_list(c->driver_gpus, drv);
        *have_drv = !rc;
        item(r, "ok", "gpus", "%u GPU(s) given by --driver-gpus (tests); %s", drv->n, built);
        return;
    }
    rc = check_driver_gpus(drv, why, sizeof(why));
    if (rc) {
        item(r, cuda ? "FAIL" : "ok", "gpus", "%s; %s%s", why, built,
             cuda ? "" : " (devices cpu:N: GPUs not needed)");
        if (cuda)
            fix(r,
                "install the NVIDIA driver (nvidia-smi must list the GPUs), or use "
                "devices = cpu:N");
        return;
    }
    *have_drv = 1;
    if (!drv->n) {
        item(r, cuda ? "FAIL" : "ok", "gpus", "the CUDA driver lists no GPU; %s", built);
        if (cuda) fix(r, "check nvidia-smi and CUDA_VISIBLE_DEVICES, or use devices = cpu:N");
        return;
    }
    for (uint32_t i = 0; i < drv->n; i++)
        fprintf(r->f, "      %-10s cuda:%u at PCI %04x:%02x:%02x.%x\n", "", i, drv->pci[i].domain,
                drv->pci[i].bus, drv->pci[i].dev, drv->pci[i].func);
    item(r, "ok", "gpus", "the CUDA driver lists %u GPU(s); %s", drv->n, built);
}

static void check_bins(struct report *r, const struct cuzkd_config *c)
{
    static const char *const bins[] = { "cuzk-synth", "cuzk-gpuworker", "cuzk-finalizer" };
    char dir[PATH_MAX], exe[PATH_MAX], path[PATH_MAX + 32];
    int missing = 0;

    if (c->bin_dir[0]) {
        snprintf(dir, sizeof(dir), "%s", c->bin_dir);
    } else {
        ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

        exe[n > 0 ? n : 0] = '\0';
        snprintf(dir, sizeof(dir), "%s", n > 0 ? dirname(exe) : ".");
    }
    for (size_t i = 0; i < sizeof(bins) / sizeof(bins[0]); i++) {
        snprintf(path, sizeof(path), "%s/%s", dir, bins[i]);
        if (access(path, X_OK)) {
            item(r, "FAIL", "stages", "%s: %s", path, strerror(errno));
            missing++;
        }
    }
    if (missing)
        fix(r, "make install (the stages go next to cuzkd), or bin-dir = DIR");
    else
        item(r, "ok", "stages", "cuzk-synth, cuzk-gpuworker, cuzk-finalizer in %s", dir);
}

/* The nearest folder of path that exists (path itself, or a parent): whether cuzkd
 * could create path is whether it may write there. dirname works on a copy, as it
 * may write into its argument and return a pointer into it. */
static void nearest_existing(const char *path, char *out, size_t len)
{
    char parent[PROTO_PATH_MAX];

    snprintf(out, len, "%s", path);
    while (access(out, F_OK) && strcmp(out, "/") && strcmp(out, ".")) {
        snprintf(parent, sizeof(parent), "%s", out);
        snprintf(out, len, "%s", dirname(parent));
    }
}

/* Whether cuzkd could create and write dir, the config's key: "can be created" or "is
 * writable"; NULL after a FAIL item whose fix names the unit's directive that makes it
 * (the installed cuzkd.service has both) and the alternatives. */
static const char *dir_writable(struct report *r, const char *key, const char *dir, const char *directive,
                                const char *or_else)
{
    char d[PROTO_PATH_MAX], text[256];

    nearest_existing(dir, d, sizeof(d));
    if (!access(d, W_OK | X_OK)) return strcmp(d, dir) ? "can be created" : "is writable";
    item(r, "FAIL", key, "%s: %s is not writable by this user", dir, d);
    snprintf(text, sizeof(text),
             "%s=cuzk in the unit (the installed cuzkd.service has it), or %s = a directory this user owns%s",
             directive, key, or_else);
    fix(r, text);
    return NULL;
}

static void check_run_dir(struct report *r, const struct cuzkd_config *c)
{
    const char *how = dir_writable(r, "run-dir", c->run_dir, "RuntimeDirectory", "");

    if (how) item(r, "ok", "run-dir", "%s %s", c->run_dir, how);
}

/* The job store's directory (store.h): cuzkd refuses to start without it. */
static void check_state_dir(struct report *r, const struct cuzkd_config *c)
{
    char db[PROTO_PATH_MAX + 80];
    const char *how;

    if (c->no_store) {
        item(r, "warn", "state-dir",
             "no-store: jobs live in memory only; a cuzkd that dies "
             "(kill -9, OOM, power loss) loses them");
        return;
    }
    if (!(how = dir_writable(r, "state-dir", c->state_dir, "StateDirectory", ", or no-store"))) return;
    snprintf(db, sizeof(db), "%s/%s.db", c->state_dir, c->instance);
    item(r, "ok", "state-dir", "%s %s; job store %s%s", c->state_dir, how, db,
         access(db, F_OK) ? " (new)" : " (jobs in it are resumed at start)");
}

/* Each declared circuit opened as cuzkd would at start (catalog.c): its facts, or why
 * it would be listed failed and refuse its jobs. */
static void check_circuits(struct report *r, const struct cuzkd_config *c)
{
    struct cat_entry *e = malloc(sizeof(*e));

    for (uint32_t i = 0; e && i < c->n_circuits; i++) {
        catalog_entry_open(c, e, &c->circuits[i]);
        if (e->error[0]) {
            item(r, "FAIL", "circuit", "%s: %s", c->circuits[i].name, e->error);
            fix(r, "correct its section (or circuits-dir entry), then cuzk reload");
        } else
            item(r, "ok", "circuit", "%s: %s, %u constraints, %u public input(s), fingerprint %.16s...%s",
                 c->circuits[i].name, e->curve, e->constraints, e->npublic, e->fp,
                 c->circuits[i].wgen[0] ? ", with its witness generator" : "");
        catalog_entry_close(e);
    }
    free(e);
}

int check_run(const struct cuzkd_config *c, FILE *f)
{
    struct report r = { .f = f };
    struct plan_driver_gpus drv;
    static struct plan p;
    hwloc_topology_t topo;
    char err[1024], a[32];
    uint64_t need = (uint64_t)c->buffers * config_buf_bytes(c);
    int have_drv, rc;

    human(need, a, sizeof(a));
    fprintf(f, "cuzkd --check: instance \"%s\", devices %s, %u buffer(s) of %u MiB (%s)\n", c->instance,
            c->devices, c->buffers, c->buffer_mb, a);
    check_memlock(&r, need);
    check_shm(&r, need + (64ull << 20));
    check_huge(&r);
    check_uring(&r);
    check_gpus(&r, c, &drv, &have_drv);
    if (numa_available() < 0)
        item(&r, "ok", "numa", "the kernel reports no NUMA (one node assumed)");
    else
        item(&r, "ok", "numa", "%d NUMA node(s) (libnuma)", numa_max_node() + 1);
    check_bins(&r, c);
    check_run_dir(&r, c);
    check_state_dir(&r, c);
    check_circuits(&r, c);

    if (plan_topology_load(&topo, c->topology, c->synthetic, err, sizeof(err))) {
        item(&r, "FAIL", "placement", "%s", err);
    } else {
        int cuda = c->dev_kind == CONFIG_DEV_CUDA;

        rc = plan_compute_with(topo, c, cuda && have_drv ? &drv : NULL, &p, err, sizeof(err));
        hwloc_topology_destroy(topo);
        if (rc) {
            item(&r, cuda ? "FAIL" : "warn", "placement", "%s", err);
        } else {
            item(&r, p.n_warn ? "warn" : "ok", "placement",
                 "%u worker(s), %u synth, 1 "
                 "finalizer on %u node(s)%s:",
                 p.n_workers, p.n_synth, p.n_nodes, p.shared ? " (cores shared)" : "");
            plan_print(f, &p);
        }
    }
    fprintf(f, "check: %u ok, %u warning(s), %u failure(s)\n", r.ok, r.warn, r.fail);
    return r.fail ? CUZK_EXIT_FALSE : CUZK_EXIT_OK;
}
