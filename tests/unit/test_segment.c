/* test_segment.c — named segments: create/attach/destroy and every refusal. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "shm/segment.h"
#include "shm/shmlayout.h"

#include "helper_test.h"

static char inst[64];
static char err[512];

static void setup(void)
{
    snprintf(inst, sizeof(inst), "t%d", (int)getpid());
    err[0] = 0;
}

static void teardown(void)
{
    segment_destroy(inst, SEG_KIND_DATA);
    segment_destroy(inst, SEG_KIND_STATS);
}

static void make_segment(void)
{
    struct segment s;

    ck_assert_int_eq(segment_create(&s, inst, SEG_KIND_DATA, 3 * 4096, 0600, 0, err, sizeof(err)), 0);
    ck_assert_int_eq(segment_region_add(&s, "r", 4096, 4096), 0);
    segment_publish(&s);
    segment_detach(&s);
}

/* Open the segment's file and let f edit its header. */
static void poke(void (*f)(int fd, struct seg_header *h))
{
    char path[128];
    int fd;
    struct seg_header *h;

    snprintf(path, sizeof(path), "/cuzk-%s.data", inst);
    fd = shm_open(path, O_RDWR, 0);
    ck_assert_int_ge(fd, 0);
    h = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    ck_assert_ptr_ne(h, MAP_FAILED);
    f(fd, h);
    munmap(h, 4096);
    close(fd);
}

TEST(test_segment_round_trip_header_and_regions, 1)
{
    struct segment a;
    const struct seg_region *r;

    make_segment();
    ck_assert_int_eq(segment_attach(&a, inst, SEG_KIND_DATA, 0, err, sizeof(err)), 0);
    ck_assert_uint_eq(a.hdr->abi_version, SEG_ABI_VERSION);
    ck_assert_int_eq(a.hdr->creator_pid, getpid());
    ck_assert_str_eq(a.hdr->instance, inst);
    ck_assert_uint_gt(a.hdr->created_mono_ns, 0);
    ck_assert_uint_eq(a.size, 3 * 4096);
    r = segment_region_find(&a, "r");
    ck_assert_ptr_nonnull(r);
    ck_assert_uint_eq(r->offset, 4096);
    ck_assert_ptr_null(segment_region_find(&a, "nope"));
    segment_detach(&a);
    segment_detach(&a); /* idempotent */
}
END_TEST

TEST(test_segment_create_refuses_existing_and_bad_names, 1)
{
    struct segment s;

    make_segment();
    ck_assert_int_eq(segment_create(&s, inst, SEG_KIND_DATA, 8192, 0600, 0, err, sizeof(err)), -EEXIST);
    ck_assert_ptr_nonnull(strstr(err, "already exists"));
    ck_assert_int_eq(segment_create(&s, inst, SEG_KIND_DATA, 8192, 0600, SEGMENT_REPLACE, err, sizeof(err)),
                     0);
    segment_detach(&s);
    ck_assert_int_eq(segment_create(&s, "../etc", SEG_KIND_DATA, 8192, 0600, 0, err, sizeof(err)), -EINVAL);
    ck_assert_int_eq(segment_create(&s, "", SEG_KIND_DATA, 8192, 0600, 0, err, sizeof(err)), -EINVAL);
}
END_TEST

TEST(test_segment_attach_missing_names_it, 1)
{
    struct segment s;

    ck_assert_int_eq(segment_attach(&s, inst, SEG_KIND_DATA, 0, err, sizeof(err)), -ENOENT);
    ck_assert_ptr_nonnull(strstr(err, "cuzk-"));
    ck_assert_ptr_nonnull(strstr(err, "does not exist"));
}
END_TEST

static void set_abi3(int fd, struct seg_header *h)
{
    (void)fd;
    h->abi_version = 3;
}

TEST(test_segment_attach_refuses_other_abi_version, 1)
{
    struct segment s;
    char want[128];

    make_segment();
    poke(set_abi3);
    ck_assert_int_eq(segment_attach(&s, inst, SEG_KIND_DATA, 0, err, sizeof(err)), -EPROTO);
    snprintf(want, sizeof(want), "segment cuzk-%s.data: ABI version 3, this build expects %u", inst,
             SEG_ABI_VERSION);
    ck_assert_msg(strstr(err, want), "message: %s", err);
}
END_TEST

static void truncate_it(int fd, struct seg_header *h)
{
    (void)h;
    ck_assert_int_eq(ftruncate(fd, 2 * 4096), 0);
}

static void truncate_hard(int fd, struct seg_header *h)
{
    (void)h;
    ck_assert_int_eq(ftruncate(fd, 100), 0);
}

