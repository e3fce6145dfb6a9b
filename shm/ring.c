/* ring.c — Vyukov-style bounded MPMC ring of 32-bit values in shared memory.
 *
 * Positions. head and tail are free-running 64-bit unsigned counters; position p uses
 * cell p & mask. They are never reset, and all arithmetic on them is mod 2^64: head -
 * tail is the fill level even after head wraps past UINT64_MAX, and comparisons go
 * through the signed difference (int64_t)(a - b), which is right while the two values
 * are less than 2^62 positions apart (the ring holds at most 2^30). At 10^9 operations
 * per second a 64-bit counter wraps after 584 years, but the wrap is still tested
 * (ring_init_at), and 64 bits mean a producer stalled between reading head and its CAS
 * cannot be fooled by a counter that went all the way round (ABA), which a 32-bit
 * counter at 10^8 ops/s would allow after a 43-second SIGSTOP.
 *
 * Cell sequence encoding. For position p:
 *     seq == 2p      cell empty, waiting for the producer of p
 *     seq == 2p + 1  cell full, holding the value of p, waiting for its consumer
 * The consumer of p then stores 2(p + capacity): empty, waiting for the producer one
 * lap later. Vyukov's original uses p and p + 1; doubling keeps "full for p" (2p+1)
 * distinct from "empty for p+1" (2p+2) when capacity is 1.
 */
#include <cuzk/ring.h>

#include <errno.h>

static int is_pow2(uint32_t x)
{
	return x && !(x & (x - 1));
}

size_t ring_size_bytes(uint32_t capacity)
{
	if (!is_pow2(capacity) || capacity > RING_CAPACITY_MAX)
		return 0;
	return sizeof(struct ring) + (size_t)capacity * sizeof(struct ring_cell);
}

int ring_init_at(struct ring *r, uint32_t capacity, uint64_t start)
{
	if (!ring_size_bytes(capacity) || ((uintptr_t)r & (BARRIER_CACHE_LINE - 1)))
		return -EINVAL;
	r->magic = RING_MAGIC;
	r->capacity = capacity;
	r->mask = capacity - 1;
	for (unsigned i = 0; i < sizeof(r->reserved0) / sizeof(r->reserved0[0]); i++)
		r->reserved0[i] = 0;
	/* Relaxed stores: nobody else sees the ring until the segment's ready flag is
	 * published with release (segment_publish), which orders all of these. */
	barrier_store_relaxed(&r->head, start);
	barrier_store_relaxed(&r->tail, start);
	futex_waitq_init(&r->not_empty);
	futex_waitq_init(&r->not_full);
	for (uint32_t i = 0; i < capacity; i++) {
		uint64_t p = start + i;

		barrier_store_relaxed(&r->cells[p & r->mask].seq, 2 * p);
		r->cells[p & r->mask].value = 0;
		r->cells[p & r->mask].pad = 0;
	}
	return 0;
}

int ring_init(struct ring *r, uint32_t capacity)
{
	return ring_init_at(r, capacity, 0);
}

int ring_attach(const struct ring *r, size_t size)
{
	if (size < sizeof(struct ring) || r->magic != RING_MAGIC || !is_pow2(r->capacity) ||
	    r->capacity > RING_CAPACITY_MAX || r->mask != r->capacity - 1 ||
	    size < ring_size_bytes(r->capacity))
		return -EINVAL;
	return 0;
}

int ring_try_push(struct ring *r, uint32_t value)
{
	struct ring_cell *c;
	/* Relaxed: head is only a guess here; the CAS below validates it, and the value
	 * hand-off is ordered through the cell's seq, not through head. */
	uint64_t pos = barrier_load_relaxed(&r->head);

	for (;;) {
		c = &r->cells[pos & r->mask];
		/* A1: acquire pairs with R2 in ring_try_pop: the consumer of the previous lap
		 * has finished reading c->value before we overwrite it. */
		uint64_t seq = barrier_load_acquire(&c->seq);
		int64_t dif = (int64_t)(seq - 2 * pos);

		if (dif == 0) {
			/* Relaxed CAS: it only arbitrates which producer owns pos. On failure pos
			 * is reloaded with the current head. */
			if (barrier_cas_weak_relaxed(&r->head, &pos, pos + 1))
				break;
		} else if (dif < 0) {
			/* The cell still holds (or is being emptied of) the value from one lap
			 * earlier: the ring is full. */
			return -EAGAIN;
		} else {
			/* Another producer already took pos; catch up. */
			pos = barrier_load_relaxed(&r->head);
		}
	}
	c->value = value;
	/* R1: release publishes c->value; pairs with A2 in ring_try_pop. */
	barrier_store_release(&c->seq, 2 * pos + 1);
	futex_waitq_wake(&r->not_empty, 1);
	return 0;
}

