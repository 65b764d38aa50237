"""Can a kernel's CTAs run on different machines, and how are their results merged?

Builds on runtime/access.py (which parameters a kernel may write through: sound, so no plain write is
missed) and adds, per memory instruction, what distribution needs to know:

- an `atom`/`red` on global memory (through a pointer parameter, a module `.global` variable, or an
  address the analysis cannot attribute) is how CTAs communicate.  The one kind that merges without
  communication is an *add whose result is unused* (`red.add`, or `atom.add` whose destination is `_`
  or never read) through exactly one pointer parameter that the kernel touches in no other way: each
  node then adds into a buffer of zeros and the driver adds the nodes' deltas to the input.  Any other
  global atomic (cas, exch, min, max, inc, ..., or an add whose old value is used -- a ticket) is
  refused;
- a load or store through an address derived from no parameter, module variable or shared memory (a
  pointer read from an array of pointers): it is an address in the driver's process, meaningless on
  another node -- refused (in a device function, addresses from its own parameters come from the
  kernel and are accepted; the merge covers every parameter access.py says it may write);
- ordering between CTAs without atomics (flags): `ld`/`st` with `.volatile`, `.acquire`, `.release` or
  `.relaxed` on non-CTA-local memory, `fence`/`membar` beyond CTA scope, grid barriers: refused;
- a parameter both read and written: each node reads the *input* values, never another node's writes.
  That is what the kernel computes only if no CTA reads what another CTA writes.  Accepted when every
  load through the parameter uses an address that a store through it also uses (the same single-
  definition register and offset: `y[i] = a * x[i] + y[i]`): a thread then reads only locations it
  writes itself, and two CTAs sharing such a location race on a GPU as well.  Anything else (a
  stencil updating in place, a scan over its own output) is refused -- the analysis cannot separate it.

Refused kernels raise DistributionRefused naming the kernel and the reason; they are never run on one
node quietly (a program that asked for a cluster would silently lose it).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ptxjit.frontend import ir
from ptxjit.runtime.access import KernelAccess, operand_regs, reachable_functions

# PTX types of an atomic add -> the NumPy dtype its delta merges as
DELTA_DTYPES: dict[str, np.dtype] = {t: np.dtype(d) for t, d in {
    "u32": np.uint32, "s32": np.int32, "b32": np.uint32, "u64": np.uint64, "s64": np.int64, "b64": np.uint64,
    "f32": np.float32, "f64": np.float64, "f16": np.float16}.items()}

_CTA_SPACES = {"shared", "local", "param", "const"}  # memory no other CTA sees (or nobody writes)
_ORDERING = {"volatile", "acquire", "release", "relaxed"}


class DistributionRefused(ValueError):
    """The kernel's CTAs communicate in a way that cannot be split across machines."""


@dataclass
class Plan:
    """How a launch of one kernel is distributed."""

    kernel: str
    written: set[int] = field(default_factory=set)  # parameter indices merged by diff
    delta: dict[int, np.dtype] = field(default_factory=dict)  # parameter index -> dtype of its adds
    refused: str | None = None  # the reason, when the kernel cannot be distributed

    def check(self) -> None:
        if self.refused is not None:
            raise DistributionRefused(f"kernel '{self.kernel}' cannot be distributed: {self.refused}")


def _space(ins: ir.Instr) -> str:
    for m in ins.mods:
        base = m.split("::")[0]
        if base in ("global", "shared", "local", "param", "const", "generic"):
            return base
    return "generic"


def _where(ins: ir.Instr, source: str) -> str:
    pos = getattr(ins, "pos", None)
    line = getattr(pos, "line", None)
    text = f"{ins.opcode}{''.join('.' + m for m in ins.mods)}"
    return f"'{text}' at {source}:{line}" if line else f"'{text}'"


def _pname(fn: ir.Function, index: dict[str, int], p: str) -> str:
    return f"parameter {index[p]} ('{p}')"


