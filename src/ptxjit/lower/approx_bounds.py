"""How far ptxjit's approximate instructions are from an NVIDIA H100, per golden case.

APPROX_MAX_ULP[case] = the largest ulp distance between ptxjit and the H100 over every row of that isa/
case in ../shared/gpu-golden (and, for the f32 forms, the dense mufu/ samples of the same function),
as measured by tools/mufu/bounds.py: the larger of (a) the difference of the bit patterns as
sign-magnitude ordered integers and (b) |ptxjit - H100| in units of the H100 value's last place
(gpu-golden/tools/check.py's measure); f16x2/bf16x2 per lane in half ulps; both NaN counts as equal.
Variants that are bit-exact against all of that data are not listed: rcp/rsqrt/sqrt/ex2/sin/cos/lg2
.approx(.ftz).f32, ex2.approx f16/f16x2/ftz.bf16/ftz.bf16x2, rcp.approx.ftz.f64, rsqrt.approx(.ftz).f64,
div.approx(.ftz).f32 and div.full(.ftz).f32 (see ptxjit/lower/rules/approx.py).
"""

from __future__ import annotations

APPROX_MAX_ULP: dict[str, float] = {
    # tanh: |x| <= 2**-8 -> x (exact, as the H100), otherwise host tanhf vs the unit's ~2**-17 relative
    # error: isa/ max 117 ulp, mufu tanh_approx_f32_pos max 128 ulp.
    "isa_tanh_approx_f32": 128,
    # f16/bf16 tanh: the f32 value above truncated toward zero (exactly what the H100 does with its own
    # f32 unit, see the ex2 forms), so the half result differs only where the f32 values straddle a
    # half-precision boundary: all 65,536 inputs, 322 (f16) resp. 36 (bf16) lanes off by 1 ulp.
    "isa_tanh_approx_f16": 1,
    "isa_tanh_approx_f16x2": 1,
    "isa_tanh_approx_bf16": 1,
    "isa_tanh_approx_bf16x2": 1,
}
