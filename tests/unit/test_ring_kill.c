/* test_ring_kill.c — a process killed at any instruction of ring_try_push or
 * ring_try_pop never blocks the ring for anyone else (shm/ring.c, "Surviving kill -9").
 *
 * A random kill -9 lands inside a ring call too rarely to test by chance (a TSan build,
 * which makes the call longer, found the old hole: a consumer killed between its tail
 * CAS and its cell store left the cell claimed, and one lap later every push failed).
 * So the victim runs under ptrace: for every n from 0 to the length of its whole call,
 * a fresh victim runs to a breakpoint at the entry of its call, is single-stepped n
 * instructions and then killed with SIGKILL, and the parent checks the ring it leaves: the values still in it come out in order, the
 * victim's own value at most once, and three full laps of fill and drain work. */
#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include "shm/ring.h"

#include "helper_test.h"

#define CAP          4
#define START        (UINT64_MAX - 5) /* the victim's position is near the 2^64 wrap too */
#define VICTIM_VALUE 777u
#define NO_PTRACE    99 /* the victim's exit status when PTRACE_TRACEME is refused */

enum op { OP_PUSH, OP_POP };

static struct ring *r;
static unsigned long long entry_sp; /* the victim's stack pointer at the call's entry */

static void ring_setup(void)
{
    size_t sz = ring_size_bytes(CAP);

    r = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne(r, MAP_FAILED);
}

static void ring_teardown(void)
{
    munmap(r, ring_size_bytes(CAP));
}

/* A child that stops itself under ptrace, then makes one ring call and exits. Returns
 * its pid stopped at the first instruction of that call (a breakpoint planted in the
 * child's copy of the code, so steps are not spent in raise's return path), or -1 if
 * this machine refuses ptrace. x86-64 only, as the ring is (cmpxchg16b). */
static pid_t victim_start(enum op op)
{
    uintptr_t entry = op == OP_PUSH ? (uintptr_t)ring_try_push : (uintptr_t)ring_try_pop;
    struct user_regs_struct regs;
    pid_t pid = fork();
    long word;
    int st;

    ck_assert_int_ge(pid, 0);
    if (!pid) {
        uint32_t v;

        if (ptrace(PTRACE_TRACEME, 0, NULL, NULL)) _exit(NO_PTRACE);
        raise(SIGSTOP);
        if (op == OP_PUSH)
            ring_try_push(r, VICTIM_VALUE);
        else
            ring_try_pop(r, &v);
        _exit(0);
    }
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    if (WIFEXITED(st) && WEXITSTATUS(st) == NO_PTRACE) return -1;
    ck_assert_msg(WIFSTOPPED(st), "victim did not stop (status %#x)", st);
    errno = 0;
    word = ptrace(PTRACE_PEEKTEXT, pid, (void *)entry, NULL);
    ck_assert_int_eq(errno, 0);
    ck_assert_int_eq(ptrace(PTRACE_POKETEXT, pid, (void *)entry, (void *)((word & ~0xffL) | 0xcc)),
                     0); /* int3 */
    ck_assert_int_eq(ptrace(PTRACE_CONT, pid, NULL, NULL), 0);
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert_msg(WIFSTOPPED(st) && WSTOPSIG(st) == SIGTRAP,
                  "victim missed the "
                  "breakpoint (status %#x)",
                  st);
    ck_assert_int_eq(ptrace(PTRACE_POKETEXT, pid, (void *)entry, (void *)word), 0);
    ck_assert_int_eq(ptrace(PTRACE_GETREGS, pid, NULL, &regs), 0);
    ck_assert_uint_eq(regs.rip, entry + 1);
    regs.rip = entry;
    ck_assert_int_eq(ptrace(PTRACE_SETREGS, pid, NULL, &regs), 0);
    entry_sp = regs.rsp; /* pointing at the return address */
    return pid;
}

/* Single-step the stopped victim up to n instructions, then kill it with SIGKILL and
 * reap it. Returns how many steps the call took if it returned within the n (its stack
 * pointer rose above the entry's: the return address was popped), else -1. */
static long victim_step_kill(pid_t pid, long n)
{
    struct user_regs_struct regs;
    long ran = -1;
    int st;

    for (long i = 0; i < n; i++) {
        ck_assert_int_eq(ptrace(PTRACE_SINGLESTEP, pid, NULL, NULL), 0);
        ck_assert_int_eq(waitpid(pid, &st, 0), pid);
        ck_assert_msg(WIFSTOPPED(st), "victim left its call unexpectedly (%#x)", st);
        ck_assert_int_eq(ptrace(PTRACE_GETREGS, pid, NULL, &regs), 0);
        if (regs.rsp > entry_sp) {
            ran = i + 1;
            break;
        }
    }
    kill(pid, SIGKILL);
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    return ran;
}

