/* hugemem.h — large scratch vectors on transparent huge pages.
 *
 * A one-shot prover touches every page of its vectors (a, b, c, the NTT domain, MSM
 * scratch) once, right after allocating them: on the VMs we measured, those first-touch
 * faults of 4 KiB pages were a visible share of a proof (base/hugemem.c has the numbers).
 * 2 MiB pages make 512 times fewer. */
#ifndef CUZK_HUGEMEM_H
#define CUZK_HUGEMEM_H

#include <stddef.h>

/* bytes of memory aligned to 64 bytes, free()d as usual; from 2 MiB on, 2 MiB-aligned
 * and advised for transparent huge pages (madvise MADV_HUGEPAGE: advice only, the
 * memory is the same without it). NULL when out of memory. */
void *huge_alloc(size_t bytes);

#endif
