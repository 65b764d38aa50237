"""Asynchronous copies (PTX ISA §9.7.9.25): cp.async (sm_80), cp.async.bulk and its groups (sm_90),
cp.reduce.async.bulk, and the tensor (TMA) forms.  All are opcode `cp`; the forms tell them apart by
their required modifiers.  The bulk tensor forms are described loosely (modifier vocabulary and
operand count), as ptxjit refuses them anyway."""

from __future__ import annotations

from ptxjit.frontend import ir
from ptxjit.isa.spec import U32_OR_PRED, Match, form, mods, op, req, s, spec, types

ASYNC = req("async", "async")
BULK = req("bulk", "bulk")
HINT = mods("hint", "L2::cache_hint")
A = op("a", "addr", None)
POLICY = s("cache-policy", "b64", "reg", optional=True)
# cp.async's fourth operand: src-size (a 32-bit integer) or ignore-src (a predicate, which may be negated)
SRC_SIZE = s("src-size", U32_OR_PRED, "reg imm", optional=True)
POLICY_REQ = s("cache-policy", "b64", "reg")
MBAR = req("completion", "mbarrier::complete_tx::bytes")
REDOPS = "add min max inc dec and or xor"

# the state space a .dst/.src modifier names, as a variable's declaration spells it
_VAR_SPACE = {"shared": "shared", "shared::cta": "shared", "shared::cluster": "shared", "global": "global"}


def _address_spaces(m: Match, ops: list, ctx) -> str | None:
    """ptxas: a variable named in [dst] / [src] must live in the state space the .dst / .src modifier names
    (a .global variable cannot be a cp.async destination), and no copy takes an immediate address."""
    if ctx is None or ctx.lenient:
        return None
    # (operand, the space it names, what it is): the mbarrier of a bulk copy is in shared memory
    wants = [(0, m.get("dst"), "destination"), (1, m.get("src"), "source")]
    wants += [(i, "shared", "mbarrier") for i, o in enumerate(m.form.operands) if o.name == "mbar"]
    for i, sp, role in wants:
        space = _VAR_SPACE.get(sp or "")
        if space is None or i >= len(ops) or not isinstance(ops[i], ir.Addr):
            continue
        x, name = ops[i], m.form.operands[i].name
        if x.base is None:
            return (f"operand {i + 1} ({name}) is the immediate address [{x.offset}]; a .{sp} {role} is a "
                    "register or a variable (ptxas: immediate addresses are allowed only for .local)")
        if isinstance(x.base, ir.Sym):
            vs = ctx.symbols.get(x.base.name)
            if vs is not None and vs != "func" and vs != space:
                return (f"operand {i + 1} ({name}): state space mismatch: the {role} is .{sp}, but "
                        f"{x.base.name} is a .{vs} variable")
    return None



def _tensor_form(dst: str, src: str):
    return form((), [mods("reduce", "reduce"), ASYNC, BULK, mods("prefetch", "prefetch"), req("tensor", "tensor"),
                     req("dim", "1d 2d 3d 4d 5d"), mods("dst", dst), mods("src", src),
                     mods("mode", "tile im2col im2col::w im2col::w::128 tile::gather4 tile::scatter4 im2col_no_offs"),
                     mods("completion", "mbarrier::complete_tx::bytes bulk_group"),
                     mods("multicast", "multicast::cluster"), mods("cta_group", "cta_group::1 cta_group::2"),
                     HINT, mods("redop", REDOPS)],
                (op("a", "any", None), *(op(f"x{i}", "any", None, optional=True) for i in range(6))))


SPECS = [
    spec("cp", "async",
         # cp.async.ca/.cg.shared{::cta}.global{.L2::cache_hint}{.L2::NB} [dst], [src], cp-size
         #     {, src-size|ignore-src}{, policy}
         *(form((), [ASYNC, req("cop", "ca cg"), req("dst", "shared shared::cta"), req("src", "global"), *hint,
                     mods("prefetch", "L2::64B L2::128B L2::256B")],
                (A, op("src", "addr", None), s("cp-size", "u32", "imm"), *extra), operand_check=_address_spaces)
           for hint, extra in (((), (SRC_SIZE,)), ((req("hint", "L2::cache_hint"),), (POLICY_REQ,)),
                               ((req("hint", "L2::cache_hint"),), (SRC_SIZE, POLICY_REQ)))),
         form((), [ASYNC, req("op", "commit_group wait_all")], ()),
         form((), [ASYNC, req("op", "wait_group")], (s("N", "u32", "imm"),)),
         form(types("b64"), [ASYNC, req("mbarrier", "mbarrier"), req("op", "arrive"), mods("noinc", "noinc"),
                             mods("space", "shared shared::cta")], (A,)),
         # bulk copies global -> shared::cluster/cta and shared::cta -> shared::cluster, completing on an
         # mbarrier (two forms: the matcher places a modifier in the first group that has it, and
         # shared::cta is a destination in one, a source in the other)
         form((), [ASYNC, BULK, req("dst", "shared::cluster shared::cta"), req("src", "global"), MBAR,
                   mods("multicast", "multicast::cluster"), HINT],
              (A, op("src", "addr", None), s("size", "u32"), op("mbar", "addr", None),
               s("ctaMask", "b16", optional=True), POLICY), operand_check=_address_spaces),
         form((), [ASYNC, BULK, req("dst", "shared::cluster"), req("src", "shared::cta"), MBAR],
              (A, op("src", "addr", None), s("size", "u32"), op("mbar", "addr", None)), operand_check=_address_spaces),
         form((), [ASYNC, BULK, req("dst", "global"), req("src", "shared::cta"), req("group", "bulk_group"), HINT,
                   mods("cp_mask", "cp_mask")],
              (A, op("src", "addr", None), s("size", "u32"), s("policy-or-mask", None, "reg imm", optional=True),
               s("byteMask", "b16", optional=True)), operand_check=_address_spaces),
         form((), [ASYNC, BULK, req("op", "commit_group")], ()),
         form((), [ASYNC, BULK, req("op", "wait_group"), mods("read", "read")], (s("N", "u32", "imm"),)),
         form((), [ASYNC, BULK, req("op", "prefetch"), req("level", "L2"), req("src", "global"), HINT],
              (A, s("size", "u32"), POLICY)),
         form(types("b32 b64 u32 s32 u64 s64 f16 bf16 f32 f64"),
              [req("reduce", "reduce"), ASYNC, BULK, req("dst", "global shared::cluster"),
               req("src", "shared::cta"), mods("completion", "bulk_group mbarrier::complete_tx::bytes"),
               req("redop", REDOPS), HINT, mods("noftz", "noftz")],
              (A, op("src", "addr", None), s("size", "u32"), s("mbar-or-policy", None, "addr reg", optional=True))),
         # TMA: cp{.reduce}.async.bulk{.prefetch}.tensor.Nd.dst.src{.load_mode}.completion{...} - loosely; one
         # form per direction (global -> shared, shared -> global, prefetch to L2), so that no state space is
         # both a destination and a source of a form (the matcher takes a modifier's first group)
         *(_tensor_form(dst, src) for dst, src in (("shared::cluster shared::cta", "global"),
                                                   ("global", "shared::cta"), ("L2", "global")))),
]
