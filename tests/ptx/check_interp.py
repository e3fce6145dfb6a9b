"""check_interp.py — the interpreter's own checks, on hand-written PTX: carry chains
(add.cc/addc.cc/addc, sub.cc/subc, mad.lo.cc/madc.hi.cc) against Python's integers on
random and all-ones words; a dropped carry of 1 counted (overwritten, at a return, the
overflow of a chain's last instruction) and a carry of 0 not; the flag poisoned after a
call; a .param call with a by-value struct and a return value; signed compares,
shifts, bfi, cvt, predicates and a loop."""

import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptxrt  # noqa: E402

PTX = r"""
.version 9.0
.target sm_90
.address_size 64

.func  (.param .align 8 .b8 func_retval0[16]) swap16(
	.param .align 8 .b8 swap16_param_0[16]
)
{
	.reg .b64 	%rd<3>;
	ld.param.v2.u64 	{%rd1, %rd2}, [swap16_param_0];
	st.param.b64 	[func_retval0+0], %rd2;
	st.param.b64 	[func_retval0+8], %rd1;
	ret;
}

// r[0..2] = a[0..2] + b[0..2] as 96-bit numbers, a borrow chain into r[3..5]; mul chain
.visible .entry chain(
	.param .u64 chain_param_0,
	.param .u64 chain_param_1,
	.param .u64 chain_param_2
)
{
	.reg .pred 	%p<4>;
	.reg .b32 	%r<40>;
	.reg .b64 	%rd<12>;
	ld.param.u64 	%rd1, [chain_param_0];
	ld.param.u64 	%rd2, [chain_param_1];
	ld.param.u64 	%rd3, [chain_param_2];
	cvta.to.global.u64 	%rd1, %rd1;
	mov.u32 	%r30, %tid.x;
	mul.wide.u32 	%rd4, %r30, 12;
	add.s64 	%rd5, %rd1, %rd4;
	add.s64 	%rd6, %rd2, %rd4;
	mul.wide.u32 	%rd7, %r30, 44;
	add.s64 	%rd8, %rd3, %rd7;
	ld.global.u32 	%r1, [%rd5];
	ld.global.u32 	%r2, [%rd5+4];
	ld.global.u32 	%r3, [%rd5+8];
	ld.global.u32 	%r4, [%rd6];
	ld.global.u32 	%r5, [%rd6+4];
	ld.global.u32 	%r6, [%rd6+8];
	add.cc.u32 %r7, %r1, %r4;
	addc.cc.u32 %r8, %r2, %r5;
	addc.cc.u32 %r9, %r3, %r6;
	addc.u32 %r10, 0, 0;
	st.global.u32 	[%rd8], %r7;
	st.global.u32 	[%rd8+4], %r8;
	st.global.u32 	[%rd8+8], %r9;
	st.global.u32 	[%rd8+12], %r10;
	sub.cc.u32 %r11, %r1, %r4;
	subc.cc.u32 %r12, %r2, %r5;
	subc.cc.u32 %r13, %r3, %r6;
	subc.u32 %r14, 0, 0;
	st.global.u32 	[%rd8+16], %r11;
	st.global.u32 	[%rd8+20], %r12;
	st.global.u32 	[%rd8+24], %r13;
	st.global.u32 	[%rd8+28], %r14;
	mad.lo.cc.u32 %r15, %r1, %r4, %r2;
	madc.hi.cc.u32 %r16, %r1, %r4, %r5;
	madc.lo.u32 %r17, 0, 0, 0;
	st.global.u32 	[%rd8+32], %r15;
	st.global.u32 	[%rd8+36], %r16;
	st.global.u32 	[%rd8+40], %r17;
	ret;
}

// a + b: add.cc then add.cc (the first carry overwritten) and an addc that overflows
.visible .entry drop(
	.param .u32 drop_param_0,
	.param .u32 drop_param_1,
	.param .u32 drop_param_2
)
{
	.reg .pred 	%p<2>;
	.reg .b32 	%r<9>;
	ld.param.u32 	%r1, [drop_param_0];
	ld.param.u32 	%r2, [drop_param_1];
	ld.param.u32 	%r3, [drop_param_2];
	setp.eq.s32 	%p1, %r3, 1;
	@%p1 bra 	$L__AT_RET;
	setp.eq.s32 	%p1, %r3, 2;
	@%p1 bra 	$L__LAST;
	add.cc.u32 %r4, %r1, %r2;
	add.cc.u32 %r5, %r1, 0;
	addc.u32 %r6, 0, 0;
	ret;
$L__AT_RET:
	add.cc.u32 %r4, %r1, %r2;
	ret;
$L__LAST:
	add.cc.u32 %r4, 0, 0;
	addc.u32 %r4, %r1, %r2;
	ret;
}

// a carry read after a call: undefined
.visible .entry poison(
	.param .u32 poison_param_0
)
{
	.reg .b32 	%r<9>;
	.reg .b64 	%rd<4>;
	ld.param.u32 	%r1, [poison_param_0];
	add.cc.u32 %r4, %r1, %r1;
	{ // callseq 0, 0
	.param .align 8 .b8 param0[16];
	st.param.b64 	[param0+0], 1;
	st.param.b64 	[param0+8], 2;
	.param .align 8 .b8 retval0[16];
	call.uni (retval0),
	swap16,
	(
	param0
	);
	ld.param.b64 	%rd1, [retval0+0];
	} // callseq 0
	addc.u32 %r5, %r1, 0;
	ret;
}

// out[0..1] = swap16(v[0..1]); out[2] = sum of i for i < n (a loop); signed/shift/bfi
.visible .entry misc(
	.param .u64 misc_param_0,
	.param .u32 misc_param_1
)
{
	.reg .pred 	%p<6>;
	.reg .b32 	%r<20>;
	.reg .b64 	%rd<20>;
	ld.param.u64 	%rd1, [misc_param_0];
	ld.param.u32 	%r1, [misc_param_1];
	ld.global.u64 	%rd2, [%rd1];
	ld.global.u64 	%rd3, [%rd1+8];
	{ // callseq 1, 0
	.param .align 8 .b8 param0[16];
	st.param.v2.b64 	[param0+0], {%rd2, %rd3};
	.param .align 8 .b8 retval0[16];
	call.uni (retval0),
	swap16,
	(
	param0
	);
	ld.param.b64 	%rd4, [retval0+0];
	ld.param.b64 	%rd5, [retval0+8];
	} // callseq 1
	st.global.v2.u64 	[%rd1], {%rd4, %rd5};
	mov.u32 	%r2, 0;
	mov.u32 	%r3, 0;
$L__LOOP:
	setp.ge.u32 	%p1, %r3, %r1;
	@%p1 bra 	$L__DONE;
	add.s32 	%r2, %r2, %r3;
	add.s32 	%r3, %r3, 1;
	bra.uni 	$L__LOOP;
$L__DONE:
	cvt.u64.u32 	%rd6, %r2;
	st.global.u64 	[%rd1+16], %rd6;
	mov.u32 	%r4, -5;
	setp.lt.s32 	%p2, %r4, 0;
	setp.lt.u32 	%p3, %r4, 0;
	selp.u32 	%r5, 1, 0, %p2;
	selp.u32 	%r6, 2, 0, %p3;
	or.b32 	%r7, %r5, %r6;
	shr.s32 	%r8, %r4, 1;
	cvt.s64.s32 	%rd7, %r8;
	st.global.u64 	[%rd1+24], %rd7;
	bfi.b64 	%rd8, %rd2, %rd3, 32, 32;
	st.global.u64 	[%rd1+32], %rd8;
	st.global.u32 	[%rd1+40], %r7;
	ret;
}
"""


