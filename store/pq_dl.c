/* pq_dl.c — libpq loaded on demand (pq_dl.h). */
#include "store/pq_dl.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

/* The soname, not libpq.so (that link exists only with libpq-dev installed). */
#define PQ_SONAME "libpq.so.5"

static struct pq_api api;
static char load_err[256];
static int loaded;
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* Each slot of struct pq_api and the libpq symbol it holds, in the struct's order. */
static const struct {
    size_t off;
    const char *name;
} slots[] = {
#define SLOT(member, symbol)                     \
    {                                            \
        offsetof(struct pq_api, member), #symbol \
    }
    SLOT(connectdb, PQconnectdb),
    SLOT(status, PQstatus),
    SLOT(error_message, PQerrorMessage),
    SLOT(finish, PQfinish),
    SLOT(reset, PQreset),
    SLOT(exec, PQexec),
    SLOT(exec_params, PQexecParams),
    SLOT(result_status, PQresultStatus),
    SLOT(result_error_message, PQresultErrorMessage),
    SLOT(ntuples, PQntuples),
    SLOT(getvalue, PQgetvalue),
    SLOT(getisnull, PQgetisnull),
    SLOT(cmd_tuples, PQcmdTuples),
    SLOT(clear, PQclear),
    SLOT(getlength, PQgetlength),
    SLOT(socket, PQsocket),
    SLOT(consume_input, PQconsumeInput),
    SLOT(notifies, PQnotifies),
    SLOT(freemem, PQfreemem),
    SLOT(conninfo_parse, PQconninfoParse),
    SLOT(conninfo_free, PQconninfoFree),
#undef SLOT
};
_Static_assert(sizeof(slots) / sizeof(slots[0]) * sizeof(void (*)(void)) == sizeof(struct pq_api),
               "every member of struct pq_api has its line in slots[]");

static void load(void)
{
    /* RTLD_LOCAL: libpq's symbols (and its dependencies') stay out of the global
     * namespace, so they cannot interpose on anything the binary itself uses. The
     * handle is never closed: the table lives as long as the process. */
    void *h = dlopen(PQ_SONAME, RTLD_NOW | RTLD_LOCAL);
    const char *why;

    if (!h) {
        why = dlerror();
        snprintf(load_err, sizeof(load_err), "the fleet queue needs libpq (install libpq5): %s",
                 why ? why : PQ_SONAME);
        return;
    }
    for (size_t i = 0; i < sizeof(slots) / sizeof(slots[0]); i++) {
        void *fn = dlsym(h, slots[i].name);

        if (!fn) {
            snprintf(load_err, sizeof(load_err), "the fleet queue needs libpq (install libpq5): %s has no %s",
                     PQ_SONAME, slots[i].name);
            return;
        }
        /* POSIX guarantees that a dlsym result converts to a function pointer. */
        *(void **)((char *)&api + slots[i].off) = fn;
    }
    loaded = 1;
}

const struct pq_api *pq_dl_load(char *err, size_t errlen)
{
    pthread_once(&once, load);
    if (!loaded) {
        snprintf(err, errlen, "%s", load_err);
        return NULL;
    }
    return &api;
}
