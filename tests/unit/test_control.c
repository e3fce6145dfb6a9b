/* test_control.c — control protocol parsing, framing and reply shapes (no socket). */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "supervisor/control.h"
#include "supervisor/submit_check.h"

#include "helper_test.h"

static int parse(const char *line, struct control_req *r, struct control_err *e)
{
    return control_parse(line, strlen(line), r, e);
}

/* line is refused: -EINVAL with error code `code`, a message of some length, and (when
 * not NULL) `said` in that message. */
static void check_refused(const char *line, const char *code, const char *said)
{
    struct control_req r;
    struct control_err e;

    ck_assert_msg(parse(line, &r, &e) == -EINVAL, "accepted %s", line);
    ck_assert_msg(!strcmp(e.code, code), "%s: code %s, expected %s", line, e.code, code);
    ck_assert_int_gt(strlen(e.message), 10);
    if (said) ck_assert_msg(strstr(e.message, said), "%s: message '%s' lacks '%s'", line, e.message, said);
}

TEST(test_control_parses_submit_files_by_descriptor, 1)
{
    struct control_req r;
    struct control_err e;

    ck_assert_int_eq(parse("{\"req\":\"submit\",\"fds\":4,\"zkey\":{\"fd\":0,\"path\":\"/z\"},"
                           "\"out_dir\":{\"fd\":1,\"path\":\"/o\"},\"witnesses\":[{\"fd\":2,"
                           "\"path\":\"/a.wtns\"},{\"fd\":3,\"path\":\"/b.wtns\",\"name\":\"bee\"}],"
                           "\"priority\":5}",
                           &r, &e),
                     0);
    ck_assert_int_eq(r.kind, CONTROL_SUBMIT);
    ck_assert_str_eq(r.zkey, "/z");
    ck_assert_int_eq(r.zkey_fd, 0);
    ck_assert_int_eq(r.out_fd, 1);
    ck_assert_uint_eq(r.n_fds, 4);
    ck_assert_uint_eq(r.n_witnesses, 2);
    ck_assert_str_eq(r.witnesses[1], "/b.wtns");
    ck_assert_int_eq(r.witness_fd[1], 3);
    ck_assert_ptr_null(r.witness_names[0]);
    ck_assert_str_eq(r.witness_names[1], "bee");
    ck_assert_int_eq(r.priority, 5);
    ck_assert_ptr_null(r.r1cs);
    ck_assert_int_eq(r.r1cs_fd, -1);
    control_req_free(&r);
}
END_TEST

TEST(test_control_refuses_paths_and_missing_descriptors, 1)
{
    /* The old path form: refused, with what to send instead. */
    check_refused("{\"req\":\"submit\",\"zkey\":\"/z\",\"out_dir\":\"/o\","
                  "\"witnesses\":[\"/a.wtns\"]}",
                  PROTO_E_BAD_REQUEST, "descriptors");
    check_refused("{\"req\":\"submit\",\"fds\":2,\"zkey\":\"/z\",\"out_dir\":"
                  "{\"fd\":1,\"path\":\"/o\"},\"witnesses\":[{\"fd\":0,\"path\":\"w\"}]}",
                  PROTO_E_BAD_REQUEST, "SCM_RIGHTS");
    /* An index past the descriptors announced. */
    check_refused("{\"req\":\"submit\",\"fds\":2,\"zkey\":{\"fd\":0,\"path\":\"z\"},"
                  "\"out_dir\":{\"fd\":1,\"path\":\"o\"},\"witnesses\":[{\"fd\":2,"
                  "\"path\":\"w\"}]}",
                  PROTO_E_BAD_REQUEST, NULL);
    check_refused("{\"req\":\"preload\",\"zkey\":\"/z\"}", PROTO_E_BAD_REQUEST, NULL);
}
END_TEST

