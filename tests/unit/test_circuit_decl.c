/* test_circuit_decl.c — the [circuit NAME] sections of cuzkd.conf (circuit_decl.h),
 * line by line, as config_load_file reads a whole file, and a circuits-dir's entries
 * (circuits_dir.h) on a real directory (no daemon). */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "supervisor/circuit_decl.h"
#include "supervisor/circuits_dir.h"
#include "supervisor/config.h"

#include "helper_test.h"

TEST(test_circuit_name_rules, 1)
{
    static const char *const good[] = { "a", "mulchain", "Mul-2.bls_12", "0x", "a..b" };
    static const char *const bad[] = { "",   ".",  "..",  "../x", "a/b", ".hidden",
                                       "-x", "_x", "a b", "a\tb", "ü",   "a;b" };
    char longname[PROTO_CIRCUIT_NAME_MAX + 1];

    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
        ck_assert_msg(proto_circuit_name_valid(good[i]), "refused %s", good[i]);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        ck_assert_msg(!proto_circuit_name_valid(bad[i]), "accepted \"%s\"", bad[i]);
    memset(longname, 'a', PROTO_CIRCUIT_NAME_MAX);
    longname[PROTO_CIRCUIT_NAME_MAX] = '\0';
    ck_assert(!proto_circuit_name_valid(longname));
    longname[PROTO_CIRCUIT_NAME_MAX - 1] = '\0';
    ck_assert(proto_circuit_name_valid(longname));
}
END_TEST

TEST(test_circuit_decl_header, 1)
{
    char name[PROTO_CIRCUIT_NAME_MAX], err[256];

    ck_assert_int_eq(circuit_decl_header("[circuit mul]", name, err, sizeof(err)), 1);
    ck_assert_str_eq(name, "mul");
    ck_assert_int_eq(circuit_decl_header("[ circuit   a.b-c ]", name, err, sizeof(err)), 1);
    ck_assert_str_eq(name, "a.b-c");
    ck_assert_int_eq(circuit_decl_header("[cuzkd]", name, err, sizeof(err)), 0);
    ck_assert_int_eq(circuit_decl_header("[circuits]", name, err, sizeof(err)), 0);
    ck_assert_int_eq(circuit_decl_header("[circuit]", name, err, sizeof(err)), -EINVAL);
    ck_assert_int_eq(circuit_decl_header("[circuit ../x]", name, err, sizeof(err)), -EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "\"../x\" refused"));
    ck_assert_int_eq(circuit_decl_header("[circuit a b]", name, err, sizeof(err)), -EINVAL);
}
END_TEST

TEST(test_circuit_decl_keys, 1)
{
    struct circuit_decl d = { .name = "c" };
    char err[256];

    ck_assert_int_eq(circuit_decl_done(&d, err, sizeof(err)), -EINVAL); /* no zkey */
    ck_assert_int_eq(circuit_decl_set(&d, "zkey", "/k/c.zkey", err, sizeof(err)), 0);
    ck_assert_int_eq(circuit_decl_set(&d, "witness-gen", "/k/c.wgen", err, sizeof(err)), 0);
    ck_assert_int_eq(circuit_decl_set(&d, "r1cs", "/k/c.r1cs", err, sizeof(err)), 0);
    ck_assert_int_eq(circuit_decl_set(&d, "max-input-bytes", "64K", err, sizeof(err)), 0);
    ck_assert_uint_eq(d.max_input_bytes, 65536);
    ck_assert_int_eq(circuit_decl_set(&d, "max-input-bytes", "3", err, sizeof(err)), 0);
    ck_assert_uint_eq(d.max_input_bytes, 3);
    ck_assert_str_eq(d.zkey, "/k/c.zkey");
    ck_assert_str_eq(d.wgen, "/k/c.wgen");
    ck_assert_str_eq(d.r1cs, "/k/c.r1cs");
    ck_assert_int_eq(circuit_decl_done(&d, err, sizeof(err)), 0);
    /* relative paths, unknown keys, bad sizes */
    ck_assert_int_eq(circuit_decl_set(&d, "zkey", "c.zkey", err, sizeof(err)), -EINVAL);
    ck_assert_int_eq(circuit_decl_set(&d, "zkey", NULL, err, sizeof(err)), -EINVAL);
    ck_assert_int_eq(circuit_decl_set(&d, "zkeys", "/k", err, sizeof(err)), -EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "unknown key"));
    ck_assert_int_eq(circuit_decl_set(&d, "max-input-bytes", "-1", err, sizeof(err)), -EINVAL);
    ck_assert_int_eq(circuit_decl_set(&d, "max-input-bytes", "1T", err, sizeof(err)), -EINVAL);
    ck_assert_int_eq(circuit_decl_set(&d, "max-input-bytes", "99999999999999999999", err, sizeof(err)),
                     -EINVAL);
    ck_assert_str_eq(d.zkey, "/k/c.zkey"); /* a refused value changes nothing */
}
END_TEST

