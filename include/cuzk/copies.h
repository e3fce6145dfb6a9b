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
 * witness for its job's life. The copy runs in cuzkd's event loop: at page-cache
 * speed (about 1 s per 2-4 GB), a first submit of a large zkey holds the loop that
 * long. A file on a filesystem whose reads can block forever (a FUSE mount the client
 * controls) would hold it too: not covered yet.
 *
 * The job store (store.h) resumes jobs after a cuzkd restart, when these copies and
 * the out directory's descriptor are gone. The paths in a request are the client's
 * names, not checked against what it passed, so resume_job (supervisor.c) reopens a
 * path only while it still names the file passed (control_file_id, recorded at
 * submit), copies it again, and otherwise fails the job's unfinished partitions. A
 * file rewritten or moved since its submit cannot be resumed; keeping the copies in a
 * directory only cuzkd can write would let it resume those too (not done).
 */
#ifndef CUZK_COPIES_H
#define CUZK_COPIES_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct copy_entry;

struct copies {
	struct copy_entry *e;
	size_t n, cap;
	unsigned keep;        /* unreferenced shared copies kept for later jobs (LRU) */
	uint64_t clock;
	uint64_t bytes;       /* in all copies now */
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
int copies_take(struct copies *c, int client_fd, int shared, const char *what,
		const char *display, char *err, size_t errlen);

/* Another reference to copy fd (a preload pins its zkey with one). 0 or -ENOENT. */
int copies_ref(struct copies *c, int fd);
/* Drop one reference; a private copy with none left is closed, a shared one kept
 * (up to keep unreferenced, least recently used closed first). fd <= 0: no-op. */
void copies_put(struct copies *c, int fd);

/* Copies now held and their bytes. */
size_t copies_count(const struct copies *c);

#endif
