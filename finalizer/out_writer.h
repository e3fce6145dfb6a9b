/* out_writer.h — the finalizer's writes of proof files, out of its own process.
 *
 * Writing a partition's <name>.proof.json and .public.json means opening, writing,
 * fsyncing and renaming in the client's out directory: on a hung file system (an NFS
 * server gone, a FUSE server that never answers) any of those calls may never return.
 * Done by the one finalizer, such a call held every other user's job behind it. So each
 * out directory (by device and inode) gets a writer process of its own, fed one
 * partition at a time over a socket; the finalizer hands a partition over and goes on,
 * and a write that does not answer within the deadline (--write-timeout) costs only
 * that directory's partitions: the writer is killed, the try counts, the partition is
 * tried again with a fresh writer up to --max-attempts, then fails with a reason that
 * says so.
 *
 * A process, not a thread: a call stuck on a FUSE request that its server has read
 * but not answered, or on a hard NFS mount, waits uninterruptibly; no signal ends it
 * until the file system answers. A stuck thread would keep the whole finalizer from
 * ever exiting (exit_group waits for every thread), so neither a restart nor cuzkd's
 * shutdown could complete, and cuzkd would never hear the stage end. A stuck process
 * is only itself: it is SIGKILLed (which ends every wait the kernel makes killable:
 * FUSE requests not yet read, most NFS waits), and if it still cannot die it is left
 * behind holding only a directory and a socket, never cuzkd's shared memory (it is
 * started by exec, so it maps nothing of the instance), reaped when it ends
 * or, once the finalizer exits, by whoever inherits it. At most OUT_WRITERS_MAX
 * directories have a process at once.
 *
 * Temp names carry the finalizer's pid (groth16_publish_pair's tag), so cuzkd's
 * clean-up after a dead finalizer finds them as before. */
#ifndef CUZK_OUT_WRITER_H
#define CUZK_OUT_WRITER_H

#include <stddef.h>
#include <stdint.h>

#include "zk/groth16.h"

#define OUT_WRITERS_MAX    32
/* What out_writers_stop hands back: the partition was not written (give it back). */
#define OUT_WRITE_HANDBACK 1

/* One partition's outputs, as the finalizer hands them over. */
struct out_write {
    uint32_t p;            /* the partition (passed back to the done function) */
    const char *odir;      /* the directory to write in (cuzkd's /proc/PID/fd/N) */
    const char *shown_dir; /* the out dir as the client named it (reasons) */
    const char *name;      /* output basename: NAME.proof.json, NAME.public.json */
    uint64_t dev, ino;     /* the directory's identity: one writer per directory */
    uint32_t owner_known;  /* the sticky rule (the writer checks it before writing): */
    uint32_t owner_uid;    /* no other user's file is replaced */
    char *proof_text;      /* groth16_pair_texts; out_writers_submit frees both */
    char *public_text;
};

/* Told once per partition submitted: rc 0 (written; wt: the writer's step times),
 * a negative CUZK_E_* with the reason in err (a path in it is the odir given), or
 * OUT_WRITE_HANDBACK from out_writers_stop. */
typedef void (*out_done_fn)(void *arg, uint32_t p, int rc, const char *err, const groth16_write_times *wt);

struct out_writers;

/* timeout_s 0: no deadline; max_tries: deadlines a partition may miss (at least 1);
 * tag_pid: the pid in temp names; exe: the program to run as `EXE --out-writer PID`
 * (the finalizer's own), NULL: fork without exec (a stage on a test's thread, where
 * this program is the test). NULL when out of memory. */
struct out_writers *out_writers_new(uint32_t timeout_s, uint32_t max_tries, long tag_pid, const char *exe);
/* Queue w for its directory's writer (started when none runs); never blocks. The
 * texts are taken in every case. 0, or a negative CUZK_E_* with err (nothing queued). */
int out_writers_submit(struct out_writers *ws, struct out_write *w, char *err, size_t errlen);
/* Partitions handed over and not yet told. */
uint32_t out_writers_pending(const struct out_writers *ws);
/* Collect answers, enforce deadlines, start writers for queued work, reap: waits at
 * most wait_ms for an answer (0: just looks). Calls fn for each partition decided. */
void out_writers_poll(struct out_writers *ws, int wait_ms, out_done_fn fn, void *arg);
/* The finalizer is stopping: wait up to grace_ms for writes under way, then SIGKILL
 * every writer and hand back (fn with OUT_WRITE_HANDBACK) what was not written. A
 * writer that cannot die yet is not waited for. Frees ws. */
void out_writers_stop(struct out_writers *ws, int grace_ms, out_done_fn fn, void *arg);

/* The writer process: `cuzk-finalizer --out-writer PARENT_PID`, its socket on fd 3.
 * Returns the exit code. */
int out_writer_main(int argc, char **argv);

#endif