int ring_try_pop(struct ring *r, uint32_t *value)
{
	struct ring_cell *c;
	/* Relaxed: as head in ring_try_push, validated by the CAS. */
	uint64_t pos = barrier_load_relaxed(&r->tail);
	uint32_t v;

	for (;;) {
		c = &r->cells[pos & r->mask];
		/* A2: acquire pairs with R1 in ring_try_push: c->value is the producer's. */
		uint64_t seq = barrier_load_acquire(&c->seq);
		int64_t dif = (int64_t)(seq - (2 * pos + 1));

		if (dif == 0) {
			/* Relaxed CAS: arbitration only, as in ring_try_push. */
			if (barrier_cas_weak_relaxed(&r->tail, &pos, pos + 1))
				break;
		} else if (dif < 0) {
			/* The producer of pos has not stored yet: empty (or a producer is
			 * mid-push; its wake will follow). */
			return -EAGAIN;
		} else {
			pos = barrier_load_relaxed(&r->tail);
		}
	}
	v = c->value;
	/* R2: release orders our read of c->value before the cell is handed to the next
	 * lap's producer; pairs with A1 in ring_try_push. */
	barrier_store_release(&c->seq, 2 * (pos + r->capacity));
	*value = v;
	futex_waitq_wake(&r->not_full, 1);
	return 0;
}

/* Shared body of the blocking calls: try, spin, then sleep on q until op succeeds. */
static int ring_wait(struct ring *r, uint32_t *value, int push, int64_t timeout_ns,
		     uint32_t spin_iters)
{
	struct futex_waitq *q = push ? &r->not_full : &r->not_empty;
	uint64_t deadline = 0;
	int rc;

#define RING_OP() (push ? ring_try_push(r, *value) : ring_try_pop(r, value))
	if ((rc = RING_OP()) != -EAGAIN || timeout_ns == 0)
		return rc;
	for (uint32_t i = 0; i < spin_iters; i++) {
		barrier_cpu_relax();
		if ((rc = RING_OP()) != -EAGAIN)
			return rc;
	}
	if (timeout_ns > 0)
		deadline = futex_now_ns() + (uint64_t)timeout_ns;
	for (;;) {
		uint32_t seq = futex_waitq_prepare(q);

		if ((rc = RING_OP()) != -EAGAIN) {
			futex_waitq_finish(q);
			return rc;
		}
		rc = futex_waitq_sleep(q, seq, deadline);
		futex_waitq_finish(q);
		if ((rc = RING_OP()) != -EAGAIN)
			return rc;
		if (deadline && futex_now_ns() >= deadline)
			return -ETIMEDOUT;
	}
#undef RING_OP
}

int ring_push_wait(struct ring *r, uint32_t value, int64_t timeout_ns, uint32_t spin_iters)
{
	return ring_wait(r, &value, 1, timeout_ns, spin_iters);
}

int ring_pop_wait(struct ring *r, uint32_t *value, int64_t timeout_ns, uint32_t spin_iters)
{
	return ring_wait(r, value, 0, timeout_ns, spin_iters);
}

int ring_push_timeout(struct ring *r, uint32_t value, int64_t timeout_ns)
{
	return ring_wait(r, &value, 1, timeout_ns, RING_SPIN_DEFAULT);
}

int ring_pop_timeout(struct ring *r, uint32_t *value, int64_t timeout_ns)
{
	return ring_wait(r, value, 0, timeout_ns, RING_SPIN_DEFAULT);
}

uint32_t ring_count(const struct ring *r)
{
	/* Relaxed: a display value; tail is read first so that, with head read after
	 * it, the difference is rarely negative; clamp for the rare case. */
	uint64_t t = barrier_load_relaxed(&((struct ring *)r)->tail);
	uint64_t h = barrier_load_relaxed(&((struct ring *)r)->head);
	int64_t n = (int64_t)(h - t);

	if (n < 0)
		return 0;
	return n > r->capacity ? r->capacity : (uint32_t)n;
}
