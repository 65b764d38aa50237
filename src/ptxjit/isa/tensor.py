"""Tensor-core and matrix-fragment instructions (PTX ISA §9.7.14-15): mma, wmma, wgmma, ldmatrix,
stmatrix, movmatrix.  The table describes their shapes, layouts, types and fragment operands so that
valid PTX is told apart from typos; the rules (lower/rules/mma.py, wmma.py, wgmma.py, matrix.py) say
which valid forms ptxjit runs.

Fragment sizes of mma.sync and wgmma follow from the shape: each of the 32 (wgmma: 128) threads holds
M*K/32 elements of A, K*N/32 of B and M*N/32 of C/D, packed into 32-bit registers (64-bit for f64)."""

from __future__ import annotations

import re

from ptxjit.isa.spec import Match, bits, d, form, mods, op, req, s, spec, types

_SHAPE = re.compile(r"m(\d+)n(\d+)k(\d+)$")
SYNC_ALIGNED = [req("sync", "sync"), req("aligned", "aligned")]
WG_SYNC = [req("sync", "sync"), mods("aligned", "aligned")]
LAYOUT2 = req("layout", "row col", repeat=2)
FRAG = "reg vec"


def _frag(name: str, dst: bool = False):
    if dst:
        return d(None, FRAG, vec="*")
    return s(name, None, FRAG, vec="*")


