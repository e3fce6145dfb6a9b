/* budget.h — the bytes of request bodies cuzk-api holds at once (api/budget.c).
 *
 * Each body is kept in a memfd while it arrives and until cuzkd (or the queue's
 * database) has taken it: memory that is the process's, charged to its unit. A limit
 * per body (--max-body) does not bound their sum: --max-conns bodies at once would.
 * So every body's bytes are reserved here first, from its Content-Length when it has
 * one (before a byte is read) and otherwise as they arrive; a body that would pass
 * --max-inflight-body is refused with 503 and Retry-After, and one that would take
 * its tenant past half of it with 429, so that one tenant's uploads never leave the
 * others nothing. Released when the request ends. */
#ifndef CUZK_API_BUDGET_H
#define CUZK_API_BUDGET_H

#include <stdint.h>

#define API_INFLIGHT_DEFAULT (256ull << 20) /* --max-inflight-body when not given */

void api_budget_init(uint64_t total);
/* n more bytes for tenant: 0; -EAGAIN when the process would pass its budget (503),
 * -EDQUOT when the tenant would pass its share, half the budget (429). Nothing is
 * taken on failure. */
int api_budget_take(const char *tenant, uint64_t n);
void api_budget_give(const char *tenant, uint64_t n);
/* Bytes reserved now, by every request. */
uint64_t api_budget_used(void);

#endif
