"""ptxrt.py — the runtime of ptx.py's translated kernels: the helpers the generated code
calls, the cache of translations, device memory and launches (a grid run block by
block, thread by thread; a kernel with barriers as one generator per thread)."""

import hashlib
import importlib.util
import json
import os
import struct
import sys

DROPS = []  # PTX lines whose chain lost a carry of 1 (see ptx.py)
_CIN, _COUT = set(), set()  # coverage: lines that read / wrote a carry of 1


def _drop(line):
    DROPS.append(line)


def _bfi(f, b, pos, ln, w):
    pos &= 0xFF
    ln &= 0xFF
    if pos >= w or ln == 0:
        return b
    m = (((1 << ln) - 1) << pos) & ((1 << w) - 1)
    return (b & ~m | (f << pos) & m) & ((1 << w) - 1)


def _bfe(a, pos, ln, w, sg):
    pos &= 0xFF
    ln &= 0xFF
    M = (1 << w) - 1
    if ln == 0:
        return 0
    v = (a >> min(pos, w)) & ((1 << ln) - 1) if pos < w else 0
    if sg:
        top = min(pos + ln, w) - 1
        sbit = (a >> top) & 1 if top >= 0 else 0
        if ln + pos > w:
            ln = w - pos if pos < w else 0
        if sbit:
            v |= M & ~((1 << ln) - 1)
    return v & M


def _prmt(a, b, c):
    x = a | b << 32
    r = 0
    for i in range(4):
        sel = (c >> 4 * i) & 0xF
        byte = (x >> 8 * (sel & 7)) & 0xFF
        if sel & 8:
            byte = 0xFF if byte & 0x80 else 0
        r |= byte << 8 * i
    return r


def _sdiv(a, b):
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def _srem(a, b):
    return a - _sdiv(a, b) * b


class CarryPoison(Exception):
    pass