def _regs(elems: int, t: str) -> int:
    width = 64 if t == "f64" else 32
    return max(1, elems * bits(t) // width)


def _mma_sizes(m: Match, ops: list, ctx=None, threads: int = 32) -> str | None:
    shape = next((v for v in m.mods.values() if _SHAPE.match(v)), None)
    if shape is None or len(m.types) != 4 or shape == "m8n8k4" and "f16" in m.types:
        return None  # m8n8k4.f16 fragments are per quad-pair; not derived from the shape
    mm, nn, kk = (int(x) for x in _SHAPE.match(shape).groups())  # type: ignore[union-attr]
    dt, at, bt, ct = m.types
    want = (_regs(mm * nn // threads, dt), _regs(mm * kk // threads, at), _regs(kk * nn // threads, bt),
            _regs(mm * nn // threads, ct))
    for name, x, n in zip("dabc", ops, want, strict=False):
        got = len(x.items) if hasattr(x, "items") else 1
        if got != n:
            return f"operand {name} of mma.{shape}.{'.'.join(m.types)} is a fragment of {n} register" \
                f"{'s' if n > 1 else ''}, got {got}"
    return None


def _wgmma_sizes(m: Match, ops: list, ctx=None) -> str | None:
    shape = next((v for v in m.mods.values() if _SHAPE.match(v)), None)
    if shape is None or not ops:
        return None
    mm, nn, kk = (int(x) for x in _SHAPE.match(shape).groups())  # type: ignore[union-attr]
    dt, at = m.types[0], m.types[1]
    n = _regs(mm * nn // 128, dt)
    got = len(ops[0].items) if hasattr(ops[0], "items") else 1
    if got != n:
        return f"the accumulator of wgmma.{shape}.{dt} is {n} registers, got {got}"
    if len(ops) > 1 and hasattr(ops[1], "items") and len(ops[1].items) != _regs(mm * kk // 128, at):
        return f"the A fragment of wgmma.{shape}.{at} is {_regs(mm * kk // 128, at)} registers, got " \
            f"{len(ops[1].items)}"
    return None


MMA_SHAPES = "m8n8k4 m16n8k4 m16n8k8 m16n8k16 m16n8k32 m16n8k64 m16n8k128 m16n8k256 m8n8k16 m8n8k32 m8n8k128"
ABTYPES = "f16 bf16 tf32 f64 s8 u8 s4 u4 b1 e4m3 e5m2 e3m2 e2m3 e2m1"
CDTYPES = "f16 f32 f64 s32"
_MMA_OPS = (_frag("d", True), _frag("a"), _frag("b"), _frag("c"))
_SP_OPS = (*_MMA_OPS, s("e", "b32"), s("f", "u32", "imm"))
_MMA_GROUPS = [req("shape", MMA_SHAPES), *SYNC_ALIGNED, LAYOUT2, mods("satfinite", "satfinite"),
               mods("kind", "kind::f8f6f4 kind::f16 kind::mxf4 kind::mxf8f6f4 kind::mxf4nvf4 kind::i8 kind::tf32")]
_MMA_T4 = types(CDTYPES, ABTYPES, ABTYPES, CDTYPES)
_SP = req("sp", "sp sp::ordered_metadata")

WMMA_SHAPES = "m16n16k16 m8n32k16 m32n8k16 m16n16k8 m8n8k4 m8n8k32 m8n8k128"
_WMMA_SPACE = mods("space", "global shared shared::cta")
_WMMA_STRIDE = s("stride", "u32", optional=True)

WGMMA_SHAPES = " ".join(f"m64n{n}k{k}" for n in range(8, 257, 8) for k in (8, 16, 32, 256))
# sparse wgmma doubles k: tf32 k16, f16/bf16 k32, 8-bit types k64 (§9.7.15.6)
WGMMA_SP_SHAPES = " ".join(f"m64n{n}k{k}" for n in range(8, 257, 8) for k in (16, 32, 64))
_WG_OPS = (d(None, FRAG, vec="*"), s("a", None, FRAG, vec="*"), s("b-desc", "b64", "reg"),
           s("scale-d", "pred", "reg imm"), s("imm-scale-a", "s32", "imm", optional=True),
           s("imm-scale-b", "s32", "imm", optional=True), s("imm-trans-a", "s32", "imm", optional=True),
           s("imm-trans-b", "s32", "imm", optional=True))

SPECS = [
    spec("mma", "tensor",
         form(_MMA_T4, _MMA_GROUPS, _MMA_OPS, operand_check=_mma_sizes),
         form(types("s32", "b1", "b1", "s32"), [*_MMA_GROUPS, req("bitop", "xor and"), req("popc", "popc")],
              _MMA_OPS, operand_check=_mma_sizes),
         form(types("f16 f32", "f16 f32"), _MMA_GROUPS, _MMA_OPS, note="m8n8k4 with .dtype.ctype"),
         form(_MMA_T4, [*_MMA_GROUPS, _SP], _SP_OPS),
         form(types("s32", "b1", "b1", "s32"), [*_MMA_GROUPS, _SP, req("bitop", "and"), req("popc", "popc")],
              _SP_OPS)),
    spec("wmma", "tensor",
         form(types("f16 bf16 tf32 f32 f64 s8 u8 s4 u4 b1 s32"),
              [req("op", "load"), req("frag", "a b c"), *SYNC_ALIGNED, req("layout", "row col"),
               req("shape", WMMA_SHAPES), _WMMA_SPACE],
              (_frag("r", True), op("p", "addr", None), _WMMA_STRIDE)),
         form(types("f16 f32 f64 s32"),
              [req("op", "store"), req("frag", "d"), *SYNC_ALIGNED, req("layout", "row col"),
               req("shape", WMMA_SHAPES), _WMMA_SPACE],
              (op("p", "addr", None), _frag("r"), _WMMA_STRIDE)),
         form(types(CDTYPES, CDTYPES),
              [req("op", "mma"), *SYNC_ALIGNED, LAYOUT2, req("shape", WMMA_SHAPES), mods("satfinite", "satfinite")],
              _MMA_OPS),
         form(types(CDTYPES, ABTYPES, ABTYPES, CDTYPES),
              [req("op", "mma"), *SYNC_ALIGNED, LAYOUT2, req("shape", WMMA_SHAPES), mods("satfinite", "satfinite"),
               mods("rounding", "rn rz rm rp"), mods("bitop", "xor and"), mods("popc", "popc")],
              _MMA_OPS)),
    # ptxas accepts wgmma without .aligned (the ISA writes it always)
    spec("wgmma", "tensor",
         form((), [req("op", "fence commit_group"), *WG_SYNC], ()),
         form((), [req("op", "wait_group"), *WG_SYNC], (s("N", "u32", "imm"),)),
         form(types("f16 f32 s32", "f16 bf16 tf32 e4m3 e5m2 s8 u8 b1", "f16 bf16 tf32 e4m3 e5m2 s8 u8 b1"),
              [req("op", "mma_async"), mods("sp", "sp"), *WG_SYNC, req("shape", WGMMA_SHAPES),
               mods("satfinite", "satfinite"), mods("bitop", "and"), mods("popc", "popc")],
              _WG_OPS, operand_check=_wgmma_sizes)),
    # wgmma.mma_async.sp (§9.7.15.5.3): the sparse form adds the sp-meta and sp-sel operands after b-desc
    spec("wgmma", "tensor",
         form(types("f16 f32 s32", "f16 bf16 tf32 e4m3 e5m2 s8 u8", "f16 bf16 tf32 e4m3 e5m2 s8 u8"),
              [req("op", "mma_async"), req("sp", "sp"), *WG_SYNC, req("shape", WGMMA_SP_SHAPES),
               mods("satfinite", "satfinite")],
              (*_WG_OPS[:3], s("sp-meta", "b32", "reg"), s("sp-sel", "u32", "imm"), *_WG_OPS[3:]))),
    spec("ldmatrix", "tensor",
         form(types("b16 b8"), [*SYNC_ALIGNED, req("shape", "m8n8 m16n16 m8n16"), req("num", "x1 x2 x4"),
                                mods("trans", "trans"), mods("space", "shared shared::cta")],
              (d("b32", "reg vec", vec="*"), op("p", "addr", None)))),
    spec("stmatrix", "tensor",
         form(types("b16 b8"), [*SYNC_ALIGNED, req("shape", "m8n8 m16n8"), req("num", "x1 x2 x4"),
                                mods("trans", "trans"), mods("space", "shared shared::cta")],
              (op("p", "addr", None), s("r", "b32", "reg vec", vec="*")))),
    spec("movmatrix", "tensor",
         # ptxas does not check movmatrix's register types (it takes even a .pred register)
         form(types("b16"), [*SYNC_ALIGNED, req("shape", "m8n8"), req("trans", "trans")], (d(None), s("a", None)))),
]
