"""Data movement: ld, ldu, st, mov, cvta, isspacep, prefetch, atom, red and the cache-control
instructions (PTX ISA §9.7.9).

State spaces are a modifier group named "space": the matcher also checks that an address naming a
variable (`[gvar]`) is in that space, as ptxas does ("State space mismatch")."""

from __future__ import annotations

from ptxjit.frontend import ir
from ptxjit.isa.spec import (
    SCOPE,
    VEC_MOD,
    Form,
    Match,
    bits,
    d,
    form,
    mods,
    op,
    req,
    s,
    spec,
    types,
)
from ptxjit.isa.special import special_misfit, special_type

LD_TYPES = "b8 b16 b32 b64 b128 u8 u16 u32 u64 s8 s16 s32 s64 f32 f64"
SHARED = "shared shared::cta shared::cluster"
LD_SPACE = mods("space", "const global local param param::entry param::func " + SHARED)
ST_SPACE = mods("space", "global local param param::func " + SHARED)
L1_EVICT = mods("l1", "L1::evict_normal L1::evict_unchanged L1::evict_first L1::evict_last L1::no_allocate")
L2_EVICT = mods("l2", "L2::evict_normal L2::evict_first L2::evict_last")
HINT = mods("hint", "L2::cache_hint")
PREFETCH = mods("prefetch", "L2::64B L2::128B L2::256B")
ADDR = op("a", "addr", None)
POLICY = s("cache-policy", "b64", "reg")


def _vec_size(m: Match) -> str | None:
    n = m.vector
    t = m.types[0]
    if n > 1 and t == "b128":
        return "a .b128 access cannot be a vector (ptxas: vector type too large)"
    if n * bits(t) > 256:
        return f".v{n}.{t} is {n * bits(t)} bits; vectors are at most 256 bits"
    return None


def _ordering(m: Match, orders: tuple[str, ...]) -> str | None:
    sem = m.get("sem")
    if sem in orders and not m.get("scope"):
        return f".{sem} needs a scope (.cta, .cluster, .gpu or .sys)"
    if m.get("scope") and sem not in orders:
        return f"a scope (.{m.get('scope')}) needs a memory order ({' '.join('.' + o for o in orders)})"
    if sem in ("volatile", "relaxed", "acquire", "release", "mmio") and m.get("cop"):
        return f".{sem} cannot be combined with the cache operator .{m.get('cop')}"
    if sem == "mmio" and (m.get("scope") != "sys" or m.get("space") not in (None, "global")):
        return ".mmio needs .relaxed.sys and the global space"
    return None


def _ld_check(m: Match) -> str | None:
    if m.has("nc") and m.get("space") != "global":
        return ".nc needs the .global state space"
    if m.has("nc") and m.get("sem"):
        return f".nc cannot be combined with .{m.get('sem')}"
    return _ordering(m, ("relaxed", "acquire", "mmio")) or _vec_size(m)


def _st_check(m: Match) -> str | None:
    return _ordering(m, ("relaxed", "release", "mmio")) or _vec_size(m)


def _mov_sreg(m: Match, ops: list, ctx) -> str | None:
    a = ops[1] if len(ops) > 1 else None
    st = special_type(a.name) if isinstance(a, ir.Reg) and (ctx is None or a.name not in ctx.regs) else None
    if st is None:
        return None
    if m.types[0][0] == "f":
        return f"a special register ({a.name}) moves only with an integer or bit type, not .{m.types[0]}"
    why = special_misfit(a.name, st, m.types[0], mov=True)
    return None if why is None else f"special register {a.name} (.{st}) {why}, not .{m.types[0]}"


_LD_GROUPS = [mods("sem", "weak volatile relaxed acquire mmio"), SCOPE, LD_SPACE, mods("cop", "ca cg cs lu cv"),
              L1_EVICT, L2_EVICT, PREFETCH, VEC_MOD, mods("nc", "nc")]
_ST_GROUPS = [mods("sem", "weak volatile relaxed release mmio"), SCOPE, ST_SPACE, mods("cop", "wb cg cs wt"),
              L1_EVICT, L2_EVICT, VEC_MOD]

LD_D = d("T", "reg vec", relaxed=True, vec="V")
ST_B = s("b", "T", "reg imm vec", relaxed=True, vec="V")

# ---------------------------------------------------------------- atomics