TEST(test_segment_attach_refuses_truncated, 1)
{
    struct segment s;

    make_segment();
    poke(truncate_it);
    ck_assert_int_eq(segment_attach(&s, inst, SEG_KIND_DATA, 0, err, sizeof(err)), -EBADMSG);
    ck_assert_msg(strstr(err, "truncated") && strstr(err, "8192") && strstr(err, "12288"), "message: %s",
                  err);
    poke(truncate_hard);
    ck_assert_int_eq(segment_attach(&s, inst, SEG_KIND_DATA, 0, err, sizeof(err)), -EBADMSG);
    ck_assert_msg(strstr(err, "truncated: 100 bytes"), "message: %s", err);
}
END_TEST

TEST(test_segment_attach_refuses_foreign_file, 1)
{
    struct segment s;
    char path[128];
    int fd;

    snprintf(path, sizeof(path), "/cuzk-%s.data", inst);
    fd = shm_open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(ftruncate(fd, 8192), 0);
    ck_assert_int_eq(pwrite(fd, "#!/bin/sh\necho hello\n", 21, 0), 21);
    close(fd);
    ck_assert_int_eq(segment_attach(&s, inst, SEG_KIND_DATA, 0, err, sizeof(err)), -EINVAL);
    ck_assert_msg(strstr(err, "not a cuzk segment"), "message: %s", err);
}
END_TEST

TEST(test_segment_attach_refuses_unpublished, 1)
{
    struct segment c, a;

    ck_assert_int_eq(segment_create(&c, inst, SEG_KIND_DATA, 8192, 0600, 0, err, sizeof(err)), 0);
    ck_assert_int_eq(segment_attach(&a, inst, SEG_KIND_DATA, 0, err, sizeof(err)), -EAGAIN);
    segment_publish(&c);
    ck_assert_int_eq(segment_attach(&a, inst, SEG_KIND_DATA, 0, err, sizeof(err)), 0);
    segment_detach(&a);
    segment_detach(&c);
}
END_TEST

TEST(test_segment_readonly_mapping_faults_on_write, 1)
{
    struct shmlayout_stats w, r;
    pid_t pid;
    int st;

    ck_assert_int_eq(shmlayout_stats_create(&w, inst, 4, 0, err, sizeof(err)), 0);
    ck_assert_int_eq(shmlayout_stats_attach(&r, inst, SEGMENT_RDONLY, err, sizeof(err)), 0);
    ck_assert_int_eq(r.page->slot_count, 4);
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        /* Raw syscall: sanitizers intercept signal() and keep their own handler. */
        struct {
            void *h;
            unsigned long flags;
            void *restorer;
            uint64_t mask;
        } ka = { (void *)SIG_DFL, 0, NULL, 0 };
        syscall(SYS_rt_sigaction, SIGSEGV, &ka, NULL, 8);
        *(volatile uint32_t *)&r.page->slot_count = 99; /* must fault */
        _exit(0);
    }
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert_msg(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV, "child was not killed by SIGSEGV (status 0x%x)",
                  st);
    ck_assert_int_eq(w.page->slot_count, 4);
    shmlayout_stats_detach(&r);
    shmlayout_stats_detach(&w);
}
END_TEST

TEST(test_segment_layout_views_match_after_attach, 1)
{
    struct shmlayout_config cfg = { .n_rings = 3,
                                    .ring_capacity = { 4, 64, 1 },
                                    .max_jobs = 4,
                                    .max_parts = 32,
                                    .buf_count = 6,
                                    .buf_size = 5000 };
    struct shmlayout_data c, a;
    uint32_t v;

    ck_assert_int_eq(shmlayout_data_create(&c, inst, &cfg, 0, err, sizeof(err)), 0);
    ck_assert_int_eq(shmlayout_data_attach(&a, inst, err, sizeof(err)), 0);
    ck_assert_uint_eq(a.n_rings, 3);
    ck_assert_uint_eq(a.rings[1]->capacity, 64);
    ck_assert_uint_eq(a.pool.hdr->buf_count, 6);
    ck_assert_uint_eq(a.pool.hdr->buf_size % 4096, 0);
    ck_assert_uint_eq((uintptr_t)pool_buf_ptr(&a.pool, 1) % 4096, 0);
    ck_assert_uint_eq(a.jobtab.hdr->max_parts, 32);
    /* Different addresses, same memory. */
    ck_assert_int_eq(ring_try_push(c.rings[1], 77), 0);
    ck_assert_int_eq(ring_try_pop(a.rings[1], &v), 0);
    ck_assert_uint_eq(v, 77);
    shmlayout_data_detach(&a);
    shmlayout_data_detach(&c);
    cfg.ring_capacity[1] = 3;
    ck_assert_int_eq(shmlayout_data_create(&c, inst, &cfg, SEGMENT_REPLACE, err, sizeof(err)), -EINVAL);
}
END_TEST

int main(void)
{
    const struct test_opts o = { .setup = setup, .teardown = teardown };

    return test_main("segment", &o);
}
