"""ptx.py — a small interpreter of nvcc's PTX, for the kernels' integer code on the CPU.

Each PTX function is translated once into a Python function (registers become local
variables, basic blocks the arms of a dispatch tree) and run a thread at a time: the
interpretation cost is Python's own, not a decoder's per instruction. What it models:
integer and bitwise operations of every width, predicates and branches, `.param` calls
(by-value structs and return values in byte arrays), global, shared and local memory,
the special registers of a 1-D launch, barriers (a kernel with bar.sync runs as one
generator per thread, all of a block advanced barrier to barrier) and the carry flag of
add.cc/addc/sub.cc/subc/mad.cc/madc as an explicit variable.

The carry flag is poisoned (None) at a function's entry and after every call: a chain
that reads it there fails (PTX does not keep CC across a call). A carry is counted as
dropped (DROPS, with its PTX line) when a chain loses a 1: a carry-out overwritten by an
instruction that does not read it, still pending at a call or a return, or the overflow
of a chain's last instruction (addc, madc without .cc). What it does not see: ptxas's
machine code (register allocation, SASS scheduling) and anything between threads beyond
a block's barriers; floating point is refused. Unknown instructions are refused at
translation, never guessed. """

import re

from ptxparse import PtxError, parse, statements

__all__ = ["PtxError", "Translator", "parse", "statements"]  # the parsing re-exported

WIDTH = {"8": 8, "16": 16, "32": 32, "64": 64}
SPECIAL = {"%tid.x": "_tid", "%ntid.x": "_ntid", "%ctaid.x": "_ctaid", "%nctaid.x": "_nctaid",
           "%tid.y": "0", "%tid.z": "0", "%ctaid.y": "0", "%ctaid.z": "0",
           "%ntid.y": "1", "%ntid.z": "1", "%nctaid.y": "1", "%nctaid.z": "1"}


# ---- translation ----------------------------------------------------------------------

def _split_ops(s):
    out, depth, cur = [], 0, ""
    for ch in s:
        if ch in "{([":
            depth += 1
        elif ch in "})]":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


