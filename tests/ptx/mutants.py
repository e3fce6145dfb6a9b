"""mutants.py — planted carry mutants: the carry instructions of a kernel and its
callees, one change of one of them, and which changes are provably no change."""

CARRY_OPS = ("add.cc", "addc", "sub.cc", "subc", "mad.lo.cc", "mad.hi.cc", "madc")


def carry_lines(funcs, roots):
    """PTX lines of the carry instructions in roots and their callees: [(line, opcode,
    unread)], unread when the carry it writes is provably read by nothing: the next
    instruction of its straight-line code that touches CC.CF sets it without reading it
    (add.cc, mad.lo.cc), with no label, branch, call or return in between."""
    import ptx
    seen, todo, out = set(), list(roots), []
    while todo:
        f = todo.pop()
        if f in seen:
            continue
        seen.add(f)
        sts = ptx.statements(funcs[f].body)
        for i, (ln, _, _, op, rest) in enumerate(sts):
            if op.startswith("call"):
                todo.extend(n for n in funcs if n in rest)
            if not op.startswith(CARRY_OPS):
                continue
            unread = False
            for ln2, labels, g, op2, _ in sts[i + 1:]:
                if labels or op2.startswith(("bra", "call", "ret", "exit")):
                    break
                if op2.startswith(CARRY_OPS):
                    unread = g is None and not op2.startswith(("addc", "subc", "madc"))
                    break
            out.append((ln, op, unread))
    return sorted(out)


def mutant(op, k):
    """one single-instruction change of a carry op: its carry-in dropped (addc -> add,
    madc -> mad) or its carry-out (.cc removed); k picks one where both exist"""
    reads = op.startswith(("addc", "subc", "madc"))
    writes = ".cc" in op
    if reads and (not writes or k % 2 == 0):
        return op.replace("addc", "add", 1).replace("subc", "sub", 1).replace("madc", "mad", 1), "in"
    return op.replace(".cc", "", 1), "out"