def load(ptx_text, roots, cache_dir=None, mutate=None, cov=False):
    """Translate the functions `roots` (and their callees) of a PTX text into a Python
    module. Without mutants or coverage the translation is kept in cache_dir (keyed by
    the text, the roots and the translator), so a second run only imports it."""
    here = os.path.dirname(os.path.abspath(__file__))
    if here not in sys.path:
        sys.path.insert(0, here)
    import ptx

    def translate():
        funcs, shared, dyn = ptx.parse(ptx_text)
        tr = ptx.Translator(funcs, shared, mutate=mutate, cov=cov)
        src, gens = tr.module(roots)
        return src, gens, dyn, funcs

    if cache_dir and not mutate and not cov:
        h = hashlib.sha256()
        srcs = [os.path.join(here, f) for f in ("ptx.py", "ptxparse.py", "ptxrt.py")]
        for part in [ptx_text, "\0".join(sorted(roots))] + [open(f).read() for f in srcs]:
            h.update(part.encode())
        path = os.path.join(cache_dir, "k_%s.py" % h.hexdigest()[:24])
        meta = path[:-3] + ".meta"
        if not os.path.exists(path):
            src, gens, dyn, funcs = translate()
            os.makedirs(cache_dir, exist_ok=True)
            info = {r: [gens.get(r, False), funcs[r].params] for r in roots}
            tmp = "%s.%d" % (path, os.getpid())
            with open(tmp, "w") as f:
                f.write(src)
            with open(tmp + "m", "w") as f:
                json.dump([info, dyn], f)
            os.rename(tmp + "m", meta)
            os.rename(tmp, path)
        else:
            os.utime(path)  # in use: ptx_exec.sh prunes the translations of older sources
            os.utime(meta)
        info, dyn = json.load(open(meta))
        spec = importlib.util.spec_from_file_location(os.path.basename(path)[:-3], path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
    else:
        src, gens, dyn, funcs = translate()
        info = {r: [gens.get(r, False), funcs[r].params] for r in roots}
        mod = type(sys)("ptx_mutant")
        exec(compile(src, "<ptx>", "exec"), mod.__dict__)
    mod.ROOTS, mod.DYN_SHARED = info, dyn
    return mod


def mutant(mod, ptx_text, mutate):
    """A copy of the translated module `mod` with the PTX lines of `mutate` ({line: new
    opcode}) changed: only the functions holding those lines are translated again, and
    every function is rebound to the copy's globals, so that calls reach the mutants."""
    import types

    import ptx
    funcs, shared, _ = ptx.parse(ptx_text)
    hit = [f for f in funcs.values() if any(ln in mutate for ln, _ in f.body)]
    m = types.ModuleType("ptx_mutant")
    g = m.__dict__
    g.update((k, v) for k, v in mod.__dict__.items() if not k.startswith("__"))
    for k, v in list(g.items()):
        if isinstance(v, types.FunctionType) and k.startswith("F_"):
            g[k] = types.FunctionType(v.__code__, g, v.__name__, v.__defaults__, v.__closure__)
    tr = ptx.Translator(funcs, shared, mutate=mutate)
    for f in hit:
        tr.callees, tr.structs = set(), set()
        lines, _ = tr.function(f)
        for name, fmt in tr.structs:
            g.setdefault(name, struct.Struct(fmt))
        exec(compile("\n".join(lines) + "\n", "<ptx mutant>", "exec"), g)
    return m, [f.name for f in hit]


class Device:
    """Global memory (one bytearray; device pointers are offsets in it, above 64 KiB so
    that a null pointer faults) and the launches of one translated module."""

    def __init__(self, mod, size=1 << 24):
        self.mod, self.mem, self.top = mod, bytearray(size), 1 << 16
        mod.G = self.mem

    def alloc(self, nbytes):
        p = self.top
        self.top = (self.top + nbytes + 255) // 256 * 256
        if self.top > len(self.mem):
            raise MemoryError("device memory of the interpreter is full")
        return p

    def put(self, data, fmt="Q"):
        b = struct.pack("<%d%s" % (len(data), fmt), *data)
        p = self.alloc(len(b))
        self.mem[p:p + len(b)] = b
        return p

    def zeros(self, n, size=8):
        p = self.alloc(n * size)
        self.mem[p:p + n * size] = bytes(n * size)
        return p

    def get(self, p, n, fmt="Q"):
        return list(struct.unpack_from("<%d%s" % (n, fmt), self.mem, p))

    def launch(self, name, grid, block, args, shared=0):
        """Run kernel `name` on grid x block threads; args: one int (or bytes) per parameter."""
        gen, params = self.mod.ROOTS[name]
        if len(args) != len(params):
            raise TypeError("%s takes %d parameters" % (name, len(params)))
        bufs = []
        for a, (_, size) in zip(args, params):
            if isinstance(a, (bytes, bytearray)):
                bufs.append(bytearray(a))
            else:
                bufs.append(bytearray((a & ((1 << 8 * size) - 1)).to_bytes(size, "little")))
        fn = getattr(self.mod, "F_" + "".join(c if c.isalnum() or c == "_" else "_" for c in name))
        for b in range(grid):
            sh = bytearray(self.mod.DYN_SHARED + shared)
            try:
                if not gen:
                    for t in range(block):
                        fn(t, block, b, grid, sh, *bufs)
                    continue
                threads = [fn(t, block, b, grid, sh, *bufs) for t in range(block)]
                live = threads
                while live:  # each round: every thread to its next barrier
                    done = 0
                    for th in live:
                        try:
                            next(th)
                        except StopIteration:
                            done += 1
                    if done and done != len(live):
                        raise RuntimeError("%s: some threads left while others wait at a barrier" % name)
                    if done:
                        break
            except TypeError as e:
                if "NoneType" in str(e):
                    raise CarryPoison("%s: a carry read where the flag is undefined (function entry "
                                      "or after a call): %s" % (name, e))
                raise
