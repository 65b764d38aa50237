"""The device heap's code: three small functions generated code calls for CUDA's in-kernel `malloc`/`free`,
emitted into each kernel module that uses malloc (LLVM IR, internal linkage: no GIL, no Python,
thread-safe across workers), and the layout of the state they share.  The state itself, its arena and
what Python reads back of it are runtime/heap.py's, which defines the symbol `__ptxjit_device_heap`.

* `malloc(n)`: next-fit over an arena of `heap_size()` bytes (cudaLimitMallocHeapSize, 8 MB by default;
  `set_heap_size`), in 16-byte granules; NULL when no run of free granules fits (as CUDA's heap).  Each
  block is followed by one red-zone granule, so that an access just past its end lands in no block.
* `free(p)`: NULL is a no-op; the start of a live block frees it; anything else (a double free, an
  interior pointer, a pointer not into the heap) is refused and reported (never a libc abort).
* `find(a, size)`: is [a, a + size) inside one live block?  (lower/safety/bounds.py's checks of pointers of
  unknown origin in heap-using kernels.)
"""

from __future__ import annotations

from llvmlite import ir as ll

from ptxjit.lower.types import I1, I32, I64, PTR, const_int

GRANULE = 16
SYMBOL = "__ptxjit_device_heap"

# state words
S_LOCK, S_BASE, S_SIZE, S_OWNER, S_META, S_CURSOR, S_USED, S_BAD_ADDR, S_BAD_KIND, S_LIVE = range(10)
S_WORDS = 16
# metadata per block start granule (int64 words)
M_SIZE, M_SITE, M_CX, M_CY, M_CZ, M_TID, M_BX, M_BY = range(8)
META_WORDS = 8
# free's refusals
BAD_DOUBLE, BAD_NOT_BLOCK = 1, 2


def _state_ptr(mod: ll.Module) -> ll.GlobalVariable:
    g = mod.globals.get(SYMBOL)
    if g is None:
        g = ll.GlobalVariable(mod, ll.ArrayType(I64, S_WORDS), name=SYMBOL)  # external: add_symbol
    return g


class _Fn:
    """A builder for one runtime function, with helpers for the state words and loops."""

    def __init__(self, mod: ll.Module, name: str, ret: ll.Type, args: list[ll.Type]) -> None:
        self.fn = ll.Function(mod, ll.FunctionType(ret, args), name=name)
        self.fn.linkage = "internal"
        self.b = ll.IRBuilder(self.fn.append_basic_block("entry"))
        self.st = _state_ptr(mod)

    def word(self, i: int) -> ll.Value:
        return self.b.gep(self.st, [const_int(I32, 0), const_int(I32, i)])

    def load(self, i: int) -> ll.Value:
        return self.b.load(self.word(i), align=8)

    def store(self, i: int, v: ll.Value) -> None:
        self.b.store(v, self.word(i), align=8)

    def block(self, name: str) -> ll.Block:
        return self.fn.append_basic_block(name)

    def lock(self) -> None:
        b = self.b
        spin, got = self.block("lock"), self.block("locked")
        b.branch(spin)
        b.position_at_end(spin)
        r = b.cmpxchg(self.word(S_LOCK), const_int(I64, 0), const_int(I64, 1), "acquire", "monotonic")
        b.cbranch(b.extract_value(r, 1), got, spin)
        b.position_at_end(got)

    def unlock(self) -> None:
        self.b.store_atomic(const_int(I64, 0), self.word(S_LOCK), "release", 8)

    def owner(self) -> ll.Value:
        return self.b.inttoptr(self.load(S_OWNER), I32.as_pointer())

    def meta(self, k: ll.Value, field: int) -> ll.Value:
        b = self.b
        m = b.inttoptr(self.load(S_META), I64.as_pointer())
        return b.gep(m, [b.add(b.mul(k, const_int(I64, META_WORDS)), const_int(I64, field))])

    def set_owner(self, start: ll.Value, count: ll.Value, value: ll.Value) -> None:
        """owner[start .. start + count) = value."""
        b = self.b
        owner = self.owner()
        j = b.alloca(I64)
        b.store(start, j)
        head, body, done = self.block("fill"), self.block("fill_body"), self.block("filled")
        end = b.add(start, count)
        b.branch(head)
        b.position_at_end(head)
        jv = b.load(j)
        b.cbranch(b.icmp_unsigned("<", jv, end), body, done)
        b.position_at_end(body)
        b.store(value, b.gep(owner, [jv]))
        b.store(b.add(jv, const_int(I64, 1)), j)
        b.branch(head)
        b.position_at_end(done)


def _granules(b: ll.IRBuilder, n: ll.Value) -> ll.Value:
    """Granules a block of n bytes takes, with its red zone."""
    return b.add(b.lshr(b.add(n, const_int(I64, GRANULE - 1)), const_int(I64, 4)), const_int(I64, 1))


