"""Barriers, warp collectives, fences and mbarriers (PTX ISA §9.7.13, §9.7.13.15)."""

from __future__ import annotations

from ptxjit.isa.spec import SCOPE, Match, d, form, mods, op, req, s, spec, types

CTA = mods("cta", "cta")
ALIGNED = mods("aligned", "aligned")
U32 = "u32"
ADDR = op("addr", "addr", None)


def _bar_forms(aligned: bool):
    g = [CTA, ALIGNED] if aligned else [CTA]
    a, b = s("a", U32), s("b", U32)
    c = s("c", "pred")  # a predicate register (or !%p) or an immediate (non-zero: true), as vote's a
    return [
        form((), [*g, req("op", "sync")], (a, s("b", U32, optional=True))),
        form((), [*g, req("op", "arrive")], (a, b)),
        form(types("u32"), [*g, req("op", "red"), req("redop", "popc")], (d(U32), a, c)),
        form(types("u32"), [*g, req("op", "red"), req("redop", "popc")], (d(U32), a, b, c)),
        form(types("pred"), [*g, req("op", "red"), req("redop", "and or")], (d("pred"), a, c)),
        form(types("pred"), [*g, req("op", "red"), req("redop", "and or")], (d("pred"), a, b, c)),
    ]


MASK = s("membermask", "u32")  # ptxas: a 32-bit integer register (not .f32, unlike shfl's b and c)
_SEM_MB = mods("sem", "release relaxed acquire")
_SPACE_MB = mods("space", "shared shared::cta shared::cluster")
_MB = types("b64")

_RESTRICT = req("restrict", "sync_restrict::shared::cta sync_restrict::shared::cluster")


def _restrict_check(m: Match) -> str | None:
    want = {"release": "sync_restrict::shared::cta", "acquire": "sync_restrict::shared::cluster"}[m.get("sem") or ""]
    if m.get("restrict") != want:
        return f".{m.get('sem')} goes with .{want} (ptxas: cannot be combined)"
    return None


SPECS = [
    spec("bar", "sync", *_bar_forms(False),
         form((), [req("warp", "warp"), req("op", "sync")], (MASK,))),
    spec("barrier", "sync", *_bar_forms(True),
         form((), [req("cluster", "cluster"), req("op", "arrive"), mods("sem", "release relaxed"), ALIGNED], ()),
         form((), [req("cluster", "cluster"), req("op", "wait"), mods("sem", "acquire"), ALIGNED], ())),
    spec("vote", "warp",
         form(types("pred"), [mods("sync", "sync"), req("mode", "all any uni")],
              (d("pred"), s("a", "pred"), s("membermask", "u32", optional=True))),
         form(types("b32"), [mods("sync", "sync"), req("mode", "ballot")],
              (d("b32"), s("a", "pred"), s("membermask", "u32", optional=True)))),
    spec("match", "warp",
         form(types("b32 b64"), [req("mode", "any"), req("sync", "sync")], (d("b32"), s("a"), MASK)),
         form(types("b32 b64"), [req("mode", "all"), req("sync", "sync")],
              (d("b32", "reg pair"), s("a"), MASK))),
    spec("redux", "warp",
         form(types("u32 s32"), [req("sync", "sync"), req("op", "add min max")], (d(), s("src", kinds="reg"), MASK)),
         form(types("b32"), [req("sync", "sync"), req("op", "and or xor")], (d(), s("src", kinds="reg"), MASK)),
         form(types("f32"), [req("sync", "sync"), req("op", "min max"), mods("abs", "abs"), mods("nan", "NaN")],
              (d(), s("src", kinds="reg"), MASK))),
    spec("shfl", "warp",
         form(types("b32"), [req("sync", "sync"), req("mode", "up down bfly idx")],
              (d("b32", "reg pair"), s("a"), s("b", "b32"), s("c", "b32"), MASK)),
         # ptxas takes any 32-bit register (.f32 too) for the lane and clamp operands b and c
         form(types("b32"), [req("mode", "up down bfly idx")], (d("b32", "reg pair"), s("a"), s("b", "b32"),
                                                                s("c", "b32")))),
    spec("activemask", "warp", form(types("b32"), [], (d(),))),
    spec("elect", "warp", form((), [req("sync", "sync")], (d("u32", "reg pair sink"), MASK))),
    spec("membar", "sync",
         form((), [req("level", "cta gl sys")], ()),
         form((), [req("proxy", "proxy"), req("kind", "alias")], ())),
    spec("fence", "sync",
         form((), [mods("sem", "sc acq_rel acquire release"), req("scope", "cta cluster gpu sys")], ()),
         # PTX 8.6: fence{.proxy.async::generic}.release.sync_restrict::shared::cta.cluster and
         # .acquire.sync_restrict::shared::cluster.cluster (sm_90)
         form((), [req("sem", "acquire release"), _RESTRICT, req("scope", "cluster")], (), check=_restrict_check),
         form((), [req("proxy", "proxy"), req("kind", "async::generic"), req("sem", "acquire release"), _RESTRICT,
                   req("scope", "cluster")], (), check=_restrict_check),
         form((), [req("what", "op_restrict mbarrier_init"), req("sem", "release"), req("scope", "cluster")], ()),
         form((), [req("proxy", "proxy"), req("kind", "alias async"),
                   mods("space", "global shared::cta shared::cluster")], ()),
         form((), [req("proxy", "proxy"), req("kind", "tensormap::generic"), req("sem", "release acquire"),
                   req("scope", "cta cluster gpu sys")], (op("addr", "addr", None, optional=True),
                                                          s("size", U32, "imm", optional=True)))),
    spec("mbarrier", "sync",
         form(_MB, [req("op", "init"), _SPACE_MB], (ADDR, s("count", U32))),
         form(_MB, [req("op", "inval"), _SPACE_MB], (ADDR,)),
         form(_MB, [req("op", "expect_tx complete_tx"), _SEM_MB, SCOPE, _SPACE_MB], (ADDR, s("txCount", U32))),
         form(_MB, [req("op", "arrive arrive_drop"), mods("noComplete", "noComplete"), _SEM_MB, SCOPE, _SPACE_MB],
              (d("u64", "reg sink"), ADDR, s("count", U32, optional=True))),
         form(_MB, [req("op", "arrive arrive_drop"), req("tx", "expect_tx"), _SEM_MB, SCOPE, _SPACE_MB],
              (d("u64", "reg sink"), ADDR, s("txCount", U32))),
         form(_MB, [req("op", "test_wait try_wait"), _SEM_MB, SCOPE, _SPACE_MB],
              (d("pred"), ADDR, s("state", "b64", "reg"), s("suspendTimeHint", U32, optional=True))),
         form(_MB, [req("op", "test_wait try_wait"), req("parity", "parity"), _SEM_MB, SCOPE, _SPACE_MB],
              (d("pred"), ADDR, s("phaseParity", U32), s("suspendTimeHint", U32, optional=True))),
         form(_MB, [req("op", "pending_count")], (d(U32), s("state", "b64", "reg")))),
]
