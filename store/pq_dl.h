/* pq_dl.h — libpq, loaded the first time the fleet queue is opened.
 *
 * Why: libpq pulls in about twenty shared libraries (GnuTLS, Kerberos, LDAP, SASL and
 * theirs), and a binary linked with -lpq pays for loading, relocating and
 * constructing all of them at every start, although only the fleet code
 * (store/fleet_pg.c) uses it. Loaded on demand, `cuzk prove-local` and `cuzk
 * --version` never touch them; a fleet user pays once, at fleet_open.
 *
 * The types stay libpq-fe.h's (compile time, libpq-dev); the table below is the
 * whole set of functions fleet_pg.c calls. A function added there needs its line here
 * and in pq_dl.c's name list. */
#ifndef CUZK_PQ_DL_H
#define CUZK_PQ_DL_H

#include <stddef.h>

#include <libpq-fe.h>

struct pq_api {
    PGconn *(*connectdb)(const char *conninfo);
    ConnStatusType (*status)(const PGconn *conn);
    char *(*error_message)(const PGconn *conn);
    void (*finish)(PGconn *conn);
    void (*reset)(PGconn *conn);
    PGresult *(*exec)(PGconn *conn, const char *query);
    PGresult *(*exec_params)(PGconn *conn, const char *command, int nParams, const Oid *paramTypes,
                             const char *const *paramValues, const int *paramLengths, const int *paramFormats,
                             int resultFormat);
    ExecStatusType (*result_status)(const PGresult *res);
    char *(*result_error_message)(const PGresult *res);
    int (*ntuples)(const PGresult *res);
    char *(*getvalue)(const PGresult *res, int tup_num, int field_num);
    int (*getisnull)(const PGresult *res, int tup_num, int field_num);
    char *(*cmd_tuples)(PGresult *res);
    void (*clear)(PGresult *res);
    int (*getlength)(const PGresult *res, int tup_num, int field_num);
    /* The job-end doorbell (fleet_listen, fleet_wait_notify). */
    int (*socket)(const PGconn *conn);
    int (*consume_input)(PGconn *conn);
    PGnotify *(*notifies)(PGconn *conn);
    void (*freemem)(void *ptr);
    /* Whether a connection string carries a password (fleet_url_has_password). */
    PQconninfoOption *(*conninfo_parse)(const char *conninfo, char **errmsg);
    void (*conninfo_free)(PQconninfoOption *options);
};

/* The table, libpq.so.5 loaded and every function resolved on the first call (once per
 * process, thread-safe); later calls return the same table. NULL when libpq cannot be
 * loaded or lacks a function: err then says so and what to install. */
const struct pq_api *pq_dl_load(char *err, size_t errlen);

#endif
