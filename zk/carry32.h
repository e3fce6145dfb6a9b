/* carry32.h — 32-bit multiply-add with a carry flag, the device's carry chains, behind
 * one small shim so that the product written over them (fe_mul32_id, field.h) is one
 * source for the GPU and the CPU tests.
 *
 * Hopper has no 64x64 multiply: a product of 64-bit limbs with carries found by
 * comparison costs several 32-bit products per limb product plus the compares. PTX's
 * carry chains do it in one instruction per 32-bit half: mad.lo.cc / madc.lo.cc /
 * madc.hi.cc add a product half and the condition-code carry (CC.CF) to an accumulator
 * and set CC.CF again, add.cc / addc the same for plain sums (the form of sppark's
 * mont_t). The flag is a register the compiler does not see, so each operation here is
 * an `asm volatile` (kept in program order; nvcc emits no carry-setting instruction of
 * its own between them: its 64-bit arithmetic is add.s64, not add.cc).
 *
 * Host (and the CPU emulation of the kernels, tests/unit/test_gpu_emul.c): the same
 * operation in plain C, the flag in a variable the caller threads through every call
 * (c32_cc). Each definition below is the PTX ISA's for its instruction: a chain that
 * drops a carry on the device drops it here too, so the CPU tests see what the device
 * computes, except for PTX itself (checked on a GPU by bench/gpu-check.sh). */
#ifndef CUZK_CARRY32_H
#define CUZK_CARRY32_H

#include <stdint.h>

#include "zk/hd.h"

/* The carry flag: CC.CF on the device (this variable is then unused and vanishes). */
typedef struct {
    uint32_t cf;
} c32_cc;

#ifdef __CUDA_ARCH__
#define C32_ASM3(op, a, b, c)                                               \
    uint32_t d;                                                             \
    (void)cc;                                                               \
    asm volatile(op " %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c)); \
    return d
#define C32_ASM2(op, a, b)                                      \
    uint32_t d;                                                 \
    (void)cc;                                                   \
    asm volatile(op " %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b)); \
    return d
#endif

/* lo(a·b) and hi(a·b): no flag (mul.lo.u32 / mul.hi.u32, what nvcc emits for these). */
CUZK_HD uint32_t c32_mul_lo(uint32_t a, uint32_t b)
{
    return a * b;
}
CUZK_HD uint32_t c32_mul_hi(uint32_t a, uint32_t b)
{
#ifdef __CUDA_ARCH__
    return __umulhi(a, b);
#else
    return (uint32_t)(((uint64_t)a * b) >> 32);
#endif
}

/* mad.lo.cc.u32: lo(a·b) + c, carry out to the flag (no carry in). */
CUZK_HD uint32_t c32_mad_lo_cc(uint32_t a, uint32_t b, uint32_t c, c32_cc *cc)
{
#ifdef __CUDA_ARCH__
    C32_ASM3("mad.lo.cc.u32", a, b, c);
#else
    uint64_t s = (uint64_t)(uint32_t)(a * b) + c;
    cc->cf = (uint32_t)(s >> 32);
    return (uint32_t)s;
#endif
}

/* madc.lo.cc.u32: lo(a·b) + c + flag, carry out to the flag. */
CUZK_HD uint32_t c32_madc_lo_cc(uint32_t a, uint32_t b, uint32_t c, c32_cc *cc)
{
#ifdef __CUDA_ARCH__
    C32_ASM3("madc.lo.cc.u32", a, b, c);
#else
    uint64_t s = (uint64_t)(uint32_t)(a * b) + c + cc->cf;
    cc->cf = (uint32_t)(s >> 32);
    return (uint32_t)s;
#endif
}

/* madc.hi.cc.u32: hi(a·b) + c + flag, carry out to the flag. */
CUZK_HD uint32_t c32_madc_hi_cc(uint32_t a, uint32_t b, uint32_t c, c32_cc *cc)
{
#ifdef __CUDA_ARCH__
    C32_ASM3("madc.hi.cc.u32", a, b, c);
#else
    uint64_t s = (((uint64_t)a * b) >> 32) + c + cc->cf;
    cc->cf = (uint32_t)(s >> 32);
    return (uint32_t)s;
#endif
}

/* madc.hi.u32: hi(a·b) + c + flag; the flag is read, not written (a carry out is lost:
 * callers use it where none can occur). */
CUZK_HD uint32_t c32_madc_hi(uint32_t a, uint32_t b, uint32_t c, c32_cc *cc)
{
#ifdef __CUDA_ARCH__
    C32_ASM3("madc.hi.u32", a, b, c);
#else
    return (uint32_t)((((uint64_t)a * b) >> 32) + c + cc->cf);
#endif
}

/* add.cc.u32: a + b, carry out to the flag (no carry in). */
CUZK_HD uint32_t c32_add_cc(uint32_t a, uint32_t b, c32_cc *cc)
{
#ifdef __CUDA_ARCH__
    C32_ASM2("add.cc.u32", a, b);
#else
    uint64_t s = (uint64_t)a + b;
    cc->cf = (uint32_t)(s >> 32);
    return (uint32_t)s;
#endif
}

/* addc.cc.u32: a + b + flag, carry out to the flag. */
CUZK_HD uint32_t c32_addc_cc(uint32_t a, uint32_t b, c32_cc *cc)
{
#ifdef __CUDA_ARCH__
    C32_ASM2("addc.cc.u32", a, b);
#else
    uint64_t s = (uint64_t)a + b + cc->cf;
    cc->cf = (uint32_t)(s >> 32);
    return (uint32_t)s;
#endif
}

/* addc.u32: a + b + flag; the flag is read, not written. */
CUZK_HD uint32_t c32_addc(uint32_t a, uint32_t b, c32_cc *cc)
{
#ifdef __CUDA_ARCH__
    C32_ASM2("addc.u32", a, b);
#else
    return a + b + cc->cf;
#endif
}

#ifdef __CUDA_ARCH__
#undef C32_ASM3
#undef C32_ASM2
#endif

#endif