def main():
    mod = ptxrt.load(PTX, ["chain", "drop", "poison", "misc"])
    rnd = random.Random(5)
    fails = 0
    M = 2**32 - 1
    words = [0, 1, M, M - 1, 2**31]
    vals = [(rnd.choice(words) if rnd.random() < 0.5 else rnd.randrange(2**32)) for _ in range(6 * 64)]
    d = ptxrt.Device(mod, size=1 << 20)
    a, b, r = d.put(vals[: 3 * 64], "I"), d.put(vals[3 * 64:], "I"), d.zeros(11 * 64, 4)
    del ptxrt.DROPS[:]
    d.launch("chain", 1, 64, [a, b, r])
    out = d.get(r, 11 * 64, "I")
    bad, borrows = 0, 0
    for t in range(64):
        x = sum(vals[3 * t + i] << 32 * i for i in range(3))
        y = sum(vals[3 * 64 + 3 * t + i] << 32 * i for i in range(3))
        o = out[11 * t:11 * t + 11]
        s = sum(o[i] << 32 * i for i in range(4))
        df = sum(o[4 + i] << 32 * i for i in range(4))
        lo = (vals[3 * t] * vals[3 * 64 + 3 * t] & M) + vals[3 * t + 1]
        hi = (vals[3 * t] * vals[3 * 64 + 3 * t] >> 32) + vals[3 * 64 + 3 * t + 1] + (lo >> 32)
        bad += s != x + y or df != (x - y) % 2**128 or o[8] != lo & M or o[9] != hi & M or o[10] != hi >> 32
        borrows += x < y
    # the add and mad chains end in an instruction that takes their carry: nothing dropped;
    # the sub chain's last subc drops its borrow where x < y (the sign word is all ones)
    bad += len(ptxrt.DROPS) != borrows
    fails += bool(bad)
    print("%s carry chains (add/addc, sub/subc, mad/madc): %d of 64 threads wrong or dropping" % (
        "ok  " if not bad else "FAIL", bad))
    cases = [((M, 1, 0), 1), ((5, 6, 0), 0), ((M, 1, 1), 1), ((1, 1, 1), 0), ((M, 1, 2), 1), ((M, 0, 2), 0)]
    for args, want in cases:
        del ptxrt.DROPS[:]
        d.launch("drop", 1, 1, list(args))
        ok = len(ptxrt.DROPS) == want
        fails += not ok
        print("%s dropped carries counted: drop%s -> %d (want %d)" % ("ok  " if ok else "FAIL", args,
                                                                     len(ptxrt.DROPS), want))
    try:
        d.launch("poison", 1, 1, [3])
        print("FAIL a carry read after a call went unnoticed")
        fails += 1
    except ptxrt.CarryPoison:
        print("ok   a carry read after a call fails (the flag is poisoned across calls)")
    v = d.put([0x1111, 0x2222, 0, 0, 0, 0])
    d.launch("misc", 1, 1, [v, 10])
    o = d.get(v, 5) + d.get(v + 40, 1, "I")
    want = [0x2222, 0x1111, 45, (-3) % 2**64, 0x1111 << 32 | 0x2222, 1]
    ok = o == want
    fails += not ok
    print("%s .param call by value with a return value, a loop, signed ops, bfi: %s" % (
        "ok  " if ok else "FAIL", "as expected" if ok else "%s, want %s" % (o, want)))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