ATOM_SEM = mods("sem", "relaxed acquire release acq_rel")
ATOM_SPACE = mods("space", "global " + SHARED)
HALF = ("f16", "f16x2", "bf16", "bf16x2")
_OP_TYPES = {
    "and": "b32 b64", "or": "b32 b64", "xor": "b32 b64",
    "cas": "b16 b32 b64 b128", "exch": "b32 b64 b128",
    "add": "u32 s32 u64 f32 f64 f16 f16x2 bf16 bf16x2",
    "inc": "u32", "dec": "u32",
    "min": "u32 s32 u64 s64 f16 f16x2 bf16 bf16x2", "max": "u32 s32 u64 s64 f16 f16x2 bf16 bf16x2",
}


def _atom_check(m: Match) -> str | None:
    o, t = m.get("op") or "", m.types[0]
    if t not in _OP_TYPES.get(o, "").split():
        return f"atom/red .{o} takes {' '.join('.' + x for x in _OP_TYPES[o].split())}, not .{t}"
    if t in HALF and not m.has("noftz"):
        return f".{o}.{t} needs .noftz (ptxas: '.noftz' modifier required)"
    if m.has("noftz") and t not in HALF:
        return f".noftz applies only to .f16/.bf16 types, not .{t}"
    n = m.vector
    if n > 1:
        if t not in ("f32", *HALF):
            return f"vector atomics take .f32/.f16/.bf16 types, not .{t}"
        if m.get("space") != "global":
            return "vector atomics need the .global state space"
        if n * bits(t) > 128:
            return f".v{n}.{t} is wider than 128 bits"
        if t == "f32" and o != "add":
            return f"vector .f32 atomics support only .add, not .{o}"
    elif o in ("min", "max") and t in HALF:
        return f"atom/red .{o}.{t} needs a vector modifier (.v2, .v4 or .v8)"
    return None


_ATOM_GROUPS = [ATOM_SEM, SCOPE, ATOM_SPACE, mods("noftz", "noftz"), VEC_MOD]


def _with_policy(*forms: Form) -> list[Form]:
    """Each form, and its .L2::cache_hint twin with the cache-policy operand (ptxas: the operand
    needs the modifier and the modifier needs the operand)."""
    out = []
    for f in forms:
        out.append(f)
        out.append(Form(f.types, (*f.groups, req("hint", "L2::cache_hint")), (*f.operands, POLICY), f.check))
    return out
_VAL = s("b", "T", "reg imm vec", vec="V")
# ptxas (CUDA 13.0, sm_90a) also takes .shared::cta and leaves out the [mbar] operand
_ASYNC_GROUPS = [mods("sem", "weak relaxed"), mods("scope", "cluster"), mods("space", "shared::cluster shared::cta"),
                 req("completion", "mbarrier::complete_tx::bytes")]
_RED_ASYNC_TYPES = {"inc": "u32", "dec": "u32", "min": "u32 s32", "max": "u32 s32", "add": "u32 s32 u64",
                    "and": "b32", "or": "b32", "xor": "b32"}


def _red_async_check(m: Match) -> str | None:
    o, t = m.get("op") or "", m.types[0]
    if t not in _RED_ASYNC_TYPES[o].split():
        return f"red.async .{o} takes {' '.join('.' + x for x in _RED_ASYNC_TYPES[o].split())}, not .{t}"
    if m.get("sem") == "weak":
        return "red.async takes .relaxed (not .weak)"
    return None