/* A whole file through config_load_file: options and sections side by side. */
static int load(const char *text, struct cuzkd_config *c, char *err, size_t errlen)
{
    char path[] = "/tmp/test_circuit_decl.XXXXXX";
    int fd = mkstemp(path), rc;
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;

    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
    config_defaults(c);
    rc = config_load_file(c, path, err, errlen);
    unlink(path);
    return rc;
}

TEST(test_circuit_decl_in_config_file, 1)
{
    struct cuzkd_config *c = malloc(sizeof(*c));
    char err[512];

    ck_assert_ptr_nonnull(c);
    ck_assert_int_eq(load("max-jobs = 7\n"
                          "[circuit a]\n"
                          "zkey = /z/a.zkey   # comment\n"
                          "max-input-bytes = 1M\n"
                          "[cuzkd]\n"
                          "max-parts = 9\n"
                          "[circuit b.2]\n"
                          "zkey = /z/b.zkey\n"
                          "witness-gen = /w/b.wgen\n",
                          c, err, sizeof(err)),
                     0);
    ck_assert_uint_eq(c->max_jobs, 7);
    ck_assert_uint_eq(c->max_parts, 9); /* back in cuzkd's options after [cuzkd] */
    ck_assert_uint_eq(c->n_circuits, 2);
    ck_assert_str_eq(c->circuits[0].name, "a");
    ck_assert_str_eq(c->circuits[0].zkey, "/z/a.zkey");
    ck_assert_uint_eq(c->circuits[0].max_input_bytes, 1u << 20);
    ck_assert_str_eq(c->circuits[1].name, "b.2");
    ck_assert_str_eq(c->circuits[1].wgen, "/w/b.wgen");
    ck_assert_str_eq(c->circuits[1].r1cs, "");

    ck_assert_int_eq(load("[circuit ../x]\nzkey = /z\n", c, err, sizeof(err)), -EINVAL);
    ck_assert_ptr_nonnull(strstr(err, ":1: circuit name \"../x\" refused"));
    ck_assert_int_eq(load("[circuit a]\nzkey = /z\n[circuit a]\nzkey = /y\n", c, err, sizeof(err)), -EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "declared twice"));
    ck_assert_int_eq(load("[circuit a]\nwitness-gen = /w\n", c, err, sizeof(err)), -EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "no zkey"));
    ck_assert_int_eq(load("[circuit a]\nzkey = /z\nmax-jobs = 3\n", c, err, sizeof(err)),
                     -EINVAL); /* an option inside a circuit's section is a mistake */
    ck_assert_ptr_nonnull(strstr(err, ":3: circuit a: unknown key"));
    {
        char text[4096] = "";

        for (int i = 0; i <= PROTO_CIRCUIT_DECL_MAX; i++)
            snprintf(text + strlen(text), sizeof(text) - strlen(text), "[circuit c%d]\nzkey = /z\n", i);
        ck_assert_int_eq(load(text, c, err, sizeof(err)), -EINVAL);
        ck_assert_ptr_nonnull(strstr(err, "more than"));
    }
    free(c);
}
END_TEST

