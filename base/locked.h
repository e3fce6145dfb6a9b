/* locked.h — a word its writers change under a mutex, read under the same mutex, so
 * that the reader gets a value no writer is halfway through (api/bell.c's count of
 * ended jobs, api/budget.c's bytes held). */
#ifndef CUZK_LOCKED_H
#define CUZK_LOCKED_H

#include <pthread.h>
#include <stdint.h>

static inline uint64_t locked_read_u64(pthread_mutex_t *mu, const uint64_t *v)
{
    uint64_t x;

    pthread_mutex_lock(mu);
    x = *v;
    pthread_mutex_unlock(mu);
    return x;
}

#endif
