/* copies.h — cuzkd's private copies of the files a client passes (supervisor/copies.c).
 *
 * A client passes its inputs (zkey, witnesses, r1cs) as open descriptors over
 * SCM_RIGHTS (control.h). cuzkd never maps or hands on the client's own descriptor:
 * it copies the file's bytes with read calls into a memfd it owns, seals the memfd
 * (no shrink, grow or write, ever), and the stages map that (pipeline.h, "Inputs by
 * descriptor"). Why a copy and not the client's descriptor:
 *   - a mapping of a file the client can still write dies of SIGBUS when the client
 *     truncates it (issue 16 item 6: that killed cuzkd, and would push a stage into
 *     poison for everyone's partitions it held); a sealed memfd cannot shrink, and a
 *     read() of a shrinking file only returns short, which fails that one submit;
 *   - the stages run as cuzkd's user: reopening the client's file through /proc would
 *     check cuzkd's rights again (a 0600 witness of alice's would fail), while the
 *     copy is cuzkd's own;
 *   - what is proved is what was checked at submit: rewriting the file afterwards
 *     changes nothing.
 * The price: one copy in memory (shmem, swappable) per distinct zkey or r1cs, kept and
 * shared between jobs (keyed by the client file's dev, inode, size, mtime and ctime:
 * any write changes the ctime, so a rewritten file is copied anew), and one per
 * witness for its job's life. The copy runs in a thread of its own (intake.h), never
 * in cuzkd's event loop: at page-cache speed a large zkey takes about 1 s per 2-4 GB,
 * and a file on a filesystem whose reads can block forever (a FUSE mount the client
 * controls) would hold the loop for good. So the table is shared between threads
 * (one lock, never held during a read), and copies_progress_bind lets the loop see
 * whether a copy still moves (--copy-timeout).
 *
 * Durable copies (a job store that resumes jobs after a cuzkd restart, issue 17):
 * the memfds and the out directory's descriptor die with cuzkd, and the paths in the
 * job table are the client's names, for display only, never to be opened. So with
 * the store on, each copy is also written to STATE_DIR/INSTANCE.copies/ (0700,
 * cuzkd's own, files 0600; copies_dir_open), from the sealed memfd (the bytes that
 * were checked), fsync'd with the directory before the submit is acknowledged
 * (copies_persist). zkey, r1cs and generator copies are named after the client
 * file's identity (control_file_id) and shared between jobs; witness and
 * input.json copies are the job's own (part-TOKEN-I, named and written by the
 * submit's intake thread: intake_persist). A resumed job
 * reopens them by these names, inside that directory (copies_open_durable), and takes
 * fresh memfd copies of them; never a client's path. The out dir is reopened by its
 * recorded path and accepted only if it is the same directory (device, inode) and
 * the recorded peer may still write it (supervisor.c, resume_job).
 */
#ifndef CUZK_COPIES_H
#define CUZK_COPIES_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

struct copy_entry;

struct copies {
    struct copy_entry *e;
    size_t n, cap;
    unsigned keep; /* unreferenced shared copies kept for later jobs (LRU) */
    uint64_t clock;
    uint64_t bytes;       /* in all copies now */
    pthread_mutex_t lock; /* every field above; held for table changes only, never
                           * while a client's file is read */
};

/* keep: how many unreferenced shared copies (zkeys, r1cs) to keep. */
void copies_init(struct copies *c, unsigned keep);
/* Close every copy. Accepts a zeroed c. */
void copies_free(struct copies *c);

/* A reference to a copy of the regular file behind client_fd (the client's open
 * descriptor; only read with pread, never mapped; left open). shared: look for and
 * keep a copy of the same file (zkey, r1cs); else a copy of its own (a witness).
 * what names the file in messages ("zkey", "witness"), display as the client named it.
 * Returns cuzkd's descriptor of the sealed copy (> 2), or a negative errno with err:
 * -EINVAL not a regular file (a FIFO, device, socket or directory is refused before
 * any read: none can block us), -EBADF not open for reading, -ESTALE the file changed
 * while it was copied, -ENOMEM, -EMFILE. Nothing is held on failure. */
int copies_take(struct copies *c, int client_fd, int shared, const char *what, const char *display, char *err,
                size_t errlen);

/* The same, for a file whose size its headers fix (input_bounds.h): want, the size it
 * must have (0: any); one of another size is refused -ESTALE before any read. */
int copies_take_sized(struct copies *c, int client_fd, int shared, uint64_t want, const char *what,
                      const char *display, char *err, size_t errlen);

/* A private copy (as a witness's) of the bytes [off, off + len) of the regular file
 * behind client_fd: one input of a batch, framed in one file (protocol.h,
 * "inputs_batch"). The whole file must be unchanged while the range is read. The
 * same returns as copies_take; -ESTALE also when the range is past the file's end. */
int copies_take_range(struct copies *c, int client_fd, uint64_t off, uint64_t len, const char *what,
                      const char *display, char *err, size_t errlen);

/* Count the bytes this thread's copies_take calls read into *bytes from now on
 * (NULL: stop), so another thread can see a copy that makes no progress. */
void copies_progress_bind(_Atomic uint64_t *bytes);

/* Another reference to copy fd (a preload pins its zkey with one). 0 or -ENOENT. */
int copies_ref(struct copies *c, int fd);
/* Drop one reference; a private copy with none left is closed, a shared one kept
 * (up to keep unreferenced, least recently used closed first). fd <= 0: no-op. */
void copies_put(struct copies *c, int fd);

/* Copies now held. */
size_t copies_count(struct copies *c);
/* Copies now held, and their bytes in *bytes (`cuzk status --json`'s "copies"). */
size_t copies_usage(struct copies *c, uint64_t *bytes);

/* Durable copies (above). Open (creating, 0700) STATE_DIR/INSTANCE.copies: its
 * descriptor, or -errno with err (-EPERM: not ours or open to others). */
int copies_dir_open(const char *state_dir, const char *instance, char *err, size_t errlen);
/* The same for STATE_DIR/INSTANCE.SUFFIX, another directory of cuzkd's alone beside
 * it (".results": the spool dirs of jobs whose proofs go into the store). */
int copies_private_dir(const char *state_dir, const char *instance, const char *suffix, char *err,
                       size_t errlen);
/* Write copy_fd's bytes to dfd/name (temp file 0600, fsync, rename, fsync of dfd).
 * 1: name was there already (complete: only ever renamed in whole), 0 written, or
 * -errno with err (-ENOSPC: "disk full"); nothing is left on failure. */
int copies_persist(int dfd, int copy_fd, const char *name, char *err, size_t errlen);
/* Open dfd/name for reading (a regular file, no symlink, no '/' or leading '.'):
 * a descriptor or -errno. */
int copies_open_durable(int dfd, const char *name);
/* Remove every entry of dfd that keep(arg, name) does not want (temp files always).
 * How many were removed, or -errno. */
int copies_sweep(int dfd, int (*keep)(void *arg, const char *name), void *arg);

#endif