TEST(test_control_output_names_and_dir_rights, 1)
{
    struct stat st;
    const gid_t g[] = { 50 };
    const struct control_peer alice = { 1000, 1000, g, 1 }, root = { 0, 0, NULL, 0 };

    ck_assert(control_name_valid("w1"));
    ck_assert(control_name_valid("..."));
    ck_assert(!control_name_valid(".."));
    ck_assert(!control_name_valid("."));
    ck_assert(!control_name_valid("a/b"));
    ck_assert(!control_name_valid("a\nb"));
    ck_assert(!control_name_valid(""));
    memset(&st, 0, sizeof(st));
    st.st_mode = S_IFDIR | 0755; /* root's */
    ck_assert(!control_peer_may_write_dir(&alice, &st));
    ck_assert(control_peer_may_write_dir(&root, &st));
    st.st_mode = S_IFDIR | 0775;
    st.st_gid = 50; /* a supplementary group of alice's */
    ck_assert(control_peer_may_write_dir(&alice, &st));
    st.st_uid = 1000; /* hers, but she took her own write bit away */
    st.st_mode = S_IFDIR | 0577;
    ck_assert(!control_peer_may_write_dir(&alice, &st));
    st.st_mode = S_IFDIR | 01777;
    st.st_uid = 0;
    ck_assert(control_peer_may_write_dir(&alice, &st));
    st.st_mode = S_IFREG | 0777;
    ck_assert(!control_peer_may_write_dir(&alice, &st));
}
END_TEST

TEST(test_control_parses_preload_evict, 1)
{
    struct control_req r;
    struct control_err e;

    ck_assert_int_eq(parse("{\"req\":\"preload\",\"fds\":1,\"zkey\":{\"fd\":0,\"path\":\"/z\"}}", &r, &e), 0);
    ck_assert_int_eq(r.kind, CONTROL_PRELOAD);
    ck_assert_str_eq(r.zkey, "/z");
    ck_assert_int_eq(r.zkey_fd, 0);
    control_req_free(&r);
    ck_assert_int_eq(parse("{\"req\":\"evict\",\"zkey\":\"/z\"}", &r, &e), 0);
    ck_assert_int_eq(r.kind, CONTROL_EVICT);
    control_req_free(&r);
    check_refused("{\"req\":\"evict\"}", PROTO_E_BAD_REQUEST, NULL);
    check_refused("{\"req\":\"preload\",\"zkey\":7}", PROTO_E_BAD_REQUEST, NULL);
}
END_TEST

TEST(test_control_parses_submit_by_circuit_name, 1)
{
    struct control_req r;
    struct control_err e;

    ck_assert_int_eq(parse("{\"req\":\"submit\",\"circuit\":\"mul.bls_12\",\"fds\":2,"
                           "\"out_dir\":{\"fd\":0,\"path\":\"/o\"},"
                           "\"inputs\":[{\"fd\":1,\"path\":\"/i/a.json\"}]}",
                           &r, &e),
                     0);
    ck_assert_str_eq(r.circuit, "mul.bls_12");
    ck_assert_ptr_null(r.zkey); /* cuzkd adds it (catalog.c) */
    ck_assert_ptr_null(r.witness_gen);
    ck_assert_int_eq(r.inputs, 1);
    ck_assert_uint_eq(r.max_input_bytes, 0); /* never from the wire */
    control_req_free(&r);
    /* a name and a zkey; a name that is no name; input.json without a generator nor
     * a name */
    check_refused("{\"req\":\"submit\",\"circuit\":\"c\",\"fds\":2,"
                  "\"zkey\":{\"fd\":0,\"path\":\"/z\"},\"out_dir\":{\"fd\":0,\"path\":\"/o\"},"
                  "\"witnesses\":[{\"fd\":1,\"path\":\"/w\"}]}",
                  PROTO_E_BAD_REQUEST, "not both");
    check_refused("{\"req\":\"submit\",\"circuit\":\"../x\",\"fds\":2,"
                  "\"out_dir\":{\"fd\":0,\"path\":\"/o\"},"
                  "\"witnesses\":[{\"fd\":1,\"path\":\"/w\"}]}",
                  PROTO_E_BAD_REQUEST, "circuit's name");
    check_refused("{\"req\":\"submit\",\"fds\":2,\"zkey\":{\"fd\":0,\"path\":\"/z\"},"
                  "\"out_dir\":{\"fd\":0,\"path\":\"/o\"},"
                  "\"inputs\":[{\"fd\":1,\"path\":\"/i.json\"}]}",
                  PROTO_E_BAD_REQUEST, "witness_gen");
    ck_assert_int_eq(parse("{\"req\":\"circuits\"}", &r, &e), 0);
    ck_assert_int_eq(r.kind, CONTROL_CIRCUITS);
    control_req_free(&r);
    ck_assert_int_eq(parse("{\"req\":\"reload\"}", &r, &e), 0);
    ck_assert_int_eq(r.kind, CONTROL_RELOAD);
    control_req_free(&r);
}
END_TEST

