"""Matching one instruction against its InstrSpec: modifiers first (cached per opcode text), then
operands against the function's declared registers, variables and labels.

`check(ins, ctx)` returns a `Verdict`: ok with the matching form, or the reason ptxas would refuse
the instruction, phrased as what was expected.  When no form matches, the reason comes from the form
that got furthest (types < modifiers < combinations < operand count < operand kinds/classes), which
is the one the author most likely meant.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ptxjit.frontend import ir
from ptxjit.isa.spec import (
    ADDR,
    IMM,
    LABEL,
    LIST,
    PAIR,
    PTXAS_IGNORED,
    REG,
    SINK,
    SREG,
    SYM,
    TYPE_TOKENS,
    U32_OR_PRED,
    VEC,
    Form,
    InstrSpec,
    Match,
    OperandSpec,
    bits,
    describe_class,
    kind_of,
    reg_fits,
    resolve_class,
)
from ptxjit.isa.special import special_form_error, special_misfit, special_type

ANY = "any"  # an operand kind that is not checked (texture/surface operand lists)
SEL = "sel"  # a register may carry a video byte/half selector (%r1.b0)
MINUS = "minus"  # a register may be negated (vmad's -%r1)


@dataclass
class Context:
    """What the operand checks need to know about the function an instruction is in."""

    regs: dict[str, str] = field(default_factory=dict)  # register -> declared type
    symbols: dict[str, str] = field(default_factory=dict)  # variable/function -> state space or "func"
    labels: frozenset[str] = frozenset()
    address_size: int = 64
    # no function at hand: unknown registers and symbols are taken as declared and fitting, so only
    # modifiers, types, operand counts and kinds are checked
    lenient: bool = False
    sm: int | None = None  # the module's .target (sm_90a -> 90); None: unknown
    version: tuple[int, int] | None = None  # the module's .version

    @classmethod
    def for_function(cls, module: ir.Module, fn: ir.Function) -> Context:
        syms: dict[str, str] = {v.name: v.space for v in module.globals}
        syms.update({name: "func" for name in module.functions})
        syms.update({p.name: "param" for p in [*fn.params, *fn.rets]})
        syms.update({v.name: v.space for v in fn.vars})
        labels = frozenset(s.name for s in fn.body or () if isinstance(s, ir.Label))
        sm = next((int(t[3:].rstrip("af")) for t in module.target if t[:3] == "sm_" and t[3:].rstrip("af").isdigit()),
                  None)
        ver = module.version.split(".")
        version = (int(ver[0]), int(ver[1])) if len(ver) == 2 and all(v.isdigit() for v in ver) else None
        return cls(fn.regs, syms, labels | frozenset(fn.branch_tables), module.address_size, sm=sm,
                   version=version)


@dataclass
class Verdict:
    ok: bool
    reason: str = ""
    match: Match | None = None


# ---------------------------------------------------------------- rendering

def fmt_operand(x) -> str:
    if isinstance(x, ir.Reg):
        sel = getattr(x, "sel", "")
        sign = ("!" if x.neg else "") + ("-" if getattr(x, "minus", False) else "")
        return sign + x.name + (f".{sel}" if sel else "")
    if isinstance(x, ir.Imm):
        return str(x.value)
    if isinstance(x, ir.FImm):
        if x.bits is not None:
            return f"0{'f' if x.width == 32 else 'd'}{x.bits:0{8 if x.width == 32 else 16}x}"
        return repr(x.value)
    if isinstance(x, ir.Sym):
        return x.name + (f"+{x.offset}" if x.offset else "")
    if isinstance(x, ir.Addr):
        base = "" if x.base is None else fmt_operand(x.base)
        if base and x.offset:
            return f"[{base}{'+' if x.offset > 0 else ''}{x.offset}]"
        return f"[{base or x.offset}]"
    if isinstance(x, ir.Vec):
        return "{" + ", ".join(fmt_operand(i) for i in x.items) + "}"
    if isinstance(x, ir.Pair):
        return f"{x.first.name}|{x.second.name}"
    if isinstance(x, ir.CallList):
        return "(" + ", ".join(fmt_operand(i) for i in x.items) + ")"
    return str(x)


def fmt_instr(ins: ir.Instr) -> str:
    """The instruction as PTX text, e.g. '@%p1 sub.f32 %f1, %rd1, %f2;'."""
    g = ""
    if ins.guard is not None:
        g = f"@{'!' if ins.guard.neg else ''}{ins.guard.name} "
    ops = ", ".join(fmt_operand(x) for x in ins.operands)
    return f"{g}{ins.text}{' ' if ops else ''}{ops};"


# ---------------------------------------------------------------- modifiers

_STATE_SPACES = frozenset({"const", "global", "local", "shared", "param", "tex", "shared::cta", "shared::cluster",
                           "param::entry", "param::func"})
_FORM_CACHE: dict[tuple[str, tuple[str, ...]], tuple[list[Match], tuple[int, str]]] = {}


def _match_form(f: Form, tys: tuple[str, ...], others: list[str], loose: bool = False) -> Match | tuple[int, str]:
    if not loose and (len(tys) != len(f.types) or any(t not in slot for t, slot in zip(tys, f.types, strict=True))):
        return 1, ""
    chosen: dict[str, str] = {}
    seen: dict[str, int] = {}
    for m in others:
        # a modifier of several groups (createpolicy's primary and secondary eviction priority) goes
        # to the first one that still has room: `.L2::evict_last.L2::evict_first` is primary, secondary
        cands = [g for g in f.groups if m in g.values]
        if not cands:
            return 2, f"modifier .{m} is not allowed here"
        g = next((c for c in cands if seen.get(c.name, 0) < c.repeat), cands[0])
        if len(g.values) == 1 and chosen.get(g.name) == m:
            continue  # ptxas accepts a repeated flag (mul.sat.rn.sat.f32), not a repeated rounding mode
        seen[g.name] = seen.get(g.name, 0) + 1
        if seen[g.name] > g.repeat:
            return 2, f".{chosen[g.name]} and .{m} cannot be combined (both are {g.name})"
        chosen.setdefault(g.name, m)
    for g in f.groups:
        if g.required and g.name not in chosen:
            return 3, f"needs one of {', '.join('.' + v for v in g.values)} ({g.name})"
    m = Match(f, tys, chosen)
    if f.check is not None:
        why = f.check(m)
        if why:
            return 4, why
    return m


def match_modifiers(spec: InstrSpec, ins: ir.Instr) -> tuple[list[Match], tuple[int, str]]:
    """All forms whose types and modifiers fit, and the best failure reason if none does."""
    key = (ins.opcode, ins.mods)
    hit = _FORM_CACHE.get(key)
    if hit is not None:
        return hit
    known = spec.modifiers
    tys = tuple(m for m in ins.mods if m in TYPE_TOKENS)
    others = [m for m in ins.mods if m not in TYPE_TOKENS and (m in known or m not in PTXAS_IGNORED)]
    matches: list[Match] = []
    best: tuple[int, str] = (0, "")
    unknown = [m for m in others if m not in known]
    if spec.loose_types is not None:
        bad = [t for t in tys if t not in spec.loose_types]
        if unknown or bad:
            best = (0, f"unknown modifier .{(unknown or bad)[0]} for {ins.opcode}")
        else:
            r = _match_form(spec.forms[0], tys, others, loose=True)
            if isinstance(r, Match):
                matches.append(r)
            else:
                best = r
    elif unknown and unknown[0] in _STATE_SPACES and any(g.name == "space" for f in spec.forms for g in f.groups):
        spaces = sorted({v for f in spec.forms for g in f.groups if g.name == "space" for v in g.values})
        best = (0, f"state space .{unknown[0]} is incorrect for {ins.opcode} (ptxas: State space incorrect); "
                   f"{ins.opcode} takes {' '.join('.' + v for v in spaces)} or none (generic)")
    elif unknown:
        best = (0, f"unknown modifier .{unknown[0]} for {ins.opcode}" + _expected_mods(spec))
    elif any(t not in spec.type_names for t in tys) or not any(len(f.types) == len(tys) for f in spec.forms):
        best = (1, _expected_types(spec, tys))
    else:
        for f in spec.forms:
            r = _match_form(f, tys, others)
            if isinstance(r, Match):
                matches.append(r)
            elif r[0] > best[0]:
                best = r
        if not matches and best[0] <= 1:
            best = (1, _expected_types(spec, tys))
    res = (matches, best)
    if len(_FORM_CACHE) < 100_000:
        _FORM_CACHE[key] = res
    return res


def _expected_mods(spec: InstrSpec) -> str:
    groups: dict[str, list[str]] = {}
    for f in spec.forms:
        for g in f.groups:
            vals = groups.setdefault(g.name, [])
            vals.extend(v for v in g.values if v not in vals)
    if not groups:
        return f" ({spec.opcode} takes no modifiers besides its type)"
    return " (expected " + "; ".join(f"{k}: {' '.join('.' + v for v in vs)}" for k, vs in groups.items()) + ")"


def _expected_types(spec: InstrSpec, tys: tuple[str, ...]) -> str:
    combos = []
    for f in spec.forms:
        c = ".".join("|".join(sorted(s)) for s in f.types) or "(none)"
        if c not in combos:
            combos.append(c)
    got = "." + ".".join(tys) if tys else "no type"
    return f"impossible type {got} for {spec.opcode}; expected {' or '.join('.' + c for c in combos[:6])}"


# ---------------------------------------------------------------- operands

def _imm_ok(x, cls: str | None) -> str | None:
    if cls is None or cls in ("any",):
        return None
    k = kind_of(cls)
    if isinstance(x, ir.Imm):
        if k in "bus" or cls == "pred":
            return None
        return f"an integer literal cannot be a .{cls} operand (write a float literal such as 0f3F800000)" \
            if cls in ("f32", "f64") else f"no immediate is allowed for a .{cls} operand"
    if isinstance(x, ir.FImm):
        # as ptxas: a .b32 operand takes a 0f literal's bits, a .b64 one a 0d literal's or a decimal's
        # (as .f64); the float types take any float literal
        if cls in ("f32", "f64") or (cls == "b32" and x.width == 32) or (cls == "b64" and x.width in (None, 64)):
            return None
        if k == "b" and bits(cls) in (32, 64):
            form = "0f followed by 8 hex digits" if cls == "b32" else "0d followed by 16 hex digits, or a decimal"
            return f"a .{cls} operand takes a float literal only as its bits: {form}"
        return f"a float literal cannot be a .{cls} operand"
    return None


def check_operand(i: int, o: OperandSpec, x, m: Match, ctx: Context, opname: str) -> str | None:
    cls = resolve_class(o.cls, m.types)
    kinds = o.kinds
    where = f"operand {i + 1} ({o.name}) of {opname}"
    if ANY in kinds:
        return regs_declared(x, ctx, where)
    vec = o.vec
    if vec == "V":
        vec = m.vector if m.vector > 1 else None
    if vec == "split":  # mov pack/unpack: a vector of 2 or 4 pieces of the type
        if isinstance(x, ir.Vec):
            n = len(x.items)
            if n not in (2, 4) or cls is None or bits(cls) // n < 8:
                return f"{where} must be a vector of 2 or 4 parts of .{cls}, got {fmt_operand(x)}"
            part = f"b{bits(cls) // n}"
            for e in x.items:
                why = _scalar(e, OperandSpec(o.name, frozenset({REG, SINK} if o.dst else {REG, IMM}), part,
                                             o.dst), part, ctx, where)
                if why:
                    return why
            return None
    elif vec == "*":  # a fragment: a vector of any length (or one register), elements of class cls
        if isinstance(x, ir.Vec):
            eo = OperandSpec(o.name, frozenset({REG, SINK} if o.dst else {REG}), o.cls, o.dst)
            for e in x.items:
                why = _scalar(e, eo, cls, ctx, where)
                if why:
                    return why
            return None
        return _scalar(x, o, cls, ctx, where, m)
    elif isinstance(vec, int):
        if not isinstance(x, ir.Vec):
            if vec == 1 and isinstance(x, ir.Reg):
                return _scalar(x, o, cls, ctx, where)
            return f"{where} must be a vector of {vec} registers {{...}}, got {fmt_operand(x)}"
        if len(x.items) != vec:
            return f"{where} must be a vector of {vec} elements, got {len(x.items)}: {fmt_operand(x)}"
        ecls = resolve_class(o.vec_cls or cls, m.types)
        # ptxas: vector elements are not widened (ld.v2.u32 takes no .b64 element) except below 32
        # bits; an element of another type is accepted when it has the size of an element that fits
        eo = OperandSpec(o.name, frozenset(kinds - {VEC} | ({SINK} if o.dst else set())), o.vec_cls or o.cls,
                         o.dst, relaxed=o.relaxed and bits(ecls or "") < 32)
        whys = [_scalar(e, eo, ecls, ctx, where) for e in x.items]
        sizes = {bits(ctx.regs.get(e.name, "")) for e, w in zip(x.items, whys, strict=True)
                 if w is None and isinstance(e, ir.Reg) and e.name in ctx.regs}
        # (ptxas even takes a .pred element in a vector of 32-bit integers: ld.v2.u32 {%p, %r})
        pred_ok = bool(sizes) and bits(ecls or "") == 32 and kind_of(ecls or "") in "bus"
        for e, why in zip(x.items, whys, strict=True):
            rt = ctx.regs.get(e.name) if isinstance(e, ir.Reg) else None
            if why and not (rt is not None and (bits(rt) in sizes and rt != "pred" or rt == "pred" and pred_ok)):
                return why
        return None
    if isinstance(x, ir.Vec) and VEC not in kinds:
        # ptxas accepts a one-element vector {%r} where a scalar goes
        if len(x.items) == 1 and REG in kinds:
            return _scalar(x.items[0], o, cls, ctx, where)
        if vec is None and o.vec == "V":
            return f"{where} is a vector but the instruction has no .v{len(x.items)} modifier"
        return f"{where} must be {_kind_words(kinds, cls, o)}, got the vector {fmt_operand(x)}"
    if isinstance(x, ir.Vec):
        for e in x.items:
            why = regs_declared(e, ctx, where)
            if why:
                return why
        return None
    return _scalar(x, o, cls, ctx, where, m)


_KIND_WORDS = ((IMM, "an immediate"), (ADDR, "an address [..]"), (VEC, "a vector {..}"), (LABEL, "a label"),
               (SYM, "a variable or function name"), (SREG, "a special register"), (LIST, "a parenthesised list"))


def _kind_words(kinds: frozenset[str], cls: str | None, o: OperandSpec) -> str:
    words = [describe_class(cls, o.relaxed) if cls else "a register"] if REG in kinds else []
    words += [word for kind, word in _KIND_WORDS if kind in kinds]
    return " or ".join(words) or "nothing"


def regs_declared(x, ctx: Context, where: str) -> str | None:
    if ctx.lenient:
        return None
    if isinstance(x, ir.Reg):
        if x.name != "_" and x.name not in ctx.regs and special_type(x.name) is None:
            return f"register {x.name} is not declared ({where})"
    elif isinstance(x, ir.Addr) and isinstance(x.base, ir.Reg):
        return regs_declared(x.base, ctx, where)
    elif isinstance(x, ir.Vec | ir.CallList):
        for e in x.items:
            why = regs_declared(e, ctx, where)
            if why:
                return why
    elif isinstance(x, ir.Pair):
        return regs_declared(x.first, ctx, where) or regs_declared(x.second, ctx, where)
    return None


def _scalar(x, o: OperandSpec, cls: str | None, ctx: Context, where: str, m: Match | None = None) -> str | None:
    kinds = o.kinds
    expected = _kind_words(kinds, cls, o)
    if isinstance(x, ir.Pair):
        if PAIR not in kinds:
            return f"{where} must be {expected}, got the pair {fmt_operand(x)}"
        if x.first.name == "_" and x.second.name == "_":
            return f"{where}: both halves of {fmt_operand(x)} are discarded"
        first_o = OperandSpec(o.name, frozenset({REG, SINK}) if SINK in kinds else frozenset({REG}), cls, True)
        return (_scalar(x.first, first_o, cls, ctx, where) or
                _scalar(x.second, OperandSpec(o.name, frozenset({REG, SINK}), "pred", True), "pred", ctx, where))
    if isinstance(x, ir.Reg):
        if x.name == "_":
            return None if SINK in kinds else f"{where}: the sink _ is not allowed here (ptxas: result discard " \
                "mode is not allowed)"
        if getattr(x, "sel", "") and SEL not in kinds:
            return f"{where}: a video selector ({x.name}.{x.sel}) is allowed only on the a/b operands (and d) " \
                "of video instructions"
        if getattr(x, "minus", False) and MINUS not in kinds:
            return f"{where}: operand negation (-{x.name}) is allowed only in vmad"
        st = special_type(x.name)
        rt = ctx.regs.get(x.name)
        if rt is None and st is not None:
            if SREG not in kinds:
                return f"{where}: special register {x.name} is not allowed here (ptxas allows them in mov and cvt)"
            if special_misfit(x.name, st, cls) is not None:
                return f"{where} must be {describe_class(cls)}, got {x.name} (.{st})"
            return None
        if rt is None and (why := special_form_error(x.name)) is not None:
            return f"{where}: {why}"
        if rt is None and ctx.lenient:
            return None if REG in kinds else f"{where} must be {expected}, got {x.name}"
        if rt is None:
            return f"register {x.name} is not declared ({where})"
        if REG not in kinds:
            return f"{where} must be {expected}, got the register {x.name}"
        if x.neg and (o.dst or not (cls == "pred" or cls == U32_OR_PRED and rt == "pred")):
            return f"{where}: '!' negates only predicate sources, got !{x.name}"
        typed = o.cls is not None and o.cls[0] in "TW"
        if cls is not None and not reg_fits(rt, cls, o.relaxed, typed):
            return f"{where} must be {describe_class(cls, o.relaxed)}, got {x.name} (.{rt})"
        return None
    if isinstance(x, ir.Imm | ir.FImm):
        if o.dst:
            return f"{where} is a result and must be a register, got {fmt_operand(x)}"
        if IMM not in kinds:
            return f"{where} must be {expected}, got the immediate {fmt_operand(x)}"
        return _imm_ok(x, cls)
    if isinstance(x, ir.Addr):
        if ADDR not in kinds:
            return f"{where} must be {expected}, got the address {fmt_operand(x)}"
        return _address(x, ctx, where, m)
    if isinstance(x, ir.Sym):
        if ctx.lenient and (LABEL in kinds or SYM in kinds):
            return None
        if LABEL in kinds and x.name in ctx.labels:
            return None
        if SYM in kinds and x.name in ctx.symbols:
            vs = ctx.symbols[x.name]
            sp = m.get("space") if m is not None else None
            if sp and vs != "func" and _SPACE_OF.get(sp, sp) != vs:
                return f"{where}: state space mismatch: .{sp} instruction, but {x.name} is a .{vs} variable"
            return None
        if (IMM in kinds and (x.offset or x.with_offset) and not o.dst and cls is not None and kind_of(cls) in "bus"
                and ctx.symbols.get(x.name) not in (None, "func")):
            return None  # `var+4`: ptxas reads a variable's address plus an offset as an integer constant
        if LABEL in kinds and SYM not in kinds:
            return f"{where}: unknown label {x.name}"
        if SYM in kinds or LABEL in kinds:
            return f"{where}: unknown symbol {x.name}"
        return f"{where} must be {expected}, got {x.name}" + \
            ("" if x.name in ctx.symbols else " (not a declared register)")
    if isinstance(x, ir.CallList):
        if LIST not in kinds:
            return f"{where} must be {expected}, got {fmt_operand(x)}"
        return regs_declared(x, ctx, where)
    return f"{where} must be {expected}, got {fmt_operand(x)}"


_SPACE_OF = {"shared::cta": "shared", "shared::cluster": "shared", "param::entry": "param",
             "param::func": "param", "const": "const", "global": "global", "local": "local",
             "shared": "shared", "param": "param"}


def _address(x: ir.Addr, ctx: Context, where: str, m: Match | None) -> str | None:
    space = None
    has_space = m is not None and any(g.name == "space" for g in m.form.groups)
    if m is not None:
        sp = m.get("space")
        space = _SPACE_OF.get(sp or "", sp)
    if ctx.lenient:
        return None
    if isinstance(x.base, ir.Reg):
        rt = ctx.regs.get(x.base.name)
        if rt is None:
            if special_type(x.base.name) is not None:
                return f"{where}: a special register cannot be an address"
            return f"register {x.base.name} is not declared ({where})"
        if rt in ("pred", "b128", "f16x2") or kind_of(rt) == "f":
            return f"{where}: address register {x.base.name} is .{rt}; an address needs an integer or bit-size " \
                "register"
        if ctx.address_size == 64 and bits(rt) == 32 and has_space and space in (None, "global"):
            return f"{where}: {x.base.name} is a 32-bit register but addresses in the " \
                f"{space or 'generic'} space are 64-bit (.address_size 64)"
        return None
    if isinstance(x.base, ir.Sym):
        vs = ctx.symbols.get(x.base.name)
        if vs is None:
            return f"{where}: unknown variable {x.base.name} in address"
        if vs == "func":
            return f"{where}: {x.base.name} is a function, not a variable"
        if space is not None and space != vs and not (space == "param" and vs == "param"):
            return f"{where}: state space mismatch: .{space} instruction, but {x.base.name} is a .{vs} variable"
        if space is None and vs == "param" and has_space:
            return f"{where}: {x.base.name} is a .param variable; a generic access cannot reach it (use ld.param)"
        if space is None and vs == "const" and has_space:
            # ptxas: state space mismatch (a generic access names .global, .shared and .local variables only)
            return f"{where}: {x.base.name} is a .const variable; a generic access cannot name it (use ld.const, " \
                "or cvta.const for its generic address)"
        return None
    return None


def check_operands(spec: InstrSpec, m: Match, ins: ir.Instr, ctx: Context) -> tuple[int, str] | None:
    ops = ins.operands
    f = m.form
    n_req = sum(not o.optional for o in f.operands)
    n_max = len(f.operands)
    if not n_req <= len(ops) <= n_max:
        want = str(n_req) if n_req == n_max else f"{n_req} to {n_max}"
        sig = ", ".join(("{" + o.name + "}") if o.optional else o.name for o in f.operands)
        return 5, f"{ins.text} takes {want} operand{'s' if n_max != 1 else ''} ({sig}), got {len(ops)}"
    for i, (o, x) in enumerate(zip(f.operands, ops, strict=False)):
        why = check_operand(i, o, x, m, ctx, ins.text)
        if why:
            return 6, why
    if f.operand_check is not None:
        why = f.operand_check(m, ops, ctx)
        if why:
            return 7, why
    return None


def check(spec: InstrSpec, ins: ir.Instr, ctx: Context) -> Verdict:
    """Match `ins` against `spec`: ok with the form, or the reason it is not valid PTX."""
    if ins.guard is not None and not ctx.lenient:
        g = ins.guard
        gt = ctx.regs.get(g.name)
        if gt is None and special_type(g.name) is None:
            return Verdict(False, f"guard register {g.name} is not declared")
        if gt != "pred":
            what = f".{gt}" if gt else f"a special register (.{special_type(g.name)})"
            return Verdict(False, f"the guard @{g.name} must be a predicate register (.pred), got {what}")
    matches, best = match_modifiers(spec, ins)
    if not matches:
        return Verdict(False, best[1] or f"no form of {spec.opcode} fits")
    if spec.variadic is not None:
        why = spec.variadic(matches[0], ins, ctx)
        return Verdict(why is None, why or "", matches[0])
    fail: tuple[int, str] | None = None
    for m in matches:
        r = check_operands(spec, m, ins, ctx)
        if r is None:
            return Verdict(True, "", m)
        if fail is None or r[0] > fail[0]:
            fail = r
    assert fail is not None
    return Verdict(False, fail[1])