def _taints(fn: ir.Function, params: set[str], shared_syms: set[str],
            global_syms: set[str]) -> tuple[dict, dict, dict, dict]:
    """Per register: the parameters its value derives from; whether it derives from a shared-memory
    symbol (a generic address of shared memory); the module `.global` variable it derives from (for
    messages); how often it is defined."""
    taint: dict[str, frozenset[str]] = {}
    shared: dict[str, bool] = {}
    gvar: dict[str, str] = {}
    defs: dict[str, int] = {}
    empty: frozenset[str] = frozenset()
    for ins in fn.instructions:
        if ins.operands and isinstance(ins.operands[0], ir.Reg) and ins.opcode not in ("st", "red"):
            defs[ins.operands[0].name] = defs.get(ins.operands[0].name, 0) + 1
    changed = True
    # values stored to shared or local memory come back from its loads (Triton passes pointer tensors
    # through shared memory; nvcc -O0 spills them to local): flow-insensitively, any such load may
    # return any such stored value
    mem: frozenset[str] = empty
    while changed:
        changed = False
        for ins in fn.instructions:
            ops = ins.operands
            if ins.opcode == "st" and _space(ins) in ("shared", "local"):
                vt = frozenset().union(*(taint.get(r.name, empty) for o in ops
                                         if not isinstance(o, ir.Addr) for r in operand_regs(o)))
                if not vt <= mem:
                    mem |= vt
                    changed = True
                continue
            if not ops or ins.opcode in ("st", "red", "call") or not isinstance(ops[0], ir.Reg):
                continue
            dst = ops[0].name
            t, sh = empty, False
            if ins.opcode == "ld" and _space(ins) in ("shared", "local"):
                t = mem
            for o in ops[1:]:
                if isinstance(o, ir.Addr):
                    if ins.opcode == "ld" and ins.has("param") and isinstance(o.base, ir.Sym) \
                            and o.base.name in params:
                        t |= {o.base.name}
                    continue  # other loaded values are data, not addresses
                if isinstance(o, ir.Sym) and o.name in shared_syms:
                    sh = True
                if isinstance(o, ir.Sym) and o.name in global_syms:
                    gvar.setdefault(dst, o.name)
                for r in operand_regs(o):
                    t |= taint.get(r.name, empty)
                    sh = sh or shared.get(r.name, False)
                    if r.name in gvar and dst not in gvar:
                        gvar[dst] = gvar[r.name]
                        changed = True
            if ins.opcode == "cvta" and (ins.has("shared") or ins.has("local")) and not ins.has("to"):
                sh = True
            if not t <= taint.get(dst, empty) or (sh and not shared.get(dst)):
                taint[dst] = taint.get(dst, empty) | t
                shared[dst] = shared.get(dst, False) or sh
                changed = True
    return taint, shared, gvar, defs