TEST(test_control_parses_submit_of_inputs, 1)
{
    struct control_req r;
    struct control_err e;

    /* input.json jobs pass the generator and each input as descriptors too */
    ck_assert_int_eq(parse("{\"req\":\"submit\",\"fds\":4,\"zkey\":{\"fd\":0,\"path\":\"/z\"},"
                           "\"out_dir\":{\"fd\":1,\"path\":\"/o\"},\"inputs\":[{\"fd\":2,"
                           "\"path\":\"/in1.json\"}],\"witness_gen\":{\"fd\":3,\"path\":"
                           "\"/g.wgen\"}}",
                           &r, &e),
                     0);
    ck_assert_uint_eq(r.n_witnesses, 1);
    ck_assert_str_eq(r.witnesses[0], "/in1.json");
    ck_assert_int_eq(r.witness_fd[0], 2);
    ck_assert_str_eq(r.witness_gen, "/g.wgen");
    ck_assert_int_eq(r.witness_gen_fd, 3);
    control_req_free(&r);
    ck_assert_int_eq(parse("{\"req\":\"submit\",\"fds\":3,\"zkey\":{\"fd\":0,\"path\":\"/z\"},"
                           "\"out_dir\":{\"fd\":1,\"path\":\"/o\"},\"witnesses\":[{\"fd\":2,"
                           "\"path\":\"/a.wtns\"}]}",
                           &r, &e),
                     0);
    ck_assert_ptr_null(r.witness_gen);
    ck_assert_int_eq(r.witness_gen_fd, -1);
    control_req_free(&r);
    /* a generator or an input named by path only: refused like any other file */
    check_refused("{\"req\":\"submit\",\"fds\":3,\"zkey\":{\"fd\":0,\"path\":\"/z\"},"
                  "\"out_dir\":{\"fd\":1,\"path\":\"/o\"},\"inputs\":[{\"fd\":2,"
                  "\"path\":\"/in1.json\"}],\"witness_gen\":\"/g.wgen\"}",
                  PROTO_E_BAD_REQUEST, "SCM_RIGHTS");
    check_refused("{\"req\":\"submit\",\"fds\":3,\"zkey\":{\"fd\":0,\"path\":\"/z\"},"
                  "\"out_dir\":{\"fd\":1,\"path\":\"/o\"},\"inputs\":[\"/in1.json\"],"
                  "\"witness_gen\":{\"fd\":2,\"path\":\"/g.wgen\"}}",
                  PROTO_E_BAD_REQUEST, "SCM_RIGHTS");
}
END_TEST

/* "inputs_batch": N input.json framed in one descriptor (the HTTP API's array body):
 * N partitions named 0..N-1, each on that descriptor; one of the three lists only. */