/* Write text to DIR/rel (a file), or make DIR/rel a folder (text NULL). */
static void put(const char *dir, const char *rel, const char *text)
{
    char p[512];
    FILE *f;

    snprintf(p, sizeof(p), "%s/%s", dir, rel);
    if (!text) {
        ck_assert_int_eq(mkdir(p, 0755), 0);
        return;
    }
    ck_assert_ptr_nonnull(f = fopen(p, "w"));
    fputs(text, f);
    fclose(f);
}

TEST(test_circuits_dir_entries, 1)
{
    char dir[] = "/tmp/test_circuits_dir.XXXXXX", cdir[] = "/tmp/test_circuits_conf.XXXXXX";
    char conf[600], text[700], err[512], cmd[600];
    struct circuit_decl d[PROTO_CIRCUIT_DECL_MAX];
    uint32_t n = 0;

    ck_assert_ptr_nonnull(mkdtemp(dir));
    ck_assert_ptr_nonnull(mkdtemp(cdir));
    put(dir, "alpha.conf", "zkey = /z/alpha.zkey\nmax-input-bytes = 2K\n");
    put(dir, "beta", NULL);
    put(dir, "beta/circuit.zkey", "");
    put(dir, "beta/circuit.wgen", "");
    put(dir, "README", "not a circuit\n");
    put(dir, ".hidden.conf", "zkey = /z/h.zkey\n");
    /* a config file's section first, then the directory's entries in name order */
    snprintf(text, sizeof(text), "circuits-dir = %s\n[circuit gamma]\nzkey = /z/g.zkey\n", dir);
    put(cdir, "cuzkd.conf", text);
    snprintf(conf, sizeof(conf), "%s/cuzkd.conf", cdir);
    ck_assert_msg(config_load_circuits(conf, NULL, d, &n, err, sizeof(err)) == 0, "%s", err);
    ck_assert_int_eq(n, 3);
    ck_assert_str_eq(d[0].name, "gamma");
    ck_assert_str_eq(d[1].name, "alpha");
    ck_assert_str_eq(d[1].zkey, "/z/alpha.zkey");
    ck_assert_int_eq(d[1].max_input_bytes, 2048);
    ck_assert_str_eq(d[2].name, "beta");
    ck_assert_ptr_nonnull(strstr(d[2].zkey, "/beta/circuit.zkey"));
    ck_assert_ptr_nonnull(strstr(d[2].wgen, "/beta/circuit.wgen"));
    ck_assert_str_eq(d[2].r1cs, "");
    /* the directory alone (cuzkd started with --circuits-dir, no --config) */
    ck_assert_msg(config_load_circuits("", dir, d, &n, err, sizeof(err)) == 0, "%s", err);
    ck_assert_int_eq(n, 2);
    /* refused: a name declared twice, a section inside NAME.conf, an entry that is no name */
    put(dir, "beta.conf", "zkey = /z/b.zkey\n");
    ck_assert_int_eq(config_load_circuits("", dir, d, &n, err, sizeof(err)), -EINVAL);
    ck_assert_msg(strstr(err, "declared twice"), "%s", err);
    snprintf(cmd, sizeof(cmd), "%s/beta.conf", dir);
    unlink(cmd);
    put(dir, "delta.conf", "[circuit other]\nzkey = /z/b.zkey\n");
    ck_assert_int_eq(config_load_circuits("", dir, d, &n, err, sizeof(err)), -EINVAL);
    ck_assert_msg(strstr(err, "holds no section"), "%s", err);
    snprintf(cmd, sizeof(cmd), "%s/delta.conf", dir);
    unlink(cmd);
    put(dir, "-bad.conf", "zkey = /z/b.zkey\n");
    ck_assert_int_eq(config_load_circuits("", dir, d, &n, err, sizeof(err)), -EINVAL);
    ck_assert_msg(strstr(err, "does not name a circuit"), "%s", err);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s' '%s'", dir, cdir);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

int main(void)
{
    return test_main("circuit_decl", NULL);
}