/* The ring the victim meets: two values queued (so a pop has something to take, and a
 * push lands behind them). */
static void ring_prepare(void)
{
    ck_assert_int_eq(ring_init_at(r, CAP, START), 0);
    ck_assert_int_eq(ring_try_push(r, 1), 0);
    ck_assert_int_eq(ring_try_push(r, 2), 0);
}

/* After the victim: what is left comes out in order, the victim's value (a push) at
 * most once and last, a taken value (a pop) at most the first; then the ring holds
 * exactly CAP for three laps. Any cell left claimed by the dead makes a push or a pop
 * fail here. */
static void ring_check(enum op op, long n)
{
    uint32_t got[CAP + 1], v, next = 100;
    int k = 0;

    while (k <= CAP && ring_try_pop(r, &v) == 0) got[k++] = v;
    if (op == OP_PUSH) {
        ck_assert_msg(k == 2 || k == 3, "kill after %ld steps of push: %d values left", n, k);
        ck_assert_msg(got[0] == 1 && got[1] == 2,
                      "kill after %ld steps of push: order "
                      "%u %u",
                      n, got[0], got[1]);
        if (k == 3) ck_assert_uint_eq(got[2], VICTIM_VALUE);
    } else {
        ck_assert_msg(k == 1 || k == 2, "kill after %ld steps of pop: %d values left", n, k);
        ck_assert_msg(got[k - 1] == 2 && (k == 1 || got[0] == 1),
                      "kill after %ld steps of pop: wrong values left", n);
    }
    for (int lap = 0; lap < 3; lap++) {
        for (uint32_t i = 0; i < CAP; i++)
            ck_assert_msg(ring_try_push(r, next + i) == 0,
                          "kill after %ld steps of %s: "
                          "push %u of %u refused (a cell is held by the dead)",
                          n, op == OP_PUSH ? "push" : "pop", i + 1, CAP);
        ck_assert_int_eq(ring_try_push(r, 9), -EAGAIN);
        for (uint32_t i = 0; i < CAP; i++) {
            ck_assert_msg(ring_try_pop(r, &v) == 0,
                          "kill after %ld steps of %s: pop %u "
                          "of %u found nothing",
                          n, op == OP_PUSH ? "push" : "pop", i + 1, CAP);
            ck_assert_uint_eq(v, next + i);
        }
        ck_assert_int_eq(ring_try_pop(r, &v), -EAGAIN);
        next += CAP;
    }
}

/* Kill the victim after 0, 1, 2, ... instructions from the entry of its call until it
 * gets through the call; check the ring after each. Returns the steps of the call. */
static long kill_at_every_step(enum op op)
{
    long n, ran;

    for (n = 0;; n++) {
        pid_t pid;

        ring_prepare();
        pid = victim_start(op);
        ck_assert_int_gt(pid, 0);
        ran = victim_step_kill(pid, n);
        ring_check(op, n);
        if (ran >= 0) break;
        ck_assert_msg(n < 100000, "victim never returned from its call");
    }
    return n;
}

TEST(test_push_killed_at_every_instruction, 1)
{
    long n = kill_at_every_step(OP_PUSH);

    fprintf(stderr, "push: killed at each of %ld instructions\n", n);
}
END_TEST

TEST(test_pop_killed_at_every_instruction, 1)
{
    long n = kill_at_every_step(OP_POP);

    fprintf(stderr, "pop: killed at each of %ld instructions\n", n);
}
END_TEST

/* Can this process trace a child? (a container may forbid ptrace) */
static int ptrace_allowed(void)
{
    pid_t pid = fork();
    int st;

    if (pid < 0) return 0;
    if (!pid) {
        if (ptrace(PTRACE_TRACEME, 0, NULL, NULL)) _exit(NO_PTRACE);
        raise(SIGSTOP);
        _exit(0);
    }
    if (waitpid(pid, &st, 0) != pid) return 0;
    if (WIFEXITED(st)) return 0;
    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
    return 1;
}

int main(void)
{
    const char *san = getenv("CUZK_SANITIZER");
    const struct test_opts o = { .setup = ring_setup, .teardown = ring_teardown, .timeout = 300 };

    if (san && !strcmp(san, "tsan")) {
        printf("SKIP: fork and ptrace under TSan (the ring's thread tests cover TSan)\n");
        return 77;
    }
    if (!ptrace_allowed()) {
        printf("SKIP: this machine does not let a process trace its child (ptrace)\n");
        return 77;
    }
    return test_main("ring_kill", &o);
}