TEST(test_control_parses_inputs_batch, 1)
{
    struct control_req r;
    struct control_err e;

    ck_assert_int_eq(parse("{\"req\":\"submit\",\"circuit\":\"mul\",\"fds\":1,\"results\":\"store\","
                           "\"inputs_batch\":{\"fd\":0,\"path\":\"body.json\",\"count\":4096}}",
                           &r, &e),
                     0);
    ck_assert_int_eq(r.inputs, 1);
    ck_assert_uint_eq(r.n_witnesses, 4096);
    ck_assert_str_eq(r.batch_path, "body.json");
    ck_assert_int_eq(r.batch_fd, 0);
    ck_assert_str_eq(r.witnesses[0], "input-0.json");
    ck_assert_str_eq(r.witness_names[4095], "4095");
    ck_assert_int_eq(r.witness_fd[4095], 0);
    control_req_free(&r);
    check_refused("{\"req\":\"submit\",\"circuit\":\"mul\",\"fds\":1,\"results\":\"store\","
                  "\"inputs_batch\":{\"fd\":0,\"path\":\"b\",\"count\":0}}",
                  PROTO_E_BAD_REQUEST, "count");
    check_refused("{\"req\":\"submit\",\"circuit\":\"mul\",\"fds\":1,\"results\":\"store\","
                  "\"inputs_batch\":{\"fd\":1,\"path\":\"b\",\"count\":2}}",
                  PROTO_E_BAD_REQUEST, "fd 1");
    check_refused("{\"req\":\"submit\",\"circuit\":\"mul\",\"fds\":2,\"results\":\"store\","
                  "\"inputs\":[{\"fd\":1,\"path\":\"/i.json\"}],"
                  "\"inputs_batch\":{\"fd\":0,\"path\":\"b\",\"count\":2}}",
                  PROTO_E_BAD_REQUEST, "one of them");
}
END_TEST

TEST(test_control_rejects_bad_requests_with_codes, 1)
{
    static const struct {
        const char *line, *code;
    } cases[] = {
        { "{\"req\":", PROTO_E_BAD_JSON },
        { "42", PROTO_E_BAD_JSON },
        { "{}", PROTO_E_BAD_REQUEST },
        { "{\"req\":\"nope\"}", PROTO_E_UNKNOWN },
        { "{\"req\":\"submit\",\"zkey\":\"/z\",\"out_dir\":\"/o\",\"witnesses\":[]}", PROTO_E_BAD_REQUEST },
        { "{\"req\":\"submit\",\"zkey\":\"/z\",\"out_dir\":\"/o\",\"witnesses\":[1]}", PROTO_E_BAD_REQUEST },
        /* input.json jobs: a generator, one list, not both */
        { "{\"req\":\"submit\",\"fds\":4,\"zkey\":{\"fd\":0,\"path\":\"/z\"},\"out_dir\":{\"fd\":1,\"path\":\"/o\"},\"inputs\":[{\"fd\":2,"
          "\"path\":\"/i.json\"}]}",
          PROTO_E_BAD_REQUEST },
        { "{\"req\":\"submit\",\"fds\":4,\"zkey\":{\"fd\":0,\"path\":\"/z\"},\"out_dir\":{\"fd\":1,\"path\":\"/o\"},\"inputs\":[{\"fd\":2,"
          "\"path\":\"/i.json\"}],\"witnesses\":[{\"fd\":2,\"path\":\"/w.wtns\"}],"
          "\"witness_gen\":{\"fd\":3,\"path\":\"/g\"}}",
          PROTO_E_BAD_REQUEST },
        { "{\"req\":\"submit\",\"fds\":4,\"zkey\":{\"fd\":0,\"path\":\"/z\"},\"out_dir\":{\"fd\":1,\"path\":\"/o\"},\"witnesses\":[{\"fd\":2,"
          "\"path\":\"/w.wtns\"}],\"witness_gen\":{\"fd\":3,\"path\":\"/g\"}}",
          PROTO_E_BAD_REQUEST },
        { "{\"req\":\"submit\",\"fds\":4,\"zkey\":{\"fd\":0,\"path\":\"/z\"},\"out_dir\":{\"fd\":1,\"path\":\"/o\"},\"inputs\":[],"
          "\"witness_gen\":{\"fd\":3,\"path\":\"/g\"}}",
          PROTO_E_BAD_REQUEST },
        { "{\"req\":\"wait\"}", PROTO_E_BAD_REQUEST },
        { "{\"req\":\"wait\",\"job\":-1}", PROTO_E_BAD_REQUEST },
        { "{\"req\":\"restart\",\"stage\":\"gpu\"}", PROTO_E_BAD_REQUEST },
        { "{\"req\":\"status\",\"req\":\"drain\"}", PROTO_E_BAD_JSON },
    };
    for (size_t i = 0; i < TEST_N(cases); i++) check_refused(cases[i].line, cases[i].code, NULL);
}
END_TEST

