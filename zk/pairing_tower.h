/* pairing_tower.h — what the pairing (zk/pairing.c) takes of the Fq2/Fq6/Fq12 tower
 * (zk/pairing_tower.c) beyond pairing.h's public fq12_* functions: the products that
 * take the parameters directly, the conjugation, the Frobenius map and the sparse
 * product by a line. Layout and tower as in pairing.h. */
#ifndef CUZK_PAIRING_TOWER_H
#define CUZK_PAIRING_TOWER_H

#include <stdint.h>

#include "zk/pairing.h"

/* Fq2: r = a (r may overlap a); r = conj(a); r = a * s for s in Fq. */
void fq2_copy(const field_desc *F, uint64_t *r, const uint64_t *a);
void fq2_conj(const field_desc *F, uint64_t *r, const uint64_t *a);
void fq2_mul_fq(const field_desc *F, uint64_t *r, const uint64_t *a, const uint64_t *s);

/* Fq12 (r may alias the operands): conj (= a^(q^6)), product, square, inverse, and
 * a^(q^k) for k = 1..3. */
void fq12_conj(const field_desc *F, uint64_t *r, const uint64_t *a);
void fq12_mul_pp(const pairing_params *pp, uint64_t *r, const uint64_t *a, const uint64_t *b);
void fq12_sqr_pp(const pairing_params *pp, uint64_t *r, const uint64_t *a);
void fq12_inv_pp(const pairing_params *pp, uint64_t *r, const uint64_t *a);
void fq12_frob(const pairing_params *pp, uint64_t *r, const uint64_t *a, unsigned k);
/* r = a^2 for a in the cyclotomic subgroup (a^(q^4 - q^2 + 1) = 1: any value after the
 * final exponentiation's whole easy part, (q^6 - 1)(q^2 + 1)), by Granger-Scott: about a third of fq12_sqr_pp's
 * products. Outside the subgroup the result is wrong. r may alias a. */
void fq12_cyclo_sqr_pp(const pairing_params *pp, uint64_t *r, const uint64_t *a);

/* f *= the line A0 + A1 w + A3 w^3 (D twist) or A3 + A1 w^2 + A0 w^3 (M twist), by a
 * sparse product (A0, A1, A3 in Fq2). */
void fq12_mul_line(const pairing_params *pp, uint64_t *f, const uint64_t *A0, const uint64_t *A1,
                   const uint64_t *A3);

#endif
