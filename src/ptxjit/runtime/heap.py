"""The device heap: CUDA's in-kernel `malloc`/`free`, checked.

Generated code calls three small functions that heap.py emits into each kernel module that uses
malloc (LLVM IR, internal linkage: no GIL, no Python, thread-safe across workers):

* `malloc(n)`: next-fit over an arena of `heap_size()` bytes (cudaLimitMallocHeapSize, 8 MB by default;
  `set_heap_size`), in 16-byte granules; NULL when no run of free granules fits (as CUDA's heap).  Each
  block is followed by one red-zone granule, so that an access just past its end lands in no block.
* `free(p)`: NULL is a no-op; the start of a live block frees it; anything else (a double free, an
  interior pointer, a pointer not into the heap) is refused and reported (never a libc abort).
* `find(a, size)`: is [a, a + size) inside one live block?  (lower/bounds.py's checks of pointers of
  unknown origin in heap-using kernels.)

The state the functions share is one int64 array (`_state`), reached from the code through the symbol
`__ptxjit_device_heap` (llvm.add_symbol), so that cached object code stays valid.  Allocation is under a
spin lock (device malloc is rare); `find` reads without it.  Per granule the arena has an owner word
(int32: k + 1 for granule k's live block, -(k + 1) once freed, 0 never used) and per block start a
metadata record (size, allocating site, CTA, thread), which `describe` and `live_blocks` read back.
Blocks persist across launches, as CUDA's heap: the ones never freed are the leaks (`heap_leaks`).
"""

from __future__ import annotations

import ctypes
import threading
from dataclasses import dataclass

import llvmlite.binding as llvm
import numpy as np
from llvmlite import ir as ll

from ptxjit.lower.types import I1, I32, I64, PTR, const_int

GRANULE = 16
DEFAULT_HEAP_SIZE = 8 << 20  # CUDA's default cudaLimitMallocHeapSize
SYMBOL = "__ptxjit_device_heap"

# state words
S_LOCK, S_BASE, S_SIZE, S_OWNER, S_META, S_CURSOR, S_USED, S_BAD_ADDR, S_BAD_KIND, S_LIVE = range(10)
S_WORDS = 16
# metadata per block start granule (int64 words)
M_SIZE, M_SITE, M_CX, M_CY, M_CZ, M_TID, M_BX, M_BY = range(8)
META_WORDS = 8
# free's refusals
BAD_DOUBLE, BAD_NOT_BLOCK = 1, 2

_state = np.zeros(S_WORDS, np.int64)
_state[S_SIZE] = DEFAULT_HEAP_SIZE
llvm.add_symbol(SYMBOL, _state.ctypes.data)  # the generated code's one reference to the heap
_py_lock = threading.Lock()
_libc = ctypes.CDLL(None)
_libc.free.argtypes = [ctypes.c_void_p]
_libc.free.restype = None


# ---------------------------------------------------------------------------- Python side
@dataclass(frozen=True)
class Block:
    """One live block of the device heap and who allocated it."""
    address: int
    size: int
    kernel: str
    where: str                   # "file.cu:LINE:COL (PTX file.ptx:LINE:COL)" of the malloc call
    cta: tuple[int, int, int]
    thread: tuple[int, int, int]
    linear_thread: int = 0       # the thread's index in its block (x fastest): its warp and lane

    @property
    def source(self) -> str:
        """The allocating call's place, CUDA line first ("kernel.cu:12"), without the column."""
        head = self.where.split(" (PTX ")[0]
        parts = head.rsplit(":", 2)
        return f"{parts[0]}:{parts[1]}" if len(parts) == 3 and parts[1].isdigit() else head

    def describe(self) -> str:
        return f"a {self.size}-byte block allocated by device malloc at {self.source}"


def heap_size() -> int:
    """The device heap's size limit in bytes (cudaLimitMallocHeapSize)."""
    return int(_state[S_SIZE])