struct lines {
    int n, oversized;
    char last[64];
};

static int on_line(void *arg, const char *line, size_t len)
{
    struct lines *l = arg;

    if (!line) {
        l->oversized++;
        return 0;
    }
    l->n++;
    snprintf(l->last, sizeof(l->last), "%.*s", (int)len, line);
    return 0;
}

/* The fields of a client that keeps no files (the HTTP API) and the proof request. */
TEST(test_control_parses_store_results_and_proof, 1)
{
    static const char sha[] = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    struct control_req r;
    struct control_err e;
    char line[512];

    snprintf(line, sizeof(line),
             "{\"req\":\"submit\",\"circuit\":\"c\",\"fds\":1,\"witnesses\":[{\"fd\":0,\"path\":\"a\"}],"
             "\"results\":\"store\",\"tenant\":\"acme-1.x\",\"idempotency_key\":\"k 1/~\","
             "\"body_sha256\":\"%s\"}",
             sha);
    ck_assert_msg(parse(line, &r, &e) == 0, "%s", e.message);
    ck_assert_int_eq(r.results_store, 1);
    ck_assert_int_eq(r.out_fd, -1);
    ck_assert_ptr_null(r.out_dir);
    ck_assert_str_eq(r.tenant, "acme-1.x");
    ck_assert_str_eq(r.idem_key, "k 1/~");
    ck_assert_str_eq(r.body_sha256, sha);
    control_req_free(&r);
    ck_assert_int_eq(parse("{\"req\":\"proof\",\"job\":7,\"index\":2}", &r, &e), 0);
    ck_assert_int_eq(r.kind, CONTROL_PROOF);
    ck_assert_int_eq(r.job, 7);
    ck_assert_int_eq(r.index, 2);
    control_req_free(&r);
#define SUB "{\"req\":\"submit\",\"circuit\":\"c\",\"fds\":1,\"witnesses\":[{\"fd\":0,\"path\":\"a\"}]"
    check_refused(SUB ",\"results\":\"disk\"}", PROTO_E_BAD_REQUEST, "results");
    check_refused(SUB ",\"results\":\"store\",\"out_dir\":{\"fd\":0,\"path\":\"o\"}}", PROTO_E_BAD_REQUEST,
                  "not both");
    check_refused(SUB "}", PROTO_E_BAD_REQUEST, "out_dir");
    check_refused(SUB ",\"results\":\"store\",\"tenant\":\"a/b\"}", PROTO_E_BAD_REQUEST, "tenant");
    check_refused(SUB ",\"results\":\"store\",\"idempotency_key\":\"k\"}", PROTO_E_BAD_REQUEST,
                  "body_sha256");
    check_refused(SUB ",\"results\":\"store\",\"idempotency_key\":\"k\\n\",\"body_sha256\":\"00\"}",
                  PROTO_E_BAD_REQUEST, "idempotency_key");
    check_refused(SUB ",\"results\":\"store\",\"idempotency_key\":\"k\",\"body_sha256\":\"00\"}",
                  PROTO_E_BAD_REQUEST, "64 lower-case hex");
    check_refused(SUB ",\"results\":\"store\",\"body_sha256\":\"00\"}", PROTO_E_BAD_REQUEST, NULL);
#undef SUB
    check_refused("{\"req\":\"proof\",\"job\":7}", PROTO_E_BAD_REQUEST, "index");
    check_refused("{\"req\":\"proof\",\"index\":0}", PROTO_E_BAD_REQUEST, "job");
}
END_TEST