def plan_kernel(module: ir.Module, fn: ir.Function, access: KernelAccess) -> Plan:
    plan = Plan(fn.name)
    names = [p.name for p in fn.params]
    index = {n: i for i, n in enumerate(names)}
    params = set(names)
    funcs = reachable_functions(module, fn)
    # CTA-private memory (shared, and local: per thread), whose generic addresses are no global memory
    shared_syms = {v.name for v in [*module.globals, *(v for f in funcs for v in f.vars)]
                   if v.space in ("shared", "local")}
    global_syms = {v.name for v in module.globals if v.space in ("global", "const")}
    wide = {p.name for p in fn.params if ir.type_size(p.type) == 8 and not p.dims}
    pointers = {p.name for p, a in zip(fn.params, access.params, strict=True) if a.pointer}
    reasons: list[str] = []
    adds: dict[str, set[str]] = {}  # parameter -> PTX types of its result-unused adds
    other_use: set[str] = set()  # parameters also accessed by plain loads/stores or other atomics
    loads: dict[str, set[tuple[str, int]]] = {}
    stores: dict[str, set[tuple[str, int]]] = {}
    for f in funcs:
        # in a device function, its own parameters stand for what the kernel passed (not attributed)
        own = set() if f is fn else {p.name for p in [*f.params, *f.rets]}
        taint, shared, gvar, defs = _taints(f, params if f is fn else own, shared_syms, global_syms)
        used = {r.name for ins in f.instructions for i, o in enumerate(ins.operands)
                if i > 0 or ins.opcode in ("st", "red") for r in operand_regs(o)}
        used |= {o.base.name for ins in f.instructions for o in ins.operands
                 if isinstance(o, ir.Addr) and isinstance(o.base, ir.Reg)}
        used |= {ins.guard.name for ins in f.instructions if ins.guard is not None}
        for ins in f.instructions:
            op = ins.opcode
            if op in ("fence", "membar"):
                if not (ins.has("cta") or ins.has("proxy")):
                    reasons.append(f"{_where(ins, module.source_name)} orders memory between CTAs")
                continue
            if op == "barrier" and ins.has("cluster"):
                reasons.append(f"{_where(ins, module.source_name)} synchronizes CTAs of a cluster")
                continue
            addr = next((o for o in ins.operands if isinstance(o, ir.Addr)), None)
            if addr is None or op not in ("ld", "st", "atom", "red", "ldu"):
                continue
            space = _space(ins)
            base = addr.base
            if space in _CTA_SPACES:
                continue
            if isinstance(base, ir.Sym):
                if base.name in shared_syms:
                    continue
                owners: frozenset[str] = frozenset()
                is_global_var = base.name in global_syms
            else:
                if base is not None and shared.get(base.name):
                    continue
                owners = taint.get(base.name, frozenset()) & wide if base is not None else frozenset()
                if len(owners) > 1:  # an address from a pointer plus a 64-bit index: the pointer owns it
                    owners = owners & pointers or owners
                is_global_var = base is not None and base.name in gvar
                if is_global_var:
                    base = ir.Sym(gvar[base.name])
            if op in ("atom", "red"):
                dst = ins.operands[0] if op == "atom" else None
                unused = op == "red" or (isinstance(dst, ir.Reg) and (dst.name == "_" or dst.name not in used))
                t = (ins.types() or [""])[-1]
                if ins.has("add") and unused and len(owners) == 1 and t in DELTA_DTYPES:
                    adds.setdefault(next(iter(owners)), set()).add(t)
                    continue
                what = ("an atomic whose result is used" if not unused else
                        "a global atomic other than an add" if not ins.has("add") else
                        f"an atomic add of {t or 'unknown type'}, which does not merge as a delta"
                        if t not in DELTA_DTYPES else
                        "an atomic add outside a pointer parameter (only those merge as deltas)")
                target = (f"variable '{base.name}'" if is_global_var else
                          _pname(fn, index, next(iter(owners))) if len(owners) == 1 else "memory it cannot attribute")
                reasons.append(f"{_where(ins, module.source_name)} on {target} is {what}: its CTAs communicate "
                               "through it")
                continue
            if any(m in _ORDERING for m in ins.mods) and not ins.has("weak"):
                reasons.append(f"{_where(ins, module.source_name)} orders memory between CTAs (a flag)")
                continue
            from_caller = isinstance(base, ir.Reg) and bool(taint.get(base.name, frozenset()) & own)
            if not owners and not from_caller and not is_global_var and \
                    not (isinstance(base, ir.Sym) and base.name in global_syms):
                # a pointer read from memory (an array of pointers), or arithmetic the analysis loses:
                # an address of the driver's process means nothing on another node
                verb = "reads" if op in ("ld", "ldu") else "writes"
                reasons.append(f"{_where(ins, module.source_name)} {verb} through an address the analysis cannot "
                               "attribute to a parameter (a pointer read from memory cannot travel)")
                continue
            for p in owners:
                other_use.add(p)
                if isinstance(base, ir.Reg) and defs.get(base.name, 0) <= 1:
                    key = (base.name, addr.offset)
                else:
                    key = ("?", id(ins))  # a redefined register: never matches another access
                (loads if op in ("ld", "ldu") else stores).setdefault(p, set()).add(key)
    for p, types in adds.items():
        if p in other_use:
            reasons.append(f"{_pname(fn, index, p)} takes atomic adds and other accesses: its CTAs communicate")
        elif len(types) > 1:
            reasons.append(f"{_pname(fn, index, p)} takes atomic adds of several types ({', '.join(sorted(types))})")
        else:
            plan.delta[index[p]] = DELTA_DTYPES[next(iter(types))]
    for i, pa in enumerate(access.params):
        if pa.may_write and i not in plan.delta and names[i] in wide:
            plan.written.add(i)
            p = names[i]
            extra = loads.get(p, set()) - stores.get(p, set())
            if extra:
                reasons.append(f"{_pname(fn, index, p)} is read and written, and the analysis cannot show that "
                               "no CTA reads what another writes")
    if reasons:
        uniq = list(dict.fromkeys(reasons))
        more = f"; and {len(uniq) - 3} more" if len(uniq) > 3 else ""
        plan.refused = "; ".join(uniq[:3]) + more
    return plan