def _emit_malloc(mod: ll.Module) -> ll.Function:
    f = _Fn(mod, "__ptxjit_heap_malloc", PTR, [I64] * 8)
    n, site, cx, cy, cz, tid, bx, by = f.fn.args
    b = f.b
    null = ll.Constant(PTR, None)
    fail_unlocked = f.block("fail_unlocked")
    start_blk = f.block("start")
    # malloc(0) and requests beyond the heap: NULL without taking the lock
    b.cbranch(b.or_(b.icmp_unsigned("==", n, const_int(I64, 0)), b.icmp_unsigned(">", n, f.load(S_SIZE))),
              fail_unlocked, start_blk)
    b.position_at_end(fail_unlocked)
    b.ret(null)
    b.position_at_end(start_blk)
    f.lock()
    fail = f.block("fail")
    size = f.load(S_SIZE)
    ng = b.lshr(size, const_int(I64, 4))
    init, ready = f.block("init"), f.block("ready")
    b.cbranch(b.icmp_unsigned("==", f.load(S_BASE), const_int(I64, 0)), init, ready)
    b.position_at_end(init)  # the first malloc makes the arena (calloc: pages are touched only when used)
    calloc = mod.globals.get("calloc") or ll.Function(mod, ll.FunctionType(PTR, [I64, I64]), name="calloc")
    ptrs = [b.call(calloc, [count, const_int(I64, w)])
            for count, w in ((size, 1), (ng, 4), (ng, 8 * META_WORDS))]
    bad = const_int(I1, 0)
    for p in ptrs:
        bad = b.or_(bad, b.icmp_unsigned("==", b.ptrtoint(p, I64), const_int(I64, 0)))
    made = f.block("made")
    b.cbranch(bad, fail, made)
    b.position_at_end(made)
    for w, p in zip((S_BASE, S_OWNER, S_META), ptrs, strict=True):
        f.store(w, b.ptrtoint(p, I64))
    b.branch(ready)
    # next fit: from the cursor, the first run of `need` free granules (never-used or freed)
    b.position_at_end(ready)
    need = _granules(b, n)
    owner = f.owner()
    i, run, steps = b.alloca(I64), b.alloca(I64), b.alloca(I64)
    b.store(f.load(S_CURSOR), i)
    b.store(const_int(I64, 0), run)
    b.store(const_int(I64, 0), steps)
    head, body, found = f.block("scan"), f.block("scan_body"), f.block("found")
    b.branch(head)
    b.position_at_end(head)
    sv = b.load(steps)
    b.cbranch(b.icmp_unsigned("<", sv, b.add(ng, ng)), body, fail)
    b.position_at_end(body)
    iv, rv = b.load(i), b.load(run)
    wrap = b.icmp_unsigned(">=", iv, ng)  # runs never wrap around the arena's end
    iv = b.select(wrap, const_int(I64, 0), iv)
    rv = b.select(wrap, const_int(I64, 0), rv)
    o = b.load(b.gep(owner, [iv]))
    rv = b.select(b.icmp_signed("<=", o, const_int(I32, 0)), b.add(rv, const_int(I64, 1)), const_int(I64, 0))
    b.store(b.add(iv, const_int(I64, 1)), i)
    b.store(rv, run)
    b.store(b.add(sv, const_int(I64, 1)), steps)
    b.cbranch(b.icmp_unsigned("==", rv, need), found, head)
    b.position_at_end(found)
    start = b.sub(b.load(i), need)
    f.set_owner(start, need, b.trunc(b.add(start, const_int(I64, 1)), I32))
    # the site string lives in the kernel's module, which may be gone when the block is reported: a copy
    # (the previous block starting here gives its copy back)
    libc_free = mod.globals.get("free") or ll.Function(mod, ll.FunctionType(ll.VoidType(), [PTR]), name="free")
    strdup = mod.globals.get("strdup") or ll.Function(mod, ll.FunctionType(PTR, [PTR]), name="strdup")
    b.call(libc_free, [b.inttoptr(b.load(f.meta(start, M_SITE)), PTR)])
    site = b.ptrtoint(b.call(strdup, [b.inttoptr(site, PTR)]), I64)
    for field, v in ((M_SIZE, n), (M_SITE, site), (M_CX, cx), (M_CY, cy), (M_CZ, cz), (M_TID, tid),
                     (M_BX, bx), (M_BY, by)):
        b.store(v, f.meta(start, field))
    f.store(S_CURSOR, b.add(start, need))
    f.store(S_USED, b.add(f.load(S_USED), n))
    f.store(S_LIVE, b.add(f.load(S_LIVE), const_int(I64, 1)))
    p = b.add(f.load(S_BASE), b.shl(start, const_int(I64, 4)))
    f.unlock()
    b.ret(b.inttoptr(p, PTR))
    b.position_at_end(fail)
    f.unlock()
    b.ret(null)
    return f.fn