def set_heap_size(nbytes: int) -> None:
    """Set the device heap's size (cudaDeviceSetLimit(cudaLimitMallocHeapSize, nbytes)): device malloc
    returns NULL beyond it.  Like CUDA, it cannot change while blocks are live; call it before launching
    kernels that use malloc (not while one runs)."""
    if isinstance(nbytes, bool) or not isinstance(nbytes, (int, np.integer)) or nbytes <= 0:
        raise ValueError(f"set_heap_size: expected a positive number of bytes, got {nbytes!r}")
    nbytes = -(-int(nbytes) // GRANULE) * GRANULE
    if nbytes >= 1 << 35:
        raise ValueError(f"set_heap_size: {nbytes} bytes is more than the 32 GiB a device heap may have")
    with _py_lock:
        if _state[S_BASE]:
            if _state[S_LIVE]:
                raise RuntimeError(f"set_heap_size: the device heap has {int(_state[S_LIVE])} live blocks; "
                                   f"free them first (CUDA refuses to resize a heap in use too)")
            _release()
        _state[S_SIZE] = nbytes


def _release() -> None:
    """Give the arena back (no live blocks): the next malloc makes a new one of the current size."""
    v = _views()
    if v is not None:
        for p in v[2][:, M_SITE][v[2][:, M_SITE] != 0].tolist():  # the blocks' copies of their site
            _libc.free(ctypes.c_void_p(p))
    for w in (S_BASE, S_OWNER, S_META):
        if _state[w]:
            _libc.free(ctypes.c_void_p(int(_state[w])))
        _state[w] = 0
    _state[S_CURSOR] = _state[S_USED] = _state[S_LIVE] = 0


def _views() -> tuple[int, np.ndarray, np.ndarray] | None:
    base = int(_state[S_BASE])
    if not base:
        return None
    g = int(_state[S_SIZE]) // GRANULE
    owner = np.ctypeslib.as_array((ctypes.c_int32 * g).from_address(int(_state[S_OWNER])))
    meta = np.ctypeslib.as_array((ctypes.c_int64 * (g * META_WORDS)).from_address(int(_state[S_META])))
    return base, owner, meta.reshape(g, META_WORDS)


def _block(base: int, meta: np.ndarray, k: int) -> Block:
    m = [int(x) for x in meta[k]]
    site = ctypes.string_at(m[M_SITE]).decode("utf-8", "replace") if m[M_SITE] else ""
    kernel, _, where = site.partition("\x1f")
    bx, by = max(m[M_BX], 1), max(m[M_BY], 1)
    t = m[M_TID]
    return Block(base + k * GRANULE, m[M_SIZE], kernel, where, (m[M_CX], m[M_CY], m[M_CZ]),
                 (t % bx, (t // bx) % by, t // (bx * by)), t)


def live_blocks() -> list[Block]:
    """The device heap's live blocks (allocated and not yet freed), by address."""
    with _py_lock:
        v = _views()
        if v is None:
            return []
        base, owner, meta = v
        starts = np.flatnonzero(owner == np.arange(1, len(owner) + 1, dtype=np.int64))
        return [_block(base, meta, int(k)) for k in starts]


def heap_leaks() -> list[Block]:
    """The blocks device malloc handed out that no device free has released yet: the leaks, at exit."""
    return live_blocks()


def describe(addr: int, where: str = "") -> tuple[str, str] | None:
    """(allocation, detail) of a faulting address that the heap explains, or None.  `where`: the
    faulting instruction's place and text; a fault at a `call` is a refused device free ("device free"),
    any other one an access past a block's end or into a freed block ("device heap").  The heap is read
    after the launch: a block that the faulting thread went on to free reads as freed."""
    with _py_lock:
        v = _views()
        if "('call" in where:
            if v is None:  # no block was ever allocated
                return "device free", f"free of address {addr:#x}: not a pointer device malloc returned"
            return "device free", _bad_free(*v, addr)
        if v is None:
            return None
        base, owner, meta = v
        off = addr - base
        if not 0 <= off < len(owner) * GRANULE:
            return None
        o = int(owner[off // GRANULE])
        if o == 0:
            return "device heap", f"address {addr:#x} is in the device heap but in no block device malloc allocated"
        blk = _block(base, meta, abs(o) - 1)
        at = addr - blk.address
        if at >= blk.size:  # past the end (the red zone): whether or not the block was freed since
            return "device heap", f"address {addr:#x} is {at - blk.size} bytes past the end of {blk.describe()}"
        if o < 0:
            return "device heap", (f"address {addr:#x} is at byte {at} of {blk.describe()}, which device free "
                                   f"has freed (use after free)")
        return "device heap", (f"address {addr:#x} is at byte {at} of {blk.describe()}, and the access runs "
                               f"past its end")


def _bad_free(base: int, owner: np.ndarray, meta: np.ndarray, addr: int) -> str:
    off = addr - base
    o = int(owner[off // GRANULE]) if 0 <= off < len(owner) * GRANULE else 0
    blk = _block(base, meta, abs(o) - 1) if o else None
    if blk is not None and blk.address == addr and o < 0:
        return f"free of address {addr:#x}: a double free of {blk.describe()}"
    if blk is not None:
        state = "a freed" if o < 0 else "a live"
        return (f"free of address {addr:#x}: not the start of a block but byte {addr - blk.address} of "
                f"{state} {blk.describe()[2:]}")
    return f"free of address {addr:#x}: not a pointer device malloc returned"


# ---------------------------------------------------------------------------- generated code
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
