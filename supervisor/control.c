/* control.c — the control protocol: framing, parsing, submit validation, replies
 * (control.h). No sockets here. */
#include "cuzk/control.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cuzk/input_bounds.h"
#include "cuzk/peer_acl.h"
#include "cuzk/wgen_trust.h"
#include "cuzk/wtns.h"
#include "cuzk/zkey.h"

static int fail(struct control_err *e, const char *code, int rc, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int fail(struct control_err *e, const char *code, int rc, const char *fmt, ...)
{
	va_list ap;

	e->code = code;
	va_start(ap, fmt);
	vsnprintf(e->message, sizeof(e->message), fmt, ap);
	va_end(ap);
	return rc;
}

static const struct {
	const char *name;
	enum control_kind kind;
} kinds[] = {
	{ "submit", CONTROL_SUBMIT },     { "status", CONTROL_STATUS },
	{ "wait", CONTROL_WAIT },         { "cancel", CONTROL_CANCEL },
	{ "restart", CONTROL_RESTART },   { "drain", CONTROL_DRAIN },
	{ "shutdown", CONTROL_SHUTDOWN }, { "preload", CONTROL_PRELOAD },
	{ "evict", CONTROL_EVICT },
};

/* *v = member k of o, NULL when it is missing: an error when it is required, saying
 * what it should be (what: after "\"k\" is required"). */
static int member(json_t *o, const char *k, int required, const char *what, json_t **v,
		  struct control_err *e)
{
	*v = json_object_get(o, k);
	if (!*v && required)
		return fail(e, CONTROL_E_BAD_REQUEST, -EINVAL, "\"%s\" is required%s", k, what);
	return 0;
}

static int get_str(json_t *o, const char *k, int required, const char **out, struct control_err *e)
{
	json_t *v;
	int rc;

	*out = NULL;
	if ((rc = member(o, k, required, " (a string)", &v, e)) || !v)
		return rc;
	if (!json_is_string(v) || !json_string_length(v))
		return fail(e, CONTROL_E_BAD_REQUEST, -EINVAL, "\"%s\" must be a non-empty string",
			    k);
	if (strlen(json_string_value(v)) != json_string_length(v))
		return fail(e, CONTROL_E_BAD_REQUEST, -EINVAL, "\"%s\" contains a NUL byte", k);
	*out = json_string_value(v);
	return 0;
}

static int get_int(json_t *o, const char *k, int required, json_int_t lo, json_int_t hi, int *has,
		   json_int_t *out, struct control_err *e)
{
	json_t *v;
	int rc;

	*has = 0;
	if ((rc = member(o, k, required, " (a number)", &v, e)) || !v)
		return rc;
	if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
		return fail(e, CONTROL_E_BAD_REQUEST, -EINVAL,
			    "\"%s\" must be a whole number from %lld to %lld", k, (long long)lo,
			    (long long)hi);
	*has = 1;
	*out = json_integer_value(v);
	return 0;
}

static int text_ok(const char *p)
{
	for (; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			return 0;
	return 1;
}

/* A file of the request, F = {"fd":I,"path":P} (control.h). A bare path string is
 * refused with the sentence that says what to send instead. */
static int get_file(json_t *o, const char *k, int required, uint32_t n_fds, const char **path,
		    int *fd, struct control_err *e)
{
	json_t *v, *f, *p;
	int rc;

	*path = NULL;
	*fd = -1;
	if ((rc = member(o, k, required, ": {\"fd\":I,\"path\":P}", &v, e)) || !v)
		return rc;
	if (json_is_string(v))
		return fail(e, CONTROL_E_BAD_REQUEST, -EINVAL,
			    "\"%s\" is a path: cuzkd opens no "
			    "path a client names; pass the open file over SCM_RIGHTS and send "
			    "{\"fd\":I,\"path\":P} with \"fds\":N (cuzk prove does this)",
			    k);
	f = json_object_get(v, "fd");
	p = json_object_get(v, "path");
	if (!json_is_object(v) || !json_is_integer(f) || !json_is_string(p))
		return fail(e, CONTROL_E_BAD_REQUEST, -EINVAL,
			    "\"%s\" must be {\"fd\":I,"
			    "\"path\":P}",
			    k);
	if (json_integer_value(f) < 0 || json_integer_value(f) >= (json_int_t)n_fds)
		return fail(e, CONTROL_E_BAD_REQUEST, -EINVAL,
			    "\"%s\": fd %lld is not one of the "
			    "%u descriptor(s) the request passed (\"fds\")",
			    k, (long long)json_integer_value(f), n_fds);
	if (!json_string_length(p) || strlen(json_string_value(p)) != json_string_length(p) ||
	    json_string_length(p) >= JOBTAB_PATH_LEN || !text_ok(json_string_value(p)))
		return fail(e, CONTROL_E_BAD_REQUEST, -EINVAL,
			    "\"%s\": \"path\" must be 1 to %d "
			    "bytes of text (it names the file in messages)",
			    k, JOBTAB_PATH_LEN - 1);
	*path = json_string_value(p);
	*fd = (int)json_integer_value(f);
	return 0;
}

int control_parse(const char *line, size_t len, struct control_req *r, struct control_err *e)
{
	json_error_t je;
	const char *req;
	json_int_t x;
	int has, rc;
	size_t i;

	memset(r, 0, sizeof(*r));
	r->timeout_ms = -1;
	r->zkey_fd = r->r1cs_fd = r->out_fd = r->witness_gen_fd = -1;
	if (len > CONTROL_LINE_MAX)
		return fail(e, CONTROL_E_TOO_LONG, -EINVAL, "request line longer than %d bytes",
			    CONTROL_LINE_MAX);
	r->root = json_loadb(line, len, JSON_REJECT_DUPLICATES, &je);
	if (!r->root)
		return fail(e, CONTROL_E_BAD_JSON, -EINVAL,
			    "not valid JSON (column %d: %s); send one object per line", je.column,
			    je.text);
	if (!json_is_object(r->root)) {
		rc = fail(e, CONTROL_E_BAD_JSON, -EINVAL,
			  "a request is a JSON object like {\"req\":\"status\"}");
		goto err;
	}
	if ((rc = get_str(r->root, "req", 1, &req, e)))
		goto err;
	for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (!strcmp(req, kinds[i].name))
			break;
	if (i == sizeof(kinds) / sizeof(kinds[0])) {
		rc = fail(e, CONTROL_E_UNKNOWN, -EINVAL,
			  "unknown request \"%.64s\"; known: submit, status, wait, cancel, "
			  "restart, drain, shutdown, preload, evict",
			  req);
		goto err;
	}
	r->kind = kinds[i].kind;
	switch (r->kind) {
	case CONTROL_SUBMIT: {
		/* "witnesses" (.wtns) or "inputs" (input.json + "witness_gen"): the list is
		 * checked the same way; only the word in messages differs */
		json_t *w = json_object_get(r->root, "witnesses"),
		       *in = json_object_get(r->root, "inputs");
		const char *list = in ? "inputs" : "witnesses";

		if (w && in) {
			rc = fail(e, CONTROL_E_BAD_REQUEST, -EINVAL,
				  "a job has \"witnesses\" "
				  "(.wtns) or \"inputs\" (input.json), not both");
			goto err;
		}
		if ((rc = get_int(r->root, "fds", 0, 0, 1 << 20, &has, &x, e)))
			goto err;
		r->n_fds = has ? (uint32_t)x : 0;
		if (!r->n_fds) {
			rc = fail(e, CONTROL_E_BAD_REQUEST, -EINVAL,
				  "a submit passes its files as "
				  "descriptors (SCM_RIGHTS) and says how many in \"fds\": cuzkd "
				  "opens no path a client names (cuzk prove does this)");
			goto err;
		}
		/* the generator is a file like the others: {"fd":I,"path":P}, copied */
		if ((rc = get_file(r->root, "witness_gen", in != NULL, r->n_fds, &r->witness_gen,
				   &r->witness_gen_fd, e)))
			goto err;
		if (!in && r->witness_gen) {
			rc = fail(e, CONTROL_E_BAD_REQUEST, -EINVAL,
				  "\"witness_gen\" goes with "
				  "\"inputs\" (input.json files), not with \"witnesses\"");
			goto err;
		}
		if (in)
			w = in;
		if ((rc = get_file(r->root, "zkey", 1, r->n_fds, &r->zkey, &r->zkey_fd, e)) ||
		    (rc = get_file(r->root, "out_dir", 1, r->n_fds, &r->out_dir, &r->out_fd, e)) ||
		    (rc = get_file(r->root, "r1cs", 0, r->n_fds, &r->r1cs, &r->r1cs_fd, e)))
			goto err;
		if ((rc = get_int(r->root, "priority", 0, -1000000, 1000000, &has, &x, e)))
			goto err;
		r->priority = has ? (int32_t)x : 0;
		if (!json_is_array(w) || !json_array_size(w)) {
			rc = fail(e, CONTROL_E_BAD_REQUEST, -EINVAL,
				  "\"%s\" must be a non-empty array of %s paths", list,
				  in ? "input.json" : ".wtns");
			goto err;
		}
		r->n_witnesses = json_array_size(w);
		r->witnesses = calloc(r->n_witnesses, sizeof(*r->witnesses));
		r->witness_names = calloc(r->n_witnesses, sizeof(*r->witness_names));
		r->witness_fd = calloc(r->n_witnesses, sizeof(*r->witness_fd));
		if (!r->witnesses || !r->witness_names || !r->witness_fd) {
			rc = fail(e, CONTROL_E_INTERNAL, -ENOMEM, "out of memory");
			goto err;
		}
		for (i = 0; i < r->n_witnesses; i++) {
			json_t *s = json_array_get(w, i);
			char key[32];

			snprintf(key, sizeof(key), "%s[%zu]", list, i);
			{
				/* get_file reads o[key]: wrap the element under its name. */
				json_t *one = json_pack("{s:O}", key, s);

				rc = one ? get_file(one, key, 1, r->n_fds, &r->witnesses[i],
						    &r->witness_fd[i], e) :
					   fail(e, CONTROL_E_INTERNAL, -ENOMEM, "out of memory");
				json_decref(one); /* the strings live on in s, held by root */
			}
			if (rc)
				goto err;
			if ((rc = get_str(s, "name", 0, &r->witness_names[i], e)))
				goto err;
		}
		break;
	}
	case CONTROL_STATUS:
	case CONTROL_WAIT:
	case CONTROL_CANCEL:
		if ((rc = get_int(r->root, "job", r->kind != CONTROL_STATUS, 0, INT64_MAX, &has, &x,
				  e)))
			goto err;
		r->has_job = has;
		r->job = (uint64_t)x;
		if (r->kind == CONTROL_WAIT) {
			if ((rc = get_int(r->root, "timeout_ms", 0, 0, INT64_MAX / 2, &has, &x, e)))
				goto err;
			if (has)
				r->timeout_ms = x;
		}
		break;
	case CONTROL_RESTART:
		if ((rc = get_str(r->root, "stage", 1, &r->stage, e)))
			goto err;
		if (strcmp(r->stage, "synth") && strcmp(r->stage, "worker") &&
		    strcmp(r->stage, "gpuworker") && strcmp(r->stage, "finalizer")) {
			rc = fail(e, CONTROL_E_BAD_REQUEST, -EINVAL,
				  "\"stage\" must be synth, worker or finalizer");
			goto err;
		}
		if ((rc = get_int(r->root, "index", 0, 0, 1 << 20, &has, &x, e)))
			goto err;
		r->has_index = has;
		r->index = has ? (uint32_t)x : 0;
		break;
	case CONTROL_DRAIN:
	case CONTROL_SHUTDOWN:
		break;
	case CONTROL_PRELOAD:
		if ((rc = get_int(r->root, "fds", 0, 0, 1 << 20, &has, &x, e)))
			goto err;
		r->n_fds = has ? (uint32_t)x : 0;
		if ((rc = get_file(r->root, "zkey", 1, r->n_fds, &r->zkey, &r->zkey_fd, e)))
			goto err;
		break;
	case CONTROL_EVICT:
		if ((rc = get_str(r->root, "zkey", 1, &r->zkey, e)))
			goto err;
		break;
	}
	return 0;
err:
	control_req_free(r);
	return rc;
}

void control_req_free(struct control_req *r)
{
	free(r->witnesses);
	free(r->witness_names);
	free(r->witness_fd);
	json_decref(r->root);
	memset(r, 0, sizeof(*r));
}

int control_wtns_name(const char *path, char *name, size_t len)
{
	const char *b;
	size_t n = pipeline_wtns_stem(path, &b); /* the rule the pipeline names outputs by */

	if (!n || n >= len)
		return -EINVAL;
	memcpy(name, b, n);
	name[n] = '\0';
	return 0;
}

int control_name_ok(const char *name)
{
	size_t n = strlen(name);

	if (!n || n >= PIPE_NAME_LEN || strchr(name, '/') || !text_ok(name) || !strcmp(name, ".") ||
	    !strcmp(name, ".."))
		return -EINVAL;
	return 0;
}

int control_peer_in_group(const struct control_peer *p, gid_t g)
{
	if (p->gid == g)
		return 1;
	for (size_t i = 0; i < p->n_groups; i++)
		if (p->groups[i] == g)
			return 1;
	return 0;
}

int control_peer_may_write_dirfd(const struct control_peer *peer, int fd, const struct stat *st)
{
	int acl;

	if (!S_ISDIR(st->st_mode))
		return 0;
	if (peer->uid == 0)
		return 1;
	/* With an access ACL the mode's group bits are its mask, not the rights. */
	acl = peer_acl_may(peer, fd, st, 2 | 1);
	return acl >= 0 ? acl : control_peer_may_write_dir(peer, st);
}

int control_peer_may_write_dir(const struct control_peer *peer, const struct stat *st)
{
	mode_t need;

	if (!S_ISDIR(st->st_mode))
		return 0;
	if (peer->uid == 0)
		return 1;
	/* The kernel's order: the owner's bits for the owner, else the group's for a
	 * member, else the others' (a denying owner bit is not overridden by others'). */
	if (st->st_uid == peer->uid)
		need = S_IWUSR | S_IXUSR;
	else if (control_peer_in_group(peer, st->st_gid))
		need = S_IWGRP | S_IXGRP;
	else
		need = S_IWOTH | S_IXOTH;
	return (st->st_mode & need) == need;
}

/* Take a copy of input fds[idx] (copies.h); *out the copy's descriptor. */
static int input_copy(const char *what, const char *path, int idx, const int *fds, size_t n_fds,
		      int shared, uint64_t want, struct copies *cp, int *out, struct control_err *e)
{
	char err[512];
	int fd;

	if (idx < 0 || (size_t)idx >= n_fds)
		return fail(e, CONTROL_E_BAD_REQUEST, -EINVAL, "%s %s: no descriptor passed for it",
			    what, path);
	fd = copies_take_sized(cp, fds[idx], shared, want, what, path, err, sizeof(err));
	if (fd < 0)
		return fail(e,
			    fd == -EINVAL || fd == -EBADF || fd == -ESTALE ? CONTROL_E_BAD_INPUT :
									     CONTROL_E_INTERNAL,
			    fd, "%s", err);
	*out = fd;
	return 0;
}

void control_file_id(const struct stat *st, char id[CONTROL_ID_LEN])
{
	if (S_ISDIR(st->st_mode))
		snprintf(id, CONTROL_ID_LEN, "%llu:%llu", (unsigned long long)st->st_dev,
			 (unsigned long long)st->st_ino);
	else
		snprintf(id, CONTROL_ID_LEN, "%llu:%llu:%lld:%lld.%09ld:%lld.%09ld",
			 (unsigned long long)st->st_dev, (unsigned long long)st->st_ino,
			 (long long)st->st_size, (long long)st->st_mtim.tv_sec, st->st_mtim.tv_nsec,
			 (long long)st->st_ctim.tv_sec, st->st_ctim.tv_nsec);
}

/* id of the client's descriptor (after its copy: the identity the copy was taken of;
 * copies_take refuses a file that changed while it was read). */
static void fd_id(int fd, char id[CONTROL_ID_LEN])
{
	struct stat st;

	id[0] = '\0';
	if (!fstat(fd, &st))
		control_file_id(&st, id);
}

static void self_path(char *buf, size_t len, int fd)
{
	snprintf(buf, len, "/proc/self/fd/%d", fd);
}

void control_submit_free(struct control_submit *s, struct copies *cp)
{
	if (cp) {
		copies_put(cp, s->zkey_fd);
		copies_put(cp, s->r1cs_fd);
		copies_put(cp, s->wgen_fd);
		for (size_t i = 0; s->wtns_fd && i < s->n; i++)
			copies_put(cp, s->wtns_fd[i]);
	}
	if (s->out_fd > 0)
		close(s->out_fd);
	free(s->wtns);
	free(s->name);
	free(s->wtns_fd);
	free(s->wtns_id);
	s->wtns = NULL;
	s->name = NULL;
	s->wtns_fd = NULL;
	s->wtns_id = NULL;
	s->zkey_fd = s->r1cs_fd = s->out_fd = s->wgen_fd = -1;
}

/* The out directory: a directory the peer could write itself; in a sticky one no
 * output would replace another user's file (the kernel would not let the peer). */
static int check_out_dir(const struct control_req *r, const int *fds, size_t n_fds,
			 const struct control_peer *peer, struct control_submit *s,
			 struct control_err *e)
{
	struct stat st, o;
	int dfd;

	if (r->out_fd < 0 || (size_t)r->out_fd >= n_fds)
		return fail(e, CONTROL_E_BAD_REQUEST, -EINVAL,
			    "out_dir %s: no descriptor passed "
			    "for it",
			    r->out_dir);
	dfd = fds[r->out_fd];
	if (fstat(dfd, &st))
		return fail(e, CONTROL_E_OUTPUT, -errno, "out_dir %s: %s", r->out_dir,
			    strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return fail(e, CONTROL_E_OUTPUT, -ENOTDIR,
			    "out_dir %s: the descriptor passed is "
			    "not a directory",
			    r->out_dir);
	if (!control_peer_may_write_dirfd(peer, dfd, &st))
		return fail(e, CONTROL_E_PERM, -EACCES,
			    "out_dir %s: uid %u may not create files "
			    "there, so cuzkd will not either",
			    r->out_dir, (unsigned)peer->uid);
	if ((st.st_mode & S_ISVTX) && peer->uid != 0 && st.st_uid != peer->uid)
		for (size_t i = 0; i < s->n; i++)
			for (int k = 0; k < 2; k++) {
				char nm[PIPE_NAME_LEN + 16];

				snprintf(nm, sizeof(nm), "%s.%s.json", s->name[i],
					 k ? "public" : "proof");
				if (!fstatat(dfd, nm, &o, AT_SYMLINK_NOFOLLOW) &&
				    o.st_uid != peer->uid)
					return fail(
						e, CONTROL_E_PERM, -EACCES,
						"out_dir %s: %s is "
						"another user's file in a sticky directory: uid %u "
						"may not replace it",
						r->out_dir, nm, (unsigned)peer->uid);
			}
	s->out_fd = fcntl(dfd, F_DUPFD_CLOEXEC, 3);
	if (s->out_fd < 0)
		return fail(e, CONTROL_E_INTERNAL, -errno, "out_dir %s: %s", r->out_dir,
			    strerror(errno));
	snprintf(s->out_dir, sizeof(s->out_dir), "%s", r->out_dir);
	return 0;
}

static struct control_policy policy;

void control_set_policy(const struct control_policy *p)
{
	policy = *p;
}

/* What a submit's files will cost, found before any copy: the size each must have
 * (from its headers where the format fixes it, input_bounds.h), which witnesses name
 * a file named before (dup_of: its first index, else SIZE_MAX), and the sum of the
 * distinct files, checked against the peer's --quota-bytes. */
struct sizes {
	uint64_t zkey, r1cs, wgen, *wtns;
	size_t *dup_of;
	dev_t *dev; /* each witness's file: (dev, inode), inode 0 if not a regular file */
	ino_t *ino;
};

static int regular_size(int fd, const char *what, const char *path, uint64_t *size,
			struct control_err *e)
{
	struct stat st;

	/* Only the size: copies_take refuses what is not a regular file, unread. */
	if (fstat(fd, &st))
		return fail(e, CONTROL_E_BAD_INPUT, -errno, "%s %s: %s", what, path,
			    strerror(errno));
	*size = S_ISREG(st.st_mode) ? (uint64_t)st.st_size : 0;
	return 0;
}

static int submit_sizes(const struct control_req *r, const int *fds, size_t n_fds,
			const struct control_peer *peer, struct control_submit *s, struct sizes *z,
			struct control_err *e)
{
	char err[512];
	uint64_t total = 0;
	int rc;

	z->wtns = calloc(s->n ? s->n : 1, sizeof(*z->wtns));
	z->dup_of = calloc(s->n ? s->n : 1, sizeof(*z->dup_of));
	z->dev = calloc(s->n ? s->n : 1, sizeof(*z->dev));
	z->ino = calloc(s->n ? s->n : 1, sizeof(*z->ino));
	if (!z->wtns || !z->dup_of || !z->dev || !z->ino)
		return fail(e, CONTROL_E_INTERNAL, -ENOMEM, "out of memory");
	if (r->zkey_fd < 0 || (size_t)r->zkey_fd >= n_fds)
		return fail(e, CONTROL_E_BAD_REQUEST, -EINVAL,
			    "zkey %s: no descriptor passed for it", r->zkey);
	if ((rc = input_bounds_zkey(fds[r->zkey_fd], r->zkey, &z->zkey, err, sizeof(err))))
		return fail(e, CONTROL_E_BAD_INPUT, rc, "%s", err);
	total += z->zkey;
	if (r->r1cs && r->r1cs_fd >= 0 && (size_t)r->r1cs_fd < n_fds) {
		if ((rc = regular_size(fds[r->r1cs_fd], "r1cs", r->r1cs, &z->r1cs, e)))
			return rc;
		total += z->r1cs;
	}
	if (r->witness_gen && r->witness_gen_fd >= 0 && (size_t)r->witness_gen_fd < n_fds) {
		if ((rc = regular_size(fds[r->witness_gen_fd], "witness generator", r->witness_gen,
				       &z->wgen, e)))
			return rc;
		total += z->wgen;
	}
	for (size_t i = 0; i < s->n; i++) {
		int idx = r->witness_fd[i];
		struct stat a;

		z->dup_of[i] = SIZE_MAX;
		if (idx < 0 || (size_t)idx >= n_fds)
			return fail(e, CONTROL_E_BAD_REQUEST, -EINVAL,
				    "witness %s: no descriptor passed for it", r->witnesses[i]);
		if (fstat(fds[idx], &a))
			return fail(e, CONTROL_E_BAD_INPUT, -errno, "witness %s: %s",
				    r->witnesses[i], strerror(errno));
		/* Quadratic in the witnesses (at most --max-parts, 4096: 8 M compares of
		 * two numbers, milliseconds), no syscall per pair. */
		z->dev[i] = a.st_dev;
		z->ino[i] = S_ISREG(a.st_mode) ? a.st_ino : 0;
		for (size_t j = 0; j < i && z->dup_of[i] == SIZE_MAX && z->ino[i]; j++)
			if (z->dup_of[j] == SIZE_MAX && z->ino[j] == z->ino[i] &&
			    z->dev[j] == z->dev[i])
				z->dup_of[i] = j;
		if (z->dup_of[i] != SIZE_MAX)
			continue;
		if (!S_ISREG(a.st_mode))
			continue; /* refused by its copy, unread, with the reason */
		if (r->witness_gen)
			z->wtns[i] = (uint64_t)a.st_size; /* input.json: its bytes */
		else if ((rc = input_bounds_wtns(fds[idx], r->witnesses[i], &z->wtns[i], err,
						 sizeof(err))))
			return fail(e, CONTROL_E_BAD_INPUT, rc, "%s", err);
		total += z->wtns[i];
	}
	s->bytes = total;
	if (peer->bytes_quota && total + peer->bytes_used > peer->bytes_quota)
		return fail(e, CONTROL_E_QUOTA, -EDQUOT,
			    "quota: this job's files are %.1f MiB and uid %u's unfinished jobs "
			    "hold %.1f MiB of copies; --quota-bytes is %.1f MiB: retry when "
			    "some finish",
			    (double)total / 1048576.0, (unsigned)peer->uid,
			    (double)peer->bytes_used / 1048576.0,
			    (double)peer->bytes_quota / 1048576.0);
	return 0;
}

int control_submit_check(const struct control_req *r, const int *fds, size_t n_fds,
			 const struct control_peer *peer, struct copies *cp, uint64_t buf_size,
			 uint32_t max_parts, struct control_submit *s, struct control_err *e)
{
	char err[512], zp[64], wp[64];
	struct sizes sz = { 0 };
	zkey z;
	int rc;

	memset(s, 0, sizeof(*s));
	memset(&z, 0, sizeof(z));
	s->zkey_fd = s->r1cs_fd = s->out_fd = s->wgen_fd = -1;
	s->priority = r->priority;
	if (r->n_witnesses > max_parts)
		return fail(e, CONTROL_E_FULL, -E2BIG,
			    "%zu witnesses: one job holds at most %u "
			    "partitions (--max-parts); split it",
			    r->n_witnesses, max_parts);
	s->n = r->n_witnesses;
	s->wtns = calloc(s->n, sizeof(*s->wtns));
	s->name = calloc(s->n, sizeof(*s->name));
	s->wtns_fd = malloc(s->n * sizeof(*s->wtns_fd));
	s->wtns_id = calloc(s->n, sizeof(*s->wtns_id));
	if (!s->wtns || !s->name || !s->wtns_fd || !s->wtns_id) {
		rc = fail(e, CONTROL_E_INTERNAL, -ENOMEM, "out of memory");
		goto err;
	}
	for (size_t i = 0; i < s->n; i++)
		s->wtns_fd[i] = -1;
	/* Names first: cheap, and the out dir check needs them. */
	for (size_t i = 0; i < s->n; i++) {
		if (r->witness_names[i] ?
			    snprintf(s->name[i], PIPE_NAME_LEN, "%s", r->witness_names[i]) >=
				    PIPE_NAME_LEN :
			    control_wtns_name(r->witnesses[i], s->name[i], PIPE_NAME_LEN)) {
			rc = fail(e, CONTROL_E_BAD_INPUT, -EINVAL,
				  "witness %s: its output name "
				  "must be 1 to %d bytes (without .wtns)",
				  r->witnesses[i], PIPE_NAME_LEN - 1);
			goto err;
		}
		if (control_name_ok(s->name[i])) {
			rc = fail(e, CONTROL_E_BAD_INPUT, -EINVAL,
				  "witness %s: output name \"%s\" "
				  "refused: no '/', no control character, not . or ..",
				  r->witnesses[i], s->name[i]);
			goto err;
		}
		for (size_t j = 0; j < i; j++)
			if (!strcmp(s->name[i], s->name[j])) {
				rc = fail(e, CONTROL_E_BAD_INPUT, -EINVAL,
					  "witnesses %s and %s "
					  "would both write %s.proof.json: rename one",
					  r->witnesses[j], r->witnesses[i], s->name[i]);
				goto err;
			}
		snprintf(s->wtns[i], JOBTAB_PATH_LEN, "%s", r->witnesses[i]);
	}
	if ((rc = check_out_dir(r, fds, n_fds, peer, s, e)))
		goto err;
	snprintf(s->zkey, sizeof(s->zkey), "%s", r->zkey);
	if ((rc = submit_sizes(r, fds, n_fds, peer, s, &sz, e)))
		goto err;
	if ((rc = input_copy("zkey", r->zkey, r->zkey_fd, fds, n_fds, 1, sz.zkey, cp, &s->zkey_fd,
			     e)))
		goto err;
	fd_id(fds[r->zkey_fd], s->zkey_id);
	fd_id(fds[r->out_fd], s->out_id);
	if (r->r1cs) {
		snprintf(s->r1cs, sizeof(s->r1cs), "%s", r->r1cs);
		if ((rc = input_copy("r1cs", r->r1cs, r->r1cs_fd, fds, n_fds, 1, sz.r1cs, cp,
				     &s->r1cs_fd, e)))
			goto err;
		fd_id(fds[r->r1cs_fd], s->r1cs_id);
	}
	/* The generator: a shared copy like a zkey (one per distinct file, kept for later
	 * jobs); the synth dlopens the copy, never the client's path. */
	if (r->witness_gen) {
		snprintf(s->wgen, sizeof(s->wgen), "%s", r->witness_gen);
		/* Native code the synth loads (and a load runs its constructors): only from
		 * the operator's --wgen-dir, only a cuzk generator (wgen_trust.h). Checked on
		 * the client's descriptor, the file the copy is taken of. */
		if (r->witness_gen_fd < 0 || (size_t)r->witness_gen_fd >= n_fds) {
			rc = fail(e, CONTROL_E_BAD_REQUEST, -EINVAL,
				  "witness generator %s: no descriptor passed for it",
				  r->witness_gen);
			goto err;
		}
		if ((rc = wgen_trust_check(fds[r->witness_gen_fd], policy.wgen_dirs, r->witness_gen,
					   err, sizeof(err)))) {
			rc = fail(e, CONTROL_E_BAD_INPUT, rc, "%s", err);
			goto err;
		}
		if ((rc = input_copy("witness generator", r->witness_gen, r->witness_gen_fd, fds,
				     n_fds, 1, sz.wgen, cp, &s->wgen_fd, e)))
			goto err;
		fd_id(fds[r->witness_gen_fd], s->wgen_id);
	}
	for (size_t i = 0; i < s->n; i++) {
		/* A file named again (the same descriptor, or another of the same file) is
		 * copied once: each partition holds a reference to that copy. */
		if (sz.dup_of[i] != SIZE_MAX) {
			size_t j = sz.dup_of[i];

			if (copies_ref(cp, s->wtns_fd[j])) {
				rc = fail(e, CONTROL_E_INTERNAL, -ENOENT, "witness copy lost");
				goto err;
			}
			s->wtns_fd[i] = s->wtns_fd[j];
			memcpy(s->wtns_id[i], s->wtns_id[j], CONTROL_ID_LEN);
			continue;
		}
		if ((rc = input_copy(s->wgen[0] ? "input" : "witness", r->witnesses[i],
				     r->witness_fd[i], fds, n_fds, 0, sz.wtns[i], cp,
				     &s->wtns_fd[i], e)))
			goto err;
		fd_id(fds[r->witness_fd[i]], s->wtns_id[i]);
	}

	/* The zkey opens and its partitions fit a buffer (pipeline.h: (3n + nvars) * 32).
	 * Mapped from our sealed copy: the client cannot shrink it under us (item 6). */
	self_path(zp, sizeof(zp), s->zkey_fd);
	if ((rc = zkey_open(&z, zp, err, sizeof(err)))) {
		pipe_err_rename(err, sizeof(err), zp, r->zkey);
		rc = fail(e, CONTROL_E_BAD_INPUT, rc, "zkey %s: %s", r->zkey, err);
		goto err;
	}
	s->domain_size = z.domain_size;
	s->nvars = z.nvars;
	s->buf_need = (3ull * z.domain_size + z.nvars) * 32ull;
	if (s->buf_need > buf_size) {
		rc = fail(e, CONTROL_E_TOO_BIG, -EFBIG,
			  "zkey %s: a partition of this circuit "
			  "needs %.1f MiB ((3 x %u + %u) x 32 bytes), buffers are %.1f MiB: start "
			  "cuzkd with --buffer-mb %llu or more",
			  r->zkey, (double)s->buf_need / 1048576.0, z.domain_size, z.nvars,
			  (double)buf_size / 1048576.0,
			  (unsigned long long)((s->buf_need + (1u << 20) - 1) >> 20));
		goto err;
	}
	if (s->wgen[0] && z.npublic + 1 > PIPE_PUBLIC_MAX) {
		rc = fail(e, CONTROL_E_BAD_INPUT, -E2BIG,
			  "zkey %s has %u public signals; a job "
			  "from input.json takes at most %d: compute .wtns files with cuzk witness "
			  "and submit those",
			  r->zkey, z.npublic, PIPE_PUBLIC_MAX - 1);
		goto err;
	}
	/* Each witness belongs to this circuit (the synth checks again; failing here
	 * tells the user at once and keeps a wrong job out of the table). A generator is
	 * not loaded here: that would run its code in cuzkd. The synth checks it against
	 * the zkey before any input (curve, witness size), and `cuzk prove` checks too. */
	for (size_t i = 0; i < s->n && !s->wgen[0]; i++) {
		wtns w;

		memset(&w, 0, sizeof(w));
		self_path(wp, sizeof(wp), s->wtns_fd[i]);
		if ((rc = wtns_open(&w, wp, err, sizeof(err)))) {
			pipe_err_rename(err, sizeof(err), wp, r->witnesses[i]);
			rc = fail(e, CONTROL_E_BAD_INPUT, rc, "witness %s: %s", r->witnesses[i],
				  err);
			goto err;
		}
		rc = wtns_check_zkey(&w, &z, err, sizeof(err));
		wtns_close(&w);
		if (rc) {
			pipe_err_rename(err, sizeof(err), wp, r->witnesses[i]);
			pipe_err_rename(err, sizeof(err), zp, r->zkey);
			rc = fail(e, CONTROL_E_BAD_INPUT, rc, "%s", err);
			goto err;
		}
	}
	zkey_close(&z);
	free(sz.wtns);
	free(sz.dup_of);
	free(sz.dev);
	free(sz.ino);
	return 0;
err:
	zkey_close(&z);
	free(sz.wtns);
	free(sz.dup_of);
	free(sz.dev);
	free(sz.ino);
	control_submit_free(s, cp);
	return rc;
}

int control_circuit_check(const struct control_req *r, const int *fds, size_t n_fds,
			  struct copies *cp, uint64_t buf_size, char out[JOBTAB_PATH_LEN],
			  int *copy_fd, struct control_err *e)
{
	char err[512], zp[64];
	uint64_t need;
	zkey z;
	int rc;

	*copy_fd = -1;
	if (strlen(r->zkey) >= JOBTAB_PATH_LEN)
		return fail(e, CONTROL_E_BAD_REQUEST, -ENAMETOOLONG,
			    "zkey %s: path longer than "
			    "%d bytes",
			    r->zkey, JOBTAB_PATH_LEN - 1);
	snprintf(out, JOBTAB_PATH_LEN, "%s", r->zkey);
	if (r->kind == CONTROL_EVICT)
		return 0; /* by name: opens nothing */
	{
		uint64_t want;

		if (r->zkey_fd < 0 || (size_t)r->zkey_fd >= n_fds)
			return fail(e, CONTROL_E_BAD_REQUEST, -EINVAL,
				    "zkey %s: no descriptor passed for it", r->zkey);
		if ((rc = input_bounds_zkey(fds[r->zkey_fd], r->zkey, &want, err, sizeof(err))))
			return fail(e, CONTROL_E_BAD_INPUT, rc, "%s", err);
		if ((rc = input_copy("zkey", r->zkey, r->zkey_fd, fds, n_fds, 1, want, cp, copy_fd,
				     e)))
			return rc;
	}
	memset(&z, 0, sizeof(z));
	self_path(zp, sizeof(zp), *copy_fd);
	if ((rc = zkey_open(&z, zp, err, sizeof(err)))) {
		pipe_err_rename(err, sizeof(err), zp, r->zkey);
		rc = fail(e, CONTROL_E_BAD_INPUT, rc, "zkey %s: %s", r->zkey, err);
		goto err;
	}
	need = (3ull * z.domain_size + z.nvars) * 32ull;
	zkey_close(&z);
	if (need > buf_size) {
		rc = fail(e, CONTROL_E_TOO_BIG, -EFBIG,
			  "zkey %s: a partition of this circuit "
			  "needs %.1f MiB, buffers are %.1f MiB: preloading it would not help; "
			  "start cuzkd with --buffer-mb %llu or more",
			  r->zkey, (double)need / 1048576.0, (double)buf_size / 1048576.0,
			  (unsigned long long)((need + (1u << 20) - 1) >> 20));
		goto err;
	}
	return 0;
err:
	copies_put(cp, *copy_fd);
	*copy_fd = -1;
	return rc;
}

static char *dump_line(json_t *o)
{
	/* ASCII only: names are the clients' (a U+202E or a C1 control in one reaches
	 * every reader of status as \uXXXX, never as a character that rewrites a line). */
	char *s = json_dumps(o, JSON_COMPACT | JSON_ENSURE_ASCII), *line;
	size_t n;

	json_decref(o);
	if (!s)
		return NULL;
	n = strlen(s);
	line = realloc(s, n + 2);
	if (!line) {
		free(s);
		return NULL;
	}
	line[n] = '\n';
	line[n + 1] = '\0';
	return line;
}

char *control_reply_error(const char *code, const char *message)
{
	return dump_line(json_pack("{s:b,s:s,s:s}", "ok", 0, "error", code, "message", message));
}

char *control_reply_ok(json_t *obj)
{
	if (!obj)
		obj = json_object();
	if (!obj)
		return NULL;
	json_object_set_new(obj, "ok", json_true());
	return dump_line(obj);
}

static const char *lstate(uint32_t s)
{
	static const char *n[] = { "free",   "queued", "synth", "ready", "proving",
				   "proved", "final",  "done",  "failed" };
	return s < sizeof(n) / sizeof(n[0]) ? n[s] : "?";
}

/* A partition's timeline (pipeline.h, struct pipe_part_times) for `cuzk trace`:
 * {"synth": {"begin_ns", "end_ns" (absent while running), "by"}, "prove": ..,
 * "final": ..}, stages not begun left out. Read while the stages write: each value
 * is whole (atomic), a pair may be one stage behind; the client skips an end < begin. */
static json_t *part_times_json(const struct pipe_part_times *t0)
{
	static const char *const k[PIPE_T_STAGES] = { "synth", "prove", "final" };
	struct pipe_part_times *t = (struct pipe_part_times *)t0; /* atomics: loads only */
	json_t *o = json_object();

	for (unsigned i = 0; o && i < PIPE_T_STAGES; i++) {
		/* Relaxed: a racy reading on purpose; only placement on a timeline. */
		uint64_t b = barrier_load_relaxed(&t->begin_ns[i]);
		uint64_t e = barrier_load_relaxed(&t->end_ns[i]);
		json_t *s;

		if (!b)
			continue;
		s = json_pack("{s:I,s:i}", "begin_ns", (json_int_t)b, "by",
			      (int)barrier_load_relaxed(&t->who[i]));
		if (s && e)
			json_object_set_new(s, "end_ns", json_integer((json_int_t)e));
		if (s && i == PIPE_T_SYNTH) {
			/* the NUMA node of its buffer (routing, route.h); absent with a one-share pool */
			uint32_t bn = barrier_load_relaxed(&t->buf_node);

			if (bn)
				json_object_set_new(s, "buf_node",
						    json_integer((json_int_t)bn - 1));
		}
		if (s)
			json_object_set_new(o, k[i], s);
	}
	return o;
}

json_t *control_job_json(const struct jobtab *jt, const struct pipe_partinfo *partinfo,
			 uint32_t slot, int with_parts)
{
	const struct jobtab_job *jb;
	uint32_t st, done = 0, failed = 0;
	json_t *o, *parts;

	if (slot >= jt->hdr->max_jobs)
		return NULL;
	jb = &jt->jobs[slot];
	/* Acquire: the fields written before the job was published or decided. */
	st = jobtab_word_state(barrier_load_acquire(&((struct jobtab_job *)jb)->word));
	if (st == JOBTAB_FREE)
		return NULL;
	jobtab_job_counts(jt, slot, &done, &failed);
	o = json_pack("{s:I,s:s,s:i,s:s,s:s,s:i,s:i,s:i}", "id", (json_int_t)jb->id, "state",
		      st == JOBTAB_QUEUED ? "running" : lstate(st), "priority", jb->priority,
		      "zkey", jb->zkey_path, "out_dir", jb->out_dir, "partitions", (int)jb->n_parts,
		      "done", (int)done, "failed", (int)failed);
	if (!o)
		return NULL;
	if (with_parts) /* the origin of the parts' "times" (CLOCK_MONOTONIC ns) */
		json_object_set_new(o, "submit_ns", json_integer((json_int_t)jb->submit_ns));
	if (st == JOBTAB_FAILED && jb->reason[0])
		json_object_set_new(
			o, "reason",
			json_stringn(jb->reason, strnlen(jb->reason, sizeof(jb->reason))));
	if (!with_parts)
		return o;
	parts = json_array();
	for (uint32_t i = 0; parts && i < jb->n_parts; i++) {
		uint32_t p = jb->first_part + i;
		uint64_t w = jobtab_part_load(jt, p);
		uint32_t ps = jobtab_word_state(w);
		const struct jobtab_part *pt = &jt->parts[p];
		json_t *po =
			json_pack("{s:i,s:s,s:i}", "index", (int)i, "state", lstate(ps), "attempts",
				  (int)barrier_load_relaxed(&((struct jobtab_part *)pt)->attempts));

		if (!po)
			continue;
		if (jobtab_word_pid(w))
			json_object_set_new(po, "pid", json_integer(jobtab_word_pid(w)));
		if (partinfo) {
			const char *nm = partinfo[p].name;
			char path[JOBTAB_PATH_LEN + PIPE_NAME_LEN + 32];

			json_object_set_new(po, "name",
					    json_stringn(nm, strnlen(nm, PIPE_NAME_LEN)));
			if (ps == JOBTAB_DONE) {
				snprintf(path, sizeof(path), "%s/%s.proof.json", jb->out_dir, nm);
				json_object_set_new(po, "proof", json_string(path));
				snprintf(path, sizeof(path), "%s/%s.public.json", jb->out_dir, nm);
				json_object_set_new(po, "public", json_string(path));
			}
			json_object_set_new(po, "times", part_times_json(&partinfo[p].times));
		}
		if (ps == JOBTAB_FAILED)
			json_object_set_new(
				po, "reason",
				json_stringn(pt->reason, strnlen(pt->reason, sizeof(pt->reason))));
		json_array_append_new(parts, po);
	}
	if (parts)
		json_object_set_new(o, "parts", parts);
	return o;
}

int control_framer_feed(struct control_framer *f, const char *data, size_t n, control_line_fn fn,
			void *arg)
{
	while (n) {
		const char *nl = memchr(data, '\n', n);
		size_t take = nl ? (size_t)(nl - data) : n;

		if (f->discarding) {
			if (!nl)
				return 0;
			f->discarding = 0;
			data += take + 1;
			n -= take + 1;
			continue;
		}
		if (f->len + take > CONTROL_LINE_MAX) {
			/* Oversized: report once, drop it up to its newline. */
			f->len = 0;
			f->discarding = !nl;
			if (fn(arg, NULL, 0))
				return 0;
			if (!nl)
				return 0;
			data += take + 1;
			n -= take + 1;
			continue;
		}
		if (f->len + take + 1 > f->cap) {
			size_t cap = f->cap ? f->cap : 4096;
			char *b;

			while (cap < f->len + take + 1)
				cap *= 2;
			if (!(b = realloc(f->buf, cap)))
				return -ENOMEM;
			f->buf = b;
			f->cap = cap;
		}
		memcpy(f->buf + f->len, data, take);
		f->len += take;
		if (!nl)
			return 0;
		data += take + 1;
		n -= take + 1;
		{
			size_t len = f->len;

			if (len && f->buf[len - 1] == '\r')
				len--;
			f->len = 0;
			if (len && fn(arg, f->buf, len))
				return 0;
		}
	}
	return 0;
}

void control_framer_free(struct control_framer *f)
{
	free(f->buf);
	memset(f, 0, sizeof(*f));
}