/* jobs: its filters, page and default limit; proofs: a range; a submit's metadata,
 * within proto_metadata_valid's bounds. */
TEST(test_control_parses_jobs_proofs_and_metadata, 1)
{
    struct control_req r;
    struct control_err e;
    char line[1024];

    ck_assert_int_eq(parse("{\"req\":\"jobs\",\"tenant\":\"acme\",\"state\":\"cancelled\","
                           "\"circuit\":\"mul\",\"since\":17,\"before\":9,\"limit\":200}",
                           &r, &e),
                     0);
    ck_assert_int_eq(r.kind, CONTROL_JOBS);
    ck_assert_str_eq(r.tenant, "acme");
    ck_assert_str_eq(r.state_filter, "cancelled");
    ck_assert_str_eq(r.circuit_filter, "mul");
    ck_assert(r.since == 17 && r.before == 9 && r.limit == 200);
    control_req_free(&r);
    ck_assert_int_eq(parse("{\"req\":\"jobs\"}", &r, &e), 0);
    ck_assert_int_eq(r.limit, PROTO_JOBS_PAGE_DEFAULT);
    control_req_free(&r);
    check_refused("{\"req\":\"jobs\",\"state\":\"queued\"}", PROTO_E_BAD_REQUEST, "state");
    check_refused("{\"req\":\"jobs\",\"limit\":201}", PROTO_E_BAD_REQUEST, "limit");
    check_refused("{\"req\":\"jobs\",\"limit\":0}", PROTO_E_BAD_REQUEST, "limit");
    check_refused("{\"req\":\"jobs\",\"before\":0}", PROTO_E_BAD_REQUEST, "before");
    ck_assert_int_eq(parse("{\"req\":\"proofs\",\"job\":7,\"index\":2,\"count\":2048}", &r, &e), 0);
    ck_assert(r.kind == CONTROL_PROOFS && r.job == 7 && r.index == 2 && r.count == 2048);
    control_req_free(&r);
    check_refused("{\"req\":\"proofs\",\"job\":7,\"index\":0,\"count\":2049}", PROTO_E_BAD_REQUEST, "count");
#define SUB                                                                                                  \
    "{\"req\":\"submit\",\"circuit\":\"c\",\"fds\":1,\"witnesses\":[{\"fd\":0,\"path\":\"a\"}],\"results\":" \
    "\"store\""
    ck_assert_msg(parse(SUB ",\"metadata\":{\"order\":\"17\",\"n\":3,\"ok\":true,\"none\":null}}", &r, &e) ==
                      0,
                  "%s", e.message);
    ck_assert_str_eq(json_string_value(json_object_get(r.metadata, "order")), "17");
    control_req_free(&r);
    check_refused(SUB ",\"metadata\":[1]}", PROTO_E_BAD_REQUEST, "object");
    check_refused(SUB ",\"metadata\":{\"a\":{\"b\":1}}}", PROTO_E_BAD_REQUEST, "a value");
    check_refused(SUB ",\"metadata\":{\"\":\"x\"}}", PROTO_E_BAD_REQUEST, "1 to 40");
    snprintf(line, sizeof(line), SUB ",\"metadata\":{\"%041d\":\"x\"}}", 0);
    check_refused(line, PROTO_E_BAD_REQUEST, "1 to 40");
    snprintf(line, sizeof(line), SUB ",\"metadata\":{\"%040d\":\"x\"}}", 0); /* 40: taken */
    ck_assert_msg(parse(line, &r, &e) == 0, "%s", e.message);
    control_req_free(&r);
    snprintf(line, sizeof(line), SUB ",\"metadata\":{\"v\":\"%0501d\"}}", 0);
    check_refused(line, PROTO_E_BAD_REQUEST, "500");
    check_refused(SUB
                  ",\"metadata\":{\"a\":1,\"b\":1,\"c\":1,\"d\":1,\"e\":1,\"f\":1,\"g\":1,\"h\":1,\"i\":1,"
                  "\"j\":1,\"k\":1,\"l\":1,\"m\":1,\"n\":1,\"o\":1,\"p\":1,\"q\":1}}",
                  PROTO_E_BAD_REQUEST, "16");
#undef SUB
}
END_TEST

