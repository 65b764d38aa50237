"""What a kernel does with its parameters, as the launch-time argument checks need it.

The summary pass (passes/summary.py) reports per parameter read / written / atomic and strides, for
`ptxjit info --summary`.  It is linear and meant for display: it follows registers in program order,
so a pointer that is spilled to local memory (nvcc -O0), passed to a device function or defined in a
block placed after its use is not attributed to its parameter.  Refusing a read-only array must not
depend on that, so this module runs its own, deliberately conservative analysis:

- taint: a flow-insensitive fixpoint over all instructions; a register is tainted by every parameter
  any of its operands is derived from (arithmetic, moves, selects, conversions...), and a loaded value
  by every parameter whose value was stored anywhere (a pointer spilled to local memory and reloaded);
- may_write[p]: a store, atomic, reduction or any other memory instruction that is not a plain load
  has an address tainted by p, or p's value reaches a call (other than vprintf/__assertfail), or a
  parameter's address is taken.  Sound: a parameter not marked is only read;
- pointer[p]: p is an 8-byte parameter the kernel dereferences as a pointer: `cvta.to.global` of its
  value, or an address derived from no other 8-byte parameter.  Precise rather than complete: a
  `size_t n` added to a pointer is never taken for one (an int passed for it stays accepted);
- widths[p]: the element widths (bytes, with their PTX types) of the accesses through p;
- dynamic shared memory: whether the kernel (or a device function) refers to an `extern .shared`
  array, and the bytes its constant-offset accesses provably need;
- uses_printf: whether the module calls vprintf (the launch then tells printf which memory it knows).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ptxjit.frontend import ir
from ptxjit.isa.effects import vector_length

_LOADS = {"ld", "ldu", "prefetch", "prefetchu"}
_STORES = {"st", "red"}  # no destination register: every register operand is a value going to memory


@dataclass
class ParamAccess:
    may_write: bool = False
    pointer: bool = False
    widths: dict[int, set[str]] = field(default_factory=dict)  # element bytes -> PTX types seen
    texture: int = 0  # ptxjit.texture.KIND_TEXTURE/KIND_SURFACE: the value is used as that handle


@dataclass
class KernelAccess:
    params: list[ParamAccess]
    dynamic_shared: bool = False
    dynamic_shared_min: int = 0  # bytes of dynamic shared memory constant-offset accesses need
    uses_printf: bool = False


def operand_regs(op) -> list[ir.Reg]:
    """The registers an operand reads (the base of an address is handled apart)."""
    if isinstance(op, ir.Reg):
        return [op] if op.name != "_" else []
    if isinstance(op, ir.Vec | ir.CallList):
        return [r for x in op.items for r in operand_regs(x)]
    if isinstance(op, ir.Pair):
        return [op.first, op.second]
    return []


def _width(ins: ir.Instr) -> tuple[int, str] | None:
    ts = ins.types()
    if not ts:
        return None
    t = ts[-1]
    return ir.type_size(t), t


def reachable_functions(module: ir.Module, fn: ir.Function) -> list[ir.Function]:
    """fn and the device functions it may call (all of them if it calls indirectly)."""
    seen = {fn.name: fn}
    todo = [fn]
    while todo:
        f = todo.pop()
        for ins in f.instructions:
            if ins.opcode != "call":
                continue
            targets = [op for op in ins.operands if isinstance(op, ir.Sym)]
            if not targets or any(t.name not in module.functions for t in targets[:1]):
                # indirect call through a register (or an unknown target): any function may run
                targets = [ir.Sym(n) for n, g in module.functions.items() if not g.is_entry]
            for t in targets:
                g = module.functions.get(t.name)
                if g is not None and g.name not in seen and not g.is_entry:
                    seen[g.name] = g
                    todo.append(g)
    return list(seen.values())


@dataclass
class _Flow:
    derefs: list[tuple[frozenset[str], tuple[int, str] | None]]  # (address taint, element width)
    written: set[str]  # parameters that may be written through (or escape to code we do not see)
    strong: set[str]  # parameters converted with cvta.to.global: certainly pointers
    address_taken: bool


# calls that read their pointer arguments and never write through them
_READ_ONLY_CALLS = {"vprintf", "__assertfail"}


def _flow(fn: ir.Function, through_memory: bool) -> _Flow:
    """Parameter taint to a fixpoint.  through_memory: a value stored anywhere may come back from any
    load (sound, for may-write); otherwise loaded data counts as no pointer (precise, for widths)."""
    index = {p.name for p in fn.params}
    taint: dict[str, frozenset[str]] = {}
    direct: dict[str, str] = {}  # register -> the parameter whose unmodified value it holds
    strong: set[str] = set()
    written: set[str] = set()
    derefs: list[tuple[frozenset[str], tuple[int, str] | None]] = []
    address_taken = False
    mem: frozenset[str] = frozenset()  # taint of every value stored to memory (through_memory only)
    empty: frozenset[str] = frozenset()

    def t_of(op) -> frozenset[str]:
        out = empty
        for r in operand_regs(op):
            out |= taint.get(r.name, empty)
        return out

    changed = True
    while changed:  # taints only grow: at most (#registers x #params) rounds, in practice 2 or 3
        changed = False
        derefs.clear()

        def add(regs: list[ir.Reg], t: frozenset[str]) -> None:
            nonlocal changed
            for r in regs:
                old = taint.get(r.name, empty)
                if not t <= old:
                    taint[r.name] = old | t
                    changed = True

        for ins in fn.instructions:
            op, ops = ins.opcode, ins.operands
            addrs = [i for i, o in enumerate(ops) if isinstance(o, ir.Addr)]
            # a kernel parameter symbol anywhere but as the address of ld.param: its address is taken
            for i, o in enumerate(ops):
                sym = o.base if isinstance(o, ir.Addr) else o
                if isinstance(sym, ir.Sym) and sym.name in index and not (
                        op == "ld" and ins.has("param") and addrs and i == addrs[0]):
                    address_taken = True
            if addrs:
                a = ops[addrs[0]]
                if op == "ld" and ins.has("param") and isinstance(a.base, ir.Sym) and a.base.name in index:
                    add(operand_regs(ops[0]), frozenset({a.base.name}))
                    if a.offset == 0 and isinstance(ops[0], ir.Reg):
                        direct[ops[0].name] = a.base.name
                    continue
                loads = op in _LOADS
                for k, i in enumerate(addrs):
                    b = ops[i].base
                    base_t = taint.get(b.name, empty) if isinstance(b, ir.Reg) else empty
                    if not base_t:
                        continue
                    derefs.append((base_t, _width(ins)))
                    # cp.* reads its later addresses; anything else that is not a load may write
                    # (unknown memory instructions included: assume the worst)
                    if not (loads or (op == "cp" and k > 0)):
                        written |= base_t
                skip = set(addrs) | (set() if op in _STORES else {0})
                vt = frozenset().union(*(t_of(o) for i, o in enumerate(ops) if i not in skip))
                if vt and not loads:
                    if through_memory:
                        if not vt <= mem:
                            mem |= vt
                            changed = True
                    else:  # a pointer stored to memory: whoever loads it back may write through it
                        written |= vt
                if through_memory and op not in _STORES and op not in ("prefetch", "prefetchu"):
                    add(operand_regs(ops[0]), mem)  # loaded data may be any pointer that was stored
                continue
            if op == "call":
                target = next((o.name for o in ops if isinstance(o, ir.Sym)), "")
                if target not in _READ_ONLY_CALLS:  # the callee may write through anything it can reach
                    written |= frozenset().union(*(t_of(o) for o in ops if isinstance(o, ir.CallList | ir.Reg)))
                    written |= mem
                continue
            if not ops:
                continue
            src = frozenset().union(*(t_of(o) for o in ops[1:])) if len(ops) > 1 else empty
            if op == "cvta" and ins.has("to") and ins.has("global") and len(ops) > 1 and \
                    isinstance(ops[1], ir.Reg) and ops[1].name in direct:
                strong.add(direct[ops[1].name])
            if op == "mov" and len(ops) > 1 and isinstance(ops[1], ir.Reg) and ops[1].name in direct \
                    and isinstance(ops[0], ir.Reg):
                direct.setdefault(ops[0].name, direct[ops[1].name])
            if src:
                add(operand_regs(ops[0]), src)
    return _Flow(list(derefs), written, strong, address_taken)


def analyze(module: ir.Module, fn: ir.Function) -> KernelAccess:
    index = {p.name: i for i, p in enumerate(fn.params)}
    wide = {p.name for p in fn.params if ir.type_size(p.type) == 8 and not p.dims}
    acc = [ParamAccess() for _ in fn.params]
    precise = _flow(fn, through_memory=False)
    sound = _flow(fn, through_memory=True)
    for base_t, w in precise.derefs:
        cands = base_t & wide
        owners = cands & precise.strong or (cands if len(cands) == 1 else frozenset())
        for p in owners:
            a = acc[index[p]]
            a.pointer = True
            if w is not None:
                a.widths.setdefault(w[0], set()).add(w[1])
    for p in precise.strong:
        acc[index[p]].pointer = True
    for p in sound.written:
        acc[index[p]].may_write = True
    if sound.address_taken:
        for a in acc:
            a.may_write = True
    from ptxjit.texture import handle_params  # (textures and surfaces: ptxjit/texture.py)

    for name, kind in handle_params(fn).items():
        acc[index[name]].texture = kind

    funcs = reachable_functions(module, fn)
    extern = {v.name: v for v in [*module.globals, *(v for f in funcs for v in f.vars)]
              if v.space == "shared" and (v.linkage == "extern" or (v.dims and v.dims[-1] is None))}
    dyn = False
    need = 0
    for f in funcs:
        for ins in f.instructions:
            for o in ins.operands:
                sym = o.base if isinstance(o, ir.Addr) else o
                if isinstance(sym, ir.Sym) and sym.name in extern:
                    dyn = True
                    w = _width(ins)
                    if isinstance(o, ir.Addr) and w is not None:  # [extern_array+K]: needs K + width bytes
                        need = max(need, sym.offset + o.offset + w[0] * vector_length(ins))
                    else:
                        need = max(need, 1)
    uses_printf = any(isinstance(o, ir.Sym) and o.name == "vprintf"
                      for f in module.functions.values() for ins in f.instructions if ins.opcode == "call"
                      for o in ins.operands)
    return KernelAccess(acc, dyn, need, uses_printf)

