"""Texture and surface instructions (PTX ISA §9.7.10-11): tex, tld4, txq, suld, sust, suq.

Their operands are compound: `[handle, {coordinates}]` (unified mode: the handle is a texture object
or a .texref) or `[tex, sampler, {coordinates}]` (independent mode).  The operands are declared `any`
(declared registers) and `_operands` checks the shape: the destination vector's length (.v4/.v2 or
the surface vector), the coordinate count each geometry takes (PTX ISA: 1d 1, 2d 2, a1d 2 = {layer,
x}, 3d/a2d/cube/acube/2dms/a2dms 4, the last unused where the geometry needs 3) and the registers'
classes (coordinates of the instruction's coordinate type; a layer or sample index .s32).
"""

from __future__ import annotations

from ptxjit.frontend import ir
from ptxjit.isa.match import ANY
from ptxjit.isa.spec import Match, OperandSpec, form, mods, reg_fits, req, spec, types

GEOMS = "1d 2d 3d a1d a2d cube acube 2dms a2dms"
# (ptxas also takes a second, unused coordinate for 1d)
COORDS = {"1d": (1, 2), "2d": (2,), "3d": (4,), "a1d": (2,), "a2d": (4,), "cube": (4,), "acube": (4,), "2dms": (4,),
          "a2dms": (4,)}
# geometries whose first coordinate is an integer index (the layer, or the sample)
INDEXED = frozenset({"a1d", "a2d", "acube", "2dms", "a2dms"})
SURF_GEOMS = "1d 2d 3d a1d a2d"


def _op(name: str, dst: bool = False, optional: bool = False) -> OperandSpec:
    return OperandSpec(name, frozenset({ANY}), None, dst=dst, optional=optional)


def _regs_fit(regs: list, cls: str, ctx, what: str, relaxed: bool = False) -> str | None:
    for r in regs:
        if not isinstance(r, ir.Reg):
            return f"{what} must be registers, got {r!r}"
        rt = ctx.regs.get(r.name)
        if rt is not None and not reg_fits(rt, cls, relaxed=relaxed):
            return f"{what}: {r.name} is .{rt}, expected a .{cls}-compatible register" + \
                (" (or wider)" if relaxed else "")
    return None


def _vector(x, n: int, cls: str, ctx, what: str, relaxed: bool = False) -> str | None:
    if isinstance(x, ir.Pair):  # d|p: the predicate says whether the texels were resident
        x = x.first
    items = list(x.items) if isinstance(x, ir.Vec) else [x]
    if len(items) != n:
        return f"{what} must be a vector of {n} registers, got {len(items)}"
    return None if ctx.lenient else _regs_fit([i for i in items if not (isinstance(i, ir.Reg) and i.name == "_")],
                                              cls, ctx, what, relaxed)


def _handle_coords(x, geom: str, ctype: str, ctx) -> str | None:
    """[handle, {c...}] or [tex, sampler, {c...}]."""
    if not isinstance(x, ir.Vec) or len(x.items) not in (2, 3) or not isinstance(x.items[-1], ir.Vec):
        return "the texture operand must be [handle, {coordinates}] or [texture, sampler, {coordinates}]"
    c = list(x.items[-1].items)
    want = COORDS[geom]
    if len(c) not in want:
        return f".{geom} takes {' or '.join(map(str, want))} coordinate{'s' if want[-1] > 1 else ''}, got {len(c)}"
    if ctx.lenient:
        return None
    if geom in INDEXED:
        why = _regs_fit(c[:1], "s32", ctx, f"the .{geom} index")
        if why:
            return why
        c = c[1:]
    return _regs_fit(c, ctype, ctx, "the coordinates")


def _tex_types(m: Match) -> str | None:
    """Type combinations ptxas refuses (probed with ptxas 13.0, sm_90)."""
    dt, ct, geom = m.types[0], m.types[1], m.get("geom")
    if (dt == "f16x2") != (m.get("vec") == "v2"):
        return ".f16x2 results need .v2, every other result type .v4"
    if geom in ("cube", "acube") and ct != "f32":
        return "cube maps take .f32 coordinates (ptxas: Floating-point coordinates required)"
    if geom in ("2dms", "a2dms") and ct != "s32":
        return "multisample textures take .s32 coordinates"
    if m.get("mip") in ("level", "grad") and ct != "f32":
        return ".level/.grad take .f32 coordinates"
    return None


