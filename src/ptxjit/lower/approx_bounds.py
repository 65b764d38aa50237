"""How far ptxjit's approximate instructions are from an NVIDIA H100, per golden case.

APPROX_MAX_ULP[case] = the largest ulp distance between ptxjit and the H100 over every row of that isa/
case in ../shared/gpu-golden (and, for the f32 forms, the dense mufu/ samples of the same function),
as measured by tools/mufu/bounds.py: the larger of (a) the difference of the bit patterns as
sign-magnitude ordered integers and (b) |ptxjit - H100| in units of the H100 value's last place
(gpu-golden/tools/check.py's measure); f16x2/bf16x2 per lane in half ulps; both NaN counts as equal.
Variants that are bit-exact against all of that data are not listed: rcp/rsqrt/sqrt/ex2/sin/cos/lg2
.approx(.ftz).f32, tanh.approx.f32, ex2.approx f16/f16x2/ftz.bf16/ftz.bf16x2, tanh.approx
f16/f16x2/bf16/bf16x2, rcp.approx.ftz.f64, rsqrt.approx(.ftz).f64, div.approx(.ftz).f32 and
div.full(.ftz).f32 (see ptxjit/lower/rules/approx.py) -- at present every approximate variant.
"""

from __future__ import annotations

APPROX_MAX_ULP: dict[str, float] = {}