class Translator:
    def __init__(self, funcs, shared, mutate=None, cov=False):
        self.funcs, self.shared, self.cov = funcs, shared, cov
        self.mutate = mutate or {}

    def pyname(self, f):
        return "F_" + re.sub(r"\W", "_", f)

    def reg(self, r):
        if r in SPECIAL:
            return SPECIAL[r]
        if not re.match(r"%\w+$", r):
            raise PtxError("not a register: %r" % r)
        return "R_" + r[1:]

    def width_of(self, r):
        m = re.match(r"%([A-Za-z_]+)\d*$", r)
        if r in self.rw:
            return self.rw[r]
        if m and "%" + m.group(1) in self.rwp:
            return self.rwp["%" + m.group(1)]
        if r in SPECIAL:
            return 32
        raise PtxError("register %s has no declaration" % r)

    def src(self, s, w):
        """operand -> expression, as an unsigned value of width w"""
        s = s.strip()
        if s.startswith("%"):
            e = self.reg(s)
            if s in SPECIAL:
                return e
            rw = self.width_of(s)
            if rw == "pred":
                return e
            return e if rw <= w else "(%s & %d)" % (e, (1 << w) - 1)
        if re.match(r"^-?(0[xX][0-9a-fA-F]+|\d+)[uU]?$", s):
            return str(int(s.rstrip("uU"), 0) & ((1 << w) - 1))
        if s in self.shared:
            return str(self.shared[s][0])
        if s.startswith("__local_depot"):
            return "0"
        raise PtxError("operand %r is not modelled" % s)

    def signed(self, e, w):
        return "((%s ^ %d) - %d)" % (e, 1 << (w - 1), 1 << (w - 1))

    def addr(self, s):
        m = re.match(r"\[\s*([%\w$.]+)\s*(?:\+\s*(-?\d+))?\s*\]$", s)
        if not m:
            raise PtxError("address %r is not modelled" % s)
        base, off = m.group(1), int(m.group(2) or 0)
        if base in self.pmap:
            return self.pmap[base], off
        if base.startswith("%"):
            e = self.reg(base)
            return None, ("%s + %d" % (e, off)) if off else e
        if base in self.shared:
            return None, str(self.shared[base][0] + off)
        if base.startswith("__local_depot"):
            return None, str(off)
        raise PtxError("address base %r is not modelled" % base)

    def dest(self, d):
        return self.reg(d)

    # one instruction -> lines of Python
    def instr(self, ln, op, ops):
        o = op.split(".")
        base = o[0]
        types = [x for x in o if x[:1] in "usb" and x[1:] in WIDTH]
        t = types[-1] if types else None
        w = WIDTH[t[1:]] if t else None
        M = (1 << w) - 1 if w else None
        a = _split_ops(ops)
        D = lambda: self.dest(a[0])
        S = lambda i, ww=None: self.src(a[i], ww or w)
        sg = t and t[0] == "s"
        cc = "cc" in o
        k = ln
        L = []
        if base in ("mov",) and o[1:] and o[1] == "pred":
            return ["%s = %s" % (D(), S(1, 1))]
        if base == "mov":
            if a[1].startswith("{") or a[0].startswith("{"):
                if a[0].startswith("{"):  # unpack
                    parts = [x.strip() for x in a[0][1:-1].split(",")]
                    pw = w // len(parts)
                    src = S(1)
                    return ["%s = (%s >> %d) & %d" % (self.reg(p), src, i * pw, (1 << pw) - 1)
                            for i, p in enumerate(parts) if p != "_"]
                parts = [x.strip() for x in a[1][1:-1].split(",")]
                pw = w // len(parts)
                return ["%s = %s" % (D(), " | ".join("(%s << %d)" % (self.src(p, pw), i * pw)
                                                    for i, p in enumerate(parts)))]
            return ["%s = %s" % (D(), S(1))]
        if base in ("add", "sub", "addc", "subc"):
            rd = base in ("addc", "subc")
            sym = "+" if base.startswith("add") else "-"
            cin = (" %s _cf" % sym) if rd else ""
            if not (cc or rd):
                return ["%s = (%s %s %s) & %d" % (D(), S(1), sym, S(2), M)]
            return self.chain(k, rd, cc, "%s %s %s%s" % (S(1), sym, S(2), cin), w, D(), sym == "-")
        if base in ("mul", "mad", "madc"):
            mode = o[1]  # lo hi wide
            x, y = S(1), S(2)
            if sg:
                x, y = self.signed(x, w), self.signed(y, w)
            prod = "%s * %s" % (x, y)
            if mode == "lo":
                p = "((%s) & %d)" % (prod, M)
            elif mode == "hi":
                p = "(((%s) >> %d) & %d)" % (prod, w, M)
            elif mode == "wide":
                p = "((%s) & %d)" % (prod, (1 << 2 * w) - 1)
            else:
                raise PtxError("%s is not modelled" % op)
            ow = 2 * w if mode == "wide" else w
            if base == "mul":
                return ["%s = %s" % (D(), p)]
            c = self.src(a[3], ow)
            if base == "mad" and not cc:
                return ["%s = (%s + %s) & %d" % (D(), p, c, (1 << ow) - 1)]
            return self.chain(k, base == "madc", cc, "%s + %s%s" % (p, c, " + _cf" if base == "madc" else ""),
                              ow, D(), False)
        if base in ("div", "rem"):
            x, y = S(1), S(2)
            if sg:
                f = "_sdiv" if base == "div" else "_srem"
                return ["%s = %s(%s, %s) & %d" % (D(), f, self.signed(x, w), self.signed(y, w), M)]
            return ["%s = %s %s %s" % (D(), x, "//" if base == "div" else "%", y)]
        if base in ("and", "or", "xor"):
            if o[1] == "pred":
                sy = {"and": "&", "or": "|", "xor": "^"}[base]
                return ["%s = %s %s %s" % (D(), S(1, 1), sy, S(2, 1))]
            sy = {"and": "&", "or": "|", "xor": "^"}[base]
            return ["%s = %s %s %s" % (D(), S(1), sy, S(2))]
        if base == "not":
            if o[1] == "pred":
                return ["%s = not %s" % (D(), S(1, 1))]
            return ["%s = %s ^ %d" % (D(), S(1), M)]
        if base == "neg":
            return ["%s = (-%s) & %d" % (D(), S(1), M)]
        if base == "abs":
            return ["%s = abs(%s) & %d" % (D(), self.signed(S(1), w), M)]
        if base in ("min", "max"):
            x, y = S(1), S(2)
            if sg:
                return ["%s = %s(%s, %s) & %d" % (D(), base, self.signed(x, w), self.signed(y, w), M)]
            return ["%s = %s(%s, %s)" % (D(), base, x, y)]
        if base == "shl":
            n = self.src(a[2], 32)
            if n.isdigit():
                return ["%s = (%s << %s) & %d" % (D(), S(1), n, M) if int(n) < w else "%s = 0" % D()]
            return ["%s = (%s << %s) & %d if %s < %d else 0" % (D(), S(1), n, M, n, w)]
        if base == "shr":
            n = self.src(a[2], 32)
            if sg:
                return ["%s = (%s >> min(%s, %d)) & %d" % (D(), self.signed(S(1), w), n, w - 1, M)]
            return ["%s = %s >> %s" % (D(), S(1), n)]
        if base == "shf":
            lo, hi, n = S(1), S(2), self.src(a[3], 32)
            nn = "(%s & 31)" % n if "wrap" in o else "min(%s, 32)" % n
            if o[1] == "l":
                return ["%s = ((((%s << 32) | %s) << %s) >> 32) & %d" % (D(), hi, lo, nn, M)]
            return ["%s = ((((%s << 32) | %s) >> %s)) & %d" % (D(), hi, lo, nn, M)]
        if base == "setp":
            cmp, t2 = o[1], o[2]
            w2 = WIDTH[t2[1:]]
            if len(o) > 3:
                raise PtxError("%s is not modelled" % op)
            x, y = self.src(a[1], w2), self.src(a[2], w2)
            if t2[0] == "s":
                x, y = self.signed(x, w2), self.signed(y, w2)
            sy = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">=", "lo": "<",
                  "ls": "<=", "hi": ">", "hs": ">="}[cmp]
            dd = [p.strip() for p in a[0].split("|")]
            L = ["%s = %s %s %s" % (self.reg(dd[0]), x, sy, y)]
            if len(dd) > 1:
                L.append("%s = not %s" % (self.reg(dd[1]), self.reg(dd[0])))
            return L
        if base == "selp":
            return ["%s = %s if %s else %s" % (D(), S(1), self.src(a[3], 1), S(2))]
        if base == "cvt":
            dt, st = o[-2], o[-1]
            if dt[0] == "f" or st[0] == "f":
                raise PtxError("floating point (%s) is not modelled" % op)
            dw, sw = WIDTH[dt[1:]], WIDTH[st[1:]]
            v = self.src(a[1], sw)
            if st[0] == "s" and sw < dw:
                v = self.signed(v, sw)
            rw = self.width_of(a[0])
            v = "(%s) & %d" % (v, (1 << dw) - 1)
            if dt[0] == "s" and rw > dw:
                v = "%s & %d" % (self.signed("(%s)" % v, dw), (1 << rw) - 1)
            return ["%s = %s" % (D(), v)]
        if base == "cvta":
            if "global" not in o:
                raise PtxError("%s: generic addresses of shared or local memory are not modelled" % op)
            return ["%s = %s" % (D(), S(1))]
        if base == "bfi":
            return ["%s = _bfi(%s, %s, %s, %s, %d)" % (D(), S(1), S(2), self.src(a[3], 32), self.src(a[4], 32), w)]
        if base == "bfe":
            return ["%s = _bfe(%s, %s, %s, %d, %s)" % (D(), S(1), self.src(a[2], 32), self.src(a[3], 32), w, bool(sg))]
        if base == "popc":
            return ["%s = bin(%s).count('1')" % (D(), S(1))]
        if base == "clz":
            return ["%s = %d - (%s).bit_length()" % (D(), w, S(1))]
        if base == "brev":
            return ["%s = int(format(%s, '0%db')[::-1], 2)" % (D(), S(1), w)]
        if base == "prmt":
            if len(o) > 2:
                raise PtxError("%s is not modelled" % op)
            return ["%s = _prmt(%s, %s, %s)" % (D(), S(1), S(2), self.src(a[3], 32))]
        if base in ("ld", "st"):
            return self.mem(base, o, a)
        if base in ("atom", "red"):
            return self.atom(base, o, a)
        if base == "bra":
            return ["_L = %d; continue" % self.labels[a[0]]]
        if base == "ret" or base == "exit":
            L = ["if _pend: _drop(%d)" % k]
            L.append("return %s" % ("RV_func_retval0" if self.fn.ret else "None"))
            return L
        if base == "call":
            return self.call(k, ops)
        if base in ("bar", "barrier"):
            if not self.fn.entry:
                raise PtxError("a barrier in a called function is not modelled")
            self.gen = True
            return ["yield"]
        raise PtxError("line %s: %s is not modelled" % (ln, op))

    def chain(self, k, reads, writes, expr, w, d, sub):
        """a carry-chain instruction: reads/writes CC.CF"""
        L = []
        if writes and not reads:
            L.append("if _pend: _drop(%d)" % k)
        if self.cov and reads:
            L.append("if _cf: _CIN.add(%d)" % k)
        L.append("_t = %s" % expr)
        L.append("%s = _t & %d" % (d, (1 << w) - 1))
        if writes:
            L.append("_cf = _pend = %s" % ("1 if _t < 0 else 0" if sub else "_t >> %d" % w))
            if self.cov:
                L.append("if _cf: _COUT.add(%d)" % k)
        else:
            L.append("if %s: _drop(%d)" % ("_t < 0" if sub else "_t >> %d" % w, k))
            L.append("_pend = 0")
        return L

    def mem(self, base, o, a):
        space = next((x for x in o if x in ("global", "shared", "local", "param", "const")), None)
        if space is None:
            space = "global"  # generic = global here (shared/local never reach a generic address)
        vec = next((int(x[1:]) for x in o if x in ("v2", "v4")), 1)
        t = [x for x in o if x[:1] in "usb" and x[1:] in WIDTH][-1]
        w = WIDTH[t[1:]]
        fmt = {8: "B", 16: "H", 32: "I", 64: "Q"}[w]
        if t[0] == "s":
            fmt = fmt.lower()
        sname = "_S%s%d" % (fmt, vec)
        self.structs.add((sname, "<" + fmt * vec))
        if base == "ld":
            regs, ad = a[0], a[1]
        else:
            ad, regs = a[0], a[1]
        regs = [r.strip() for r in regs.strip("{}").split(",")] if regs.startswith("{") else [regs]
        pbuf, off = self.addr(ad)
        if space == "param":
            if pbuf is None:
                raise PtxError("a param access through a register is not modelled")
            buf, off = pbuf, str(off)
        else:
            buf = {"global": "G", "shared": "_SH", "local": "_LOC", "const": "G"}[space]
        if base == "ld":
            dst = []
            for r in regs:
                if r == "_":
                    dst.append("_")
                    continue
                dst.append(self.reg(r))
            ext = []
            if t[0] == "s":
                for r in regs:
                    if r != "_":
                        rw = self.width_of(r)
                        ext.append("%s &= %d" % (self.reg(r), (1 << rw) - 1))
            return ["%s, = %s.unpack_from(%s, %s)" % (", ".join(dst), sname, buf, off)] + ext
        vals = []
        for r in regs:
            v = self.src(r, w)
            if t[0] == "s":
                v = self.signed(v, w)
            vals.append(v)
        return ["%s.pack_into(%s, %s, %s)" % (sname, buf, off, ", ".join(vals))]

    def atom(self, base, o, a):
        space = "_SH" if "shared" in o else "G"
        t = [x for x in o if x[:1] in "usb" and x[1:] in WIDTH][-1]
        w = WIDTH[t[1:]]
        opn = next(x for x in o[1:] if x in ("add", "exch", "max", "min", "cas", "or", "and", "xor", "inc", "dec"))
        if opn in ("inc", "dec") or (t[0] == "s" and opn in ("max", "min")):
            raise PtxError("atom %s.%s is not modelled" % (opn, t))
        fmt = {32: "I", 64: "Q"}[w]
        sname = "_S%s1" % fmt
        self.structs.add((sname, "<" + fmt))
        if base == "atom":
            d, ad, rest = a[0], a[1], a[2:]
        else:
            d, ad, rest = None, a[0], a[1:]
        _, off = self.addr(ad)
        M = (1 << w) - 1
        vals = [self.src(x, w) for x in rest]
        new = {"add": "(_o + %s) & %d" % (vals[0], M), "exch": vals[0], "max": "max(_o, %s)" % vals[0],
               "min": "min(_o, %s)" % vals[0], "or": "_o | %s" % vals[0], "and": "_o & %s" % vals[0],
               "xor": "_o ^ %s" % vals[0]}.get(opn)
        if opn == "cas":
            new = "%s if _o == %s else _o" % (vals[1], vals[0])
        L = ["_a = %s" % off, "_o, = %s.unpack_from(%s, _a)" % (sname, space),
             "%s.pack_into(%s, _a, %s)" % (sname, space, new)]
        if d:
            L.append("%s = _o" % self.reg(d))
        return L

    def call(self, k, ops):
        m = re.match(r"(?:\(\s*([\w$]+)\s*\)\s*,)?\s*([\w$]+)\s*(?:,\s*\((.*)\))?\s*$", ops, re.S)
        if not m:
            raise PtxError("cannot read call %r" % ops)
        rv, callee, args = m.group(1), m.group(2), m.group(3)
        if callee not in self.funcs:
            raise PtxError("call of %s: no body in this PTX" % callee)
        self.callees.add(callee)
        args = [x.strip() for x in (args or "").split(",") if x.strip()]
        L = ["if _pend: _drop(%d)" % k]
        c = "%s(%s)" % (self.pyname(callee), ", ".join("P_" + x for x in args))
        L.append(("P_%s = %s" % (rv, c)) if rv else c)
        L.append("_cf = None; _pend = 0")
        return L

    def function(self, fn):
        self.fn, self.gen = fn, False
        self.rw, self.rwp, self.pmap, self.labels = {}, {}, {}, {}
        self.structs = set()
        out = []
        for i, (n, size) in enumerate(fn.params):
            self.pmap[n] = "A%d" % i
        for n, size in fn.ret:
            self.pmap[n] = "RV_" + n
        sts = statements(fn.body)
        # declarations, labels and blocks
        blocks, cur, depot = [], [], 0
        for st in sts:
            ln, labels, g, op, rest = st
            if labels:
                if cur or blocks:
                    blocks.append(cur)
                    cur = []
                for lb in labels:
                    self.labels[lb] = len(blocks)
            if op.startswith("."):
                d = op + " " + rest
                m = re.match(r"\.reg\s+\.(\w+)\s+(%\w+)(?:<(\d+)>)?$", d.strip())
                if m:
                    ww = "pred" if m.group(1) == "pred" else WIDTH[m.group(1)[1:]]
                    if m.group(3):
                        self.rwp[m.group(2)] = ww
                    else:
                        self.rw[m.group(2)] = ww
                    continue
                if d.startswith(".reg"):
                    continue  # temp_param_reg (never used by nvcc's call sequences)
                m = re.match(r"\.param\s+(?:\.align\s+\d+\s+)?\.\w?(\d+)\s+([\w$]+)(?:\[(\d+)\])?$", d.strip())
                if m:
                    size = int(m.group(1)) // 8 * int(m.group(3) or 1)
                    self.pmap[m.group(2)] = "P_" + m.group(2)
                    cur.append((ln, None, "P_%s = bytearray(%d)" % (m.group(2), size)))
                    continue
                m = re.match(r"\.local\s+(?:\.align\s+\d+\s+)?\.b8\s+(__local_depot\d+)\[(\d+)\]$", d.strip())
                if m:
                    depot = int(m.group(2))
                    continue
                if op in (".pragma", ".loc", ".maxntid", ".reqntid", ".minnctapersm", ".maxnreg", ".file"):
                    continue
                raise PtxError("line %s: declaration %r is not modelled" % (ln, d))
            cur.append((ln, g, (op, rest)))
        blocks.append(cur)
        body = []
        for bi, blk in enumerate(blocks):
            code, term = [], False
            for ln, g, ins in blk:
                if g is None and isinstance(ins, str):
                    code.append(ins)
                    continue
                op, rest = ins
                op2 = self.mutate.get(ln, op)
                lines = self.instr(ln, op2, rest)
                if g:
                    neg, p = g
                    cond = ("not %s" if neg else "%s") % self.reg(p)
                    code.append("if %s:" % cond)
                    code.extend("    " + x for x in lines)
                else:
                    code.extend(lines)
                    if op.split(".")[0] in ("bra", "ret", "exit"):
                        term = True
            if not term:
                code.append("_L = %d; continue" % (bi + 1) if bi + 1 < len(blocks) else
                            "return %s" % ("RV_func_retval0" if fn.ret else "None"))
            body.append(code)
        # the dispatch: a binary tree of block indices inside one loop
        def tree(lo, hi, ind):
            if hi - lo == 1:
                return [ind + x for x in body[lo]]
            mid = (lo + hi) // 2
            return [ind + "if _L < %d:" % mid] + tree(lo, mid, ind + "    ") + \
                [ind + "else:"] + tree(mid, hi, ind + "    ")
        args = ["A%d" % i for i in range(len(fn.params))]
        if fn.entry:
            args = ["_tid", "_ntid", "_ctaid", "_nctaid", "_SH"] + args
        out.append("def %s(%s):" % (self.pyname(fn.name), ", ".join(args)))
        out.append("    _cf = None; _pend = 0; _L = 0")
        if depot:
            out.append("    _LOC = bytearray(%d)" % depot)
        for n, size in fn.ret:
            out.append("    RV_%s = bytearray(%d)" % (n, size))
        out.append("    while True:")
        out.extend(tree(0, len(body), "        "))
        return out, self.gen

    def module(self, roots):
        """Python source of roots and every function they call."""
        done, todo, src, structs, gens = set(), list(roots), [], set(), {}
        while todo:
            f = todo.pop()
            if f in done:
                continue
            done.add(f)
            if f not in self.funcs:
                raise PtxError("no function %s in the PTX" % f)
            self.callees = set()
            lines, gen = self.function(self.funcs[f])
            src.extend(lines)
            src.append("")
            structs |= self.structs
            gens[f] = gen
            todo.extend(self.callees)
        head = ["import struct", "from ptxrt import _bfi, _bfe, _prmt, _sdiv, _srem, _drop, _CIN, _COUT",
                "G = None"]
        for n, fmt in sorted(structs):
            head.append("%s = struct.Struct(%r)" % (n, fmt))
        return "\n".join(head + [""] + src) + "\n", gens
