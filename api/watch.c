/* watch.c — cuzk-api's one subscription to cuzkd's job ends (api.h): a thread holds
 * a single control connection with a "watch" request on it (protocol.h) and rings
 * each job_end line on the bell (bell.c), so the long polls of every tenant cost cuzkd
 * one connection, not one each. A lost connection is opened again (once a second
 * while cuzkd does not answer) and then rung as "anything may have ended" (id 0). */
#include "api.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "proto/ctl_client.h"

static void *watch_main(void *arg)
{
    int said = 0;

    (void)arg;
    for (;;) {
        struct proto_conn c = { .fd = -1 };
        json_t *rep = NULL, *ev;

        if (!proto_connect(&c, g_api.cfg.socket))
            rep = proto_request(&c, json_pack("{s:s}", "req", PROTO_REQ_WATCH), NULL, 0);
        if (!rep || !json_is_true(json_object_get(rep, "ok"))) {
            if (!said++)
                api_qlog("job ends: cuzkd does not take the watch (%s); trying again every second",
                         rep ? json_string_value(json_object_get(rep, "message")) ?: "refused" : c.err);
            json_decref(rep);
            proto_close(&c);
            sleep(1);
            continue;
        }
        json_decref(rep);
        if (said) api_qlog("job ends: watching again");
        said = 0;
        api_bell_ring(0); /* whatever ended while nobody watched */
        while ((ev = proto_read(&c))) {
            json_int_t job = json_integer_value(json_object_get(ev, "job"));

            if (job > 0) api_bell_ring((uint64_t)job);
            json_decref(ev);
        }
        api_qlog("job ends: %s; watching again", c.err);
        proto_close(&c);
        api_bell_ring(0);
        sleep(1);
    }
    return NULL;
}

int api_thread_start(void *(*fn)(void *), const char *what, char *err, size_t errlen)
{
    pthread_attr_t ta;
    pthread_t th;
    int rc;

    pthread_attr_init(&ta);
    pthread_attr_setdetachstate(&ta, PTHREAD_CREATE_DETACHED);
    rc = pthread_create(&th, &ta, fn, NULL);
    pthread_attr_destroy(&ta);
    if (rc) {
        snprintf(err, errlen, "%s: %s", what, strerror(rc));
        return -1;
    }
    return 0;
}

int api_watch_start(char *err, size_t errlen)
{
    return api_thread_start(watch_main, "the job-end watch's thread", err, errlen);
}