def _emit_free(mod: ll.Module) -> ll.Function:
    f = _Fn(mod, "__ptxjit_heap_free", I32, [I64])
    (p,) = f.fn.args
    b = f.b
    nop, go = f.block("null"), f.block("go")
    b.cbranch(b.icmp_unsigned("==", p, const_int(I64, 0)), nop, go)
    b.position_at_end(nop)
    b.ret(const_int(I32, 0))
    b.position_at_end(go)
    f.lock()
    base = f.load(S_BASE)
    off = b.sub(p, base)
    inside = b.and_(b.icmp_unsigned("!=", base, const_int(I64, 0)),
                    b.and_(b.icmp_unsigned("<", off, f.load(S_SIZE)),
                           b.icmp_unsigned("==", b.and_(off, const_int(I64, GRANULE - 1)), const_int(I64, 0))))
    look, live, notlive, bad = f.block("look"), f.block("live"), f.block("not_live"), f.block("bad")
    kind = b.alloca(I32)
    b.store(const_int(I32, BAD_NOT_BLOCK), kind)
    b.cbranch(inside, look, bad)
    b.position_at_end(look)
    g = b.lshr(off, const_int(I64, 4))
    tag = b.trunc(b.add(g, const_int(I64, 1)), I32)
    o = b.load(b.gep(f.owner(), [g]))
    b.cbranch(b.icmp_signed("==", o, tag), live, notlive)
    b.position_at_end(notlive)  # granule g's own block, freed: a double free; anything else: no block start
    b.store(b.select(b.icmp_signed("==", o, b.neg(tag)), const_int(I32, BAD_DOUBLE), const_int(I32, BAD_NOT_BLOCK)),
            kind)
    b.branch(bad)
    b.position_at_end(live)
    n = b.load(f.meta(g, M_SIZE))
    f.set_owner(g, _granules(b, n), b.neg(tag))
    f.store(S_USED, b.sub(f.load(S_USED), n))
    f.store(S_LIVE, b.sub(f.load(S_LIVE), const_int(I64, 1)))
    f.unlock()
    b.ret(const_int(I32, 0))
    b.position_at_end(bad)
    k = b.load(kind)
    f.store(S_BAD_ADDR, p)
    f.store(S_BAD_KIND, b.zext(k, I64))
    f.unlock()
    b.ret(k)
    return f.fn


def _emit_find(mod: ll.Module) -> ll.Function:
    f = _Fn(mod, "__ptxjit_heap_find", I1, [I64, I64])
    a, size = f.fn.args
    b = f.b
    base = f.load(S_BASE)
    off = b.sub(a, base)
    look, no = f.block("look"), f.block("no")
    b.cbranch(b.and_(b.icmp_unsigned("!=", base, const_int(I64, 0)), b.icmp_unsigned("<", off, f.load(S_SIZE))),
              look, no)
    b.position_at_end(no)
    b.ret(const_int(I1, 0))
    b.position_at_end(look)
    o = b.sext(b.load(b.gep(f.owner(), [b.lshr(off, const_int(I64, 4))])), I64)
    live = b.icmp_signed(">", o, const_int(I64, 0))
    k = b.select(live, b.sub(o, const_int(I64, 1)), const_int(I64, 0))
    n = b.load(f.meta(k, M_SIZE))
    end = b.add(b.sub(off, b.shl(k, const_int(I64, 4))), size)  # the access's end, from the block's start
    b.ret(b.and_(live, b.icmp_unsigned("<=", end, n)))
    return f.fn


_EMITTERS = {"__ptxjit_heap_malloc": _emit_malloc, "__ptxjit_heap_free": _emit_free,
             "__ptxjit_heap_find": _emit_find}


def function(mod: ll.Module, name: str) -> ll.Function:
    """The heap function `name` ("malloc", "free", "find") in the module, emitted on first use."""
    full = f"__ptxjit_heap_{name}"
    fn = mod.globals.get(full)
    return fn if fn is not None else _EMITTERS[full](mod)


def site_string(mod: ll.Module, kernel: str, where: str) -> ll.Constant:
    """A constant C string "kernel\\x1fwhere" in the module: a malloc call's place, kept with each block."""
    data = (kernel + "\x1f" + where).encode("utf-8") + b"\0"
    name = f"__ptxjit_heap_site{len([g for g in mod.globals if g.startswith('__ptxjit_heap_site')])}"
    ty = ll.ArrayType(ll.IntType(8), len(data))
    g = ll.GlobalVariable(mod, ty, name=name)
    g.global_constant = True
    g.linkage = "internal"
    g.initializer = ll.Constant(ty, bytearray(data))
    return g.bitcast(PTR)
