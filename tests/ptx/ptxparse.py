"""ptxparse.py — reading nvcc's PTX text: the functions (signature, parameters, return
value, body lines), the module's shared memory, and a body's statements with their
labels, guard predicate, opcode and operands. ptx.py translates what this reads."""

import re


class PtxError(Exception):
    pass


# ---- parsing ------------------------------------------------------------------------

class Func:
    def __init__(self, name, entry, params, ret, body, line):
        self.name, self.entry, self.params, self.ret = name, entry, params, ret
        self.body, self.line = body, line  # body: [(lineno, text)]


def _params(text):
    """`.param .u64 name, .param .align 8 .b8 name[48]` -> [(name, size)]"""
    out = []
    for p in [x.strip() for x in text.split(",") if x.strip()]:
        m = re.match(r"\.param\s+(?:\.align\s+\d+\s+)?\.([busf])(\d+)\s+([\w$]+)(?:\[(\d+)\])?$", p)
        if not m:
            raise PtxError("cannot read parameter %r" % p)
        size = int(m.group(2)) // 8 * (int(m.group(4)) if m.group(4) else 1)
        out.append((m.group(3), size))
    return out


def parse(text):
    """PTX text -> ({name: Func}, {shared symbol: (offset, size)}, shared bytes)."""
    lines = text.split("\n")
    src = []  # (lineno, code without comments)
    for i, l in enumerate(lines, 1):
        l = l.split("//", 1)[0].strip()
        if l:
            src.append((i, l))
    funcs, shared, shbytes = {}, {}, 0
    k = 0
    while k < len(src):
        ln, l = src[k]
        m = re.match(r"(?:\.visible\s+|\.weak\s+|\.extern\s+)*\.(entry|func)\b(.*)", l)
        if m:
            head, start = m.group(2), ln
            k += 1
            while "{" not in head and not head.rstrip().endswith(";") and k < len(src):
                nxt = src[k][1]
                if nxt.startswith("{"):
                    break
                head += " " + nxt
                k += 1
            if head.rstrip().endswith(";"):  # a prototype
                continue
            mm = re.match(r"\s*(?:\((.*?)\))?\s*([\w$]+)\s*(?:\((.*?)\))?\s*(.*)$", head)
            if not mm:
                raise PtxError("line %d: cannot read the signature" % start)
            ret = _params(mm.group(1)) if mm.group(1) else []
            params = _params(mm.group(3) or "")
            depth, body = 0, []
            while k < len(src):
                ln2, l2 = src[k]
                k += 1
                depth += l2.count("{") - l2.count("}")
                body.append((ln2, l2))
                if depth == 0 and body and "}" in l2:
                    break
            funcs[mm.group(2)] = Func(mm.group(2), m.group(1) == "entry", params, ret, body, start)
            continue
        m = re.match(r"\.extern\s+\.shared\s+(?:\.align\s+(\d+)\s+)?\.b8\s+([\w$]+)\[\];", l)
        if m:
            shared[m.group(2)] = None  # dynamic shared memory: placed after the static
        elif re.match(r"(\.visible\s+)?\.(global|const)\b", l):
            raise PtxError("line %d: module-scope %s variables are not modelled" % (ln, l.split()[0]))
        elif re.match(r"(\.visible\s+)?\.shared\b", l):
            m = re.match(r"(?:\.visible\s+)?\.shared\s+(?:\.align\s+(\d+)\s+)?\.([bu])(\d+)\s+([\w$]+)\[(\d+)\];", l)
            if not m:
                raise PtxError("line %d: cannot read %r" % (ln, l))
            al = int(m.group(1) or 8)
            shbytes = (shbytes + al - 1) // al * al
            shared[m.group(4)] = (shbytes, int(m.group(3)) // 8 * int(m.group(5)))
            shbytes += shared[m.group(4)][1]
        k += 1
    dyn = (shbytes + 15) // 16 * 16
    for n, v in list(shared.items()):
        if v is None:
            shared[n] = (dyn, 0)
    return funcs, shared, dyn


def statements(body):
    """The body's statements: [(lineno, labels, guard, opcode, operands text)]."""
    out, labels = [], []
    buf, bl = "", None
    for ln, l in body:
        if l in ("{", "}"):  # a scope (the body, a call sequence): nvcc puts them alone
            continue
        for part in re.split(r"(;)", l):
            part = part.strip()
            if not part:
                continue
            if part == ";":
                if buf:
                    out.append((bl, buf))
                buf, bl = "", None
                continue
            while True:  # labels
                m = re.match(r"([\w$]+):\s*(.*)$", part)
                if not m or part.startswith("."):
                    break
                out.append((ln, m.group(1) + ":"))
                part = m.group(2)
            if part:
                if bl is None:
                    bl = ln
                buf = (buf + " " + part).strip()
    res = []
    for ln, s in out:
        if s.endswith(":") and re.match(r"^[\w$]+:$", s):
            labels.append(s[:-1])
            continue
        g = None
        m = re.match(r"@(!?)(%\w+)\s+(.*)$", s)
        if m:
            g, s = (m.group(1), m.group(2)), m.group(3)
        parts = re.split(r"\s+", s, 1)
        op, rest = parts[0], parts[1] if len(parts) > 1 else ""
        res.append((ln, labels, g, op, rest.strip()))
        labels = []
    if labels:
        res.append((None, labels, None, "ret", ""))
    return res