TEST(test_control_framer_splits_and_drops_oversized, 1)
{
    struct control_framer f = { 0 };
    struct lines l = { 0 };
    char *big = malloc(PROTO_LINE_MAX + 100);

    ck_assert_int_eq(control_framer_feed(&f, "{\"a\":1}\n{\"b\"", 12, on_line, &l), 0);
    ck_assert_int_eq(l.n, 1);
    ck_assert_int_eq(control_framer_feed(&f, ":2}\r\n", 5, on_line, &l), 0);
    ck_assert_int_eq(l.n, 2);
    ck_assert_str_eq(l.last, "{\"b\":2}");
    memset(big, 'x', PROTO_LINE_MAX + 100);
    /* in two pieces, the newline in a later one: reported once, then framing recovers */
    ck_assert_int_eq(control_framer_feed(&f, big, PROTO_LINE_MAX + 100, on_line, &l), 0);
    ck_assert_int_eq(control_framer_feed(&f, big, 10, on_line, &l), 0);
    ck_assert_int_eq(control_framer_feed(&f, "\n{}\n", 4, on_line, &l), 0);
    ck_assert_int_eq(l.oversized, 1);
    ck_assert_int_eq(l.n, 3);
    ck_assert_str_eq(l.last, "{}");
    control_framer_free(&f);
    free(big);
}
END_TEST

TEST(test_control_replies_are_one_line, 1)
{
    char *e = control_reply_error(PROTO_E_NO_JOB, "no job 7");
    char *o = control_reply_ok(json_pack("{s:i}", "job", 7));

    ck_assert_str_eq(e, "{\"ok\":false,\"error\":\"no_such_job\",\"message\":\"no job 7\"}\n");
    ck_assert_ptr_nonnull(strstr(o, "\"ok\":true"));
    ck_assert_ptr_nonnull(strstr(o, "\"job\":7"));
    ck_assert_int_eq(o[strlen(o) - 1], '\n');
    free(e);
    free(o);
}
END_TEST

TEST(test_control_wtns_name, 1)
{
    char n[PIPE_NAME_LEN];

    ck_assert_int_eq(proto_wtns_name("/a/b/w1.wtns", n, sizeof(n)), 0);
    ck_assert_str_eq(n, "w1");
    ck_assert_int_eq(proto_wtns_name("plain", n, sizeof(n)), 0);
    ck_assert_str_eq(n, "plain");
    ck_assert_int_eq(proto_wtns_name("/a/.wtns", n, sizeof(n)), 0); /* kept: name ".wtns" */
    ck_assert_int_eq(proto_wtns_name("/a/", n, sizeof(n)), -EINVAL);
    ck_assert_int_eq(proto_wtns_name("/a/in1.json", n, sizeof(n)), 0); /* input.json jobs */
    ck_assert_str_eq(n, "in1");
}
END_TEST

int main(void)
{
    return test_main("control", NULL);
}