SPECS = [
    spec("ld", "memory",
         form(types(LD_TYPES), _LD_GROUPS, (LD_D, ADDR), check=_ld_check),
         form(types(LD_TYPES), [*_LD_GROUPS, req("hint", "L2::cache_hint")], (LD_D, ADDR, POLICY), check=_ld_check)),
    spec("ldu", "memory", form(types(LD_TYPES), [mods("space", "global"), VEC_MOD], (LD_D, ADDR), check=_vec_size)),
    spec("st", "memory",
         form(types(LD_TYPES), _ST_GROUPS, (ADDR, ST_B), check=_st_check),
         form(types(LD_TYPES), [*_ST_GROUPS, req("hint", "L2::cache_hint")], (ADDR, ST_B, POLICY), check=_st_check)),
    spec("mov", "memory",
         form(types("pred b16 b32 b64 b128 u16 u32 u64 s16 s32 s64 f32 f64"), [],
              (d("T", "reg vec", vec="split"), s("a", "T", "reg imm sreg sym vec", vec="split")),
              operand_check=_mov_sreg)),
    spec("cvta", "memory",
         form(types("u32 u64"), [req("space", "const global local param param::entry " + SHARED)],
              (d(), s("a", "T", "reg sym"))),
         form(types("u32 u64"), [req("to", "to"), req("space", "const global local param param::entry " + SHARED)],
              (d(), s("a", "T", "reg")))),
    spec("isspacep", "memory",
         form((), [req("space", "const global local param param::entry " + SHARED)],
              (d("pred"), s("a", "int32|64", "reg")))),
    spec("prefetch", "memory",
         form((), [mods("space", "global local"), req("level", "L1 L2")], (ADDR,)),
         form((), [mods("space", "global"), req("level", "L2::evict_last L2::evict_normal")], (ADDR,)),
         form((), [mods("space", "const param global"), req("tensormap", "tensormap")], (ADDR,))),
    spec("prefetchu", "memory", form((), [req("level", "L1")], (ADDR,))),
    spec("atom", "atomic", *_with_policy(
         form(types("b32 b64 b128 u32 u64 s32 s64 f32 f64 f16 f16x2 bf16 bf16x2"),
              [*_ATOM_GROUPS, req("op", "and or xor exch add inc dec min max")],
              (d("T", "reg sink vec", vec="V"), ADDR, _VAL), check=_atom_check),
         form(types("b16 b32 b64 b128"), [ATOM_SEM, SCOPE, ATOM_SPACE, req("op", "cas")],
              (d("T", "reg sink"), ADDR, s("b"), s("c")), check=_atom_check),
         # ptxas also takes a fourth .b32 operand for the .b32 bitwise/exchange forms (undocumented)
         form(types("b32"), [ATOM_SEM, SCOPE, ATOM_SPACE, req("op", "and or xor exch")],
              (d("T", "reg sink"), ADDR, s("b"), s("c"))))),
    spec("red", "atomic", *_with_policy(
         form(types("b32 b64 u32 u64 s32 s64 f32 f64 f16 f16x2 bf16 bf16x2"),
              [*_ATOM_GROUPS, req("op", "and or xor add inc dec min max")], (ADDR, _VAL), check=_atom_check))),
    # st.async / red.async (sm_90, §9.7.9.12 and §9.7.13.6): to another CTA's shared memory of the
    # cluster, completing bytes on an mbarrier there ([a], b, [mbar])
    spec("st", "memory",
         form(types("b32 b64 u32 u64 s32 s64 f32 f64"), [req("async", "async"), *_ASYNC_GROUPS, VEC_MOD],
              (ADDR, s("b", "T", "reg imm vec", vec="V"), op("mbar", "addr", None, optional=True)),
              check=_vec_size)),
    spec("red", "atomic",
         form(types("b32 u32 s32 u64"), [req("async", "async"), *_ASYNC_GROUPS,
                                         req("op", "inc dec min max add and or xor")],
              (ADDR, s("b"), op("mbar", "addr", None, optional=True)), check=_red_async_check)),
    spec("applypriority", "memory",
         form((), [mods("space", "global"), req("level", "L2::evict_normal")], (ADDR, s("size", "u32", "imm")))),
    spec("discard", "memory",
         form((), [mods("space", "global"), req("level", "L2")], (ADDR, s("size", "u32", "imm")))),
    spec("createpolicy", "memory",
         form(types("b64"), [req("kind", "fractional"), req("primary", "L2::evict_last L2::evict_normal "
                                                            "L2::evict_first L2::evict_unchanged"),
                             mods("secondary", "L2::evict_first L2::evict_unchanged")],
              (d(), s("fraction", "f32", optional=True))),
         form(types("b64"), [req("kind", "range"), mods("global", "global"),
                             req("primary", "L2::evict_last L2::evict_normal L2::evict_first L2::evict_unchanged"),
                             mods("secondary", "L2::evict_first L2::evict_unchanged")],
              (d(), ADDR, s("primary-size", "u32"), s("total-size", "u32"))),
         form(types("b64"), [req("kind", "cvt"), req("l2", "L2")], (d(), s("a", "b64")))),
    spec("getctarank", "memory",
         form(types("u32 u64"), [mods("space", "shared::cluster")], (d("u32"), s("a", "T", "reg sym")))),
    spec("mapa", "memory",
         form(types("u32 u64"), [mods("space", "shared::cluster")], (d(), s("a", "T", "reg sym"), s("b", "u32")))),
    # ptxas: "No state space qualifier expected for instruction 'alloca'" (the ISA's .local is implied)
    spec("alloca", "memory", form(types("u32 u64"), [],
                                  (d(), s("size", "T"), s("align", "u32", "imm", optional=True)))),
    spec("stacksave", "memory", form(types("u32 u64"), [], (d(),))),
    spec("stackrestore", "memory", form(types("u32 u64"), [], (s("a", "T", "reg"),))),
]
