/* circuits_dir.c — the circuits of a circuits-dir (circuits_dir.h). */
#include "supervisor/circuits_dir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "supervisor/circuit_decl.h"

/* DIR/NAME/: its circuit.* files into a new declaration of c. */
static int read_folder(struct cuzkd_config *c, const char *dir, const char *name, char *err, size_t errlen)
{
    static const char *const key[3] = { "zkey", "witness-gen", "r1cs" };
    static const char *const file[3] = { "circuit.zkey", "circuit.wgen", "circuit.r1cs" };
    struct circuit_decl *d = config_circuit_new(c, name, err, errlen);
    struct stat st;
    char p[PROTO_PATH_MAX + 8];
    int rc;

    if (!d) return -EINVAL;
    for (int k = 0; k < 3; k++) {
        if ((size_t)snprintf(p, sizeof(p), "%s/%s/%s", dir, name, file[k]) >= PROTO_PATH_MAX) {
            snprintf(err, errlen, "circuits-dir %s: the path of %s/%s is too long", dir, name, file[k]);
            return -ENAMETOOLONG;
        }
        if (k && (lstat(p, &st) || !S_ISREG(st.st_mode))) continue; /* optional, absent */
        if ((rc = circuit_decl_set(d, key[k], p, err, errlen))) return rc;
    }
    return circuit_decl_done(d, err, errlen);
}

int circuits_dir_read(struct cuzkd_config *c, char *err, size_t errlen)
{
    const char *dir = c->circuits_dir;
    struct dirent **ents = NULL;
    char name[PROTO_CIRCUIT_NAME_MAX], path[PROTO_PATH_MAX + 264];
    int n, rc = 0;

    if (dir[0] != '/') {
        snprintf(err, errlen, "circuits-dir %s: give an absolute path", dir);
        return -EINVAL;
    }
    if ((n = scandir(dir, &ents, NULL, alphasort)) < 0) {
        rc = -errno;
        snprintf(err, errlen, "circuits-dir %s: %s", dir, strerror(errno));
        return rc;
    }
    for (int i = 0; i < n; i++) {
        const char *e = ents[i]->d_name;
        size_t len = strlen(e);
        struct stat st;

        if (rc || e[0] == '.') continue;
        snprintf(path, sizeof(path), "%s/%s", dir, e);
        if (lstat(path, &st)) continue;
        int conf = S_ISREG(st.st_mode) && len > 5 && !strcmp(e + len - 5, ".conf");
        size_t nlen = conf ? len - 5 : len, cut = nlen < sizeof(name) ? nlen : sizeof(name) - 1;

        if (!conf && !S_ISDIR(st.st_mode)) continue; /* not a circuit's entry */
        /* The name, cut to fit (a name that does not fit is refused just below): memcpy,
         * as snprintf of a d_name (256 bytes) into 64 is a truncation warning. */
        memcpy(name, e, cut);
        name[cut] = 0;
        if (nlen >= PROTO_CIRCUIT_NAME_MAX || !proto_circuit_name_valid(name)) {
            snprintf(err, errlen,
                     "circuits-dir %s: %s does not name a circuit (1 to %d of letters, digits, '-', "
                     "'_' and '.'): rename it, or move it out of the directory",
                     dir, e, PROTO_CIRCUIT_NAME_MAX - 1);
            rc = -EINVAL;
        } else if (S_ISDIR(st.st_mode))
            rc = read_folder(c, dir, name, err, errlen);
        else
            rc = config_load_circuit_file(c, path, name, err, errlen);
    }
    for (int i = 0; i < n; i++) free(ents[i]);
    free(ents);
    return rc;
}