def _tex_check(m: Match, ops: list, ctx) -> str | None:
    geom = m.get("geom") or "1d"
    n = 2 if m.get("vec") == "v2" else 4
    return _vector(ops[0], n, m.types[0], ctx, "the destination") or _handle_coords(ops[1], geom, m.types[1], ctx)


def _surface_vec(m: Match) -> int:
    v = m.get("vec")
    return int(v[1:]) if v else 1


def _suld_check(m: Match, ops: list, ctx) -> str | None:
    geom = m.get("geom") or "1d"
    return _vector(ops[0], _surface_vec(m), m.types[0], ctx, "the destination", True) or \
        _handle_coords(ops[1], geom, "s32", ctx)


def _sust_check(m: Match, ops: list, ctx) -> str | None:
    geom = m.get("geom") or "1d"
    return _handle_coords(ops[0], geom, "s32", ctx) or _vector(ops[1], _surface_vec(m), m.types[0], ctx,
                                                               "the stored value", True)


def _query_check(m: Match, ops: list, ctx) -> str | None:
    if not isinstance(ops[1], ir.Addr | ir.Sym):
        return "the queried texture/surface must be an address [handle]"
    return None if ctx.lenient else _regs_fit(ops[:1], "b32", ctx, "the destination")


TEX_TYPES = types("u32 s32 f16 f32 f16x2", "s32 f32")
TXQ = ("width height depth channel_data_type channel_order normalized_coords filter_mode addr_mode_0 "
       "addr_mode_1 addr_mode_2 force_unnormalized_coords array_size num_mipmap_levels num_samples")
SUQ = "width height depth channel_data_type channel_order array_size memory_layout"
CLAMP = req("clamp", "trap clamp zero")
SVEC = mods("vec", "v2 v4")

SPECS = [
    spec("tex", "texture",
         form(TEX_TYPES, [req("geom", GEOMS), req("vec", "v4 v2"), mods("mip", "base level grad"),
                          mods("edge", "clamp_to_edge")],
              (_op("d", dst=True), _op("a"), *(_op("x", optional=True) for _ in range(4))),
              check=_tex_types, operand_check=_tex_check),
         summary="texture fetch: tex.geom.v4.dtype.ctype d, [tex, {coords}]"),
    spec("tld4", "texture",
         form(types("u32 s32 f32", "f32"), [req("comp", "r g b a"), req("geom", "2d a2d cube acube"),
                                             req("vec", "v4")],
              (_op("d", dst=True), _op("a"), *(_op("x", optional=True) for _ in range(3))),
              operand_check=_tex_check),
         summary="gather the bilinear footprint's component: tld4.comp.2d.v4.dtype.f32 d, [tex, {x, y}]"),
    spec("txq", "texture",
         form(types("b32"), [req("query", TXQ)], (_op("d", dst=True), _op("a")), operand_check=_query_check),
         form(types("b32"), [req("level", "level"), req("query", "width height depth")],
              (_op("d", dst=True), _op("a"), _op("lod")), operand_check=_query_check),
         summary="texture attribute query: txq.width.b32 d, [tex]"),
    spec("suq", "surface",
         form(types("b32"), [req("query", SUQ)], (_op("d", dst=True), _op("a")), operand_check=_query_check),
         summary="surface attribute query: suq.width.b32 d, [surf]"),
    spec("suld", "surface",
         form(types("b8 b16 b32 b64"), [req("mode", "b"), req("geom", SURF_GEOMS), SVEC, CLAMP,
                                        mods("cache", "ca cg cs cv")],
              (_op("d", dst=True), _op("a")), operand_check=_suld_check),
         summary="surface load: suld.b.2d.b32.trap d, [surf, {x, y}] (x in bytes)"),
    spec("sust", "surface",
         form(types("b8 b16 b32 b64"), [req("mode", "b"), req("geom", SURF_GEOMS), SVEC, CLAMP,
                                        mods("cache", "wb cg cs wt")],
              (_op("a"), _op("b")), operand_check=_sust_check),
         form(types("b32"), [req("mode", "p"), req("geom", SURF_GEOMS), SVEC, CLAMP,
                                         mods("cache", "wb cg cs wt")],
              (_op("a"), _op("b")), operand_check=_sust_check),
         summary="surface store: sust.b.2d.b32.trap [surf, {x, y}], b (x in bytes)"),
]
