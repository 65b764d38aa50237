"""The H100 golden set (../shared/gpu-golden/isa), byte for byte: the families no unit test module replays,
and a check that together the test modules replay every one of its 1,608 instruction variants.

Family modules replay their own variants (tests/unit/test_convert.py, test_half.py, test_compare.py,
test_int_arith.py, test_bits.py, test_video.py, test_atomics.py, test_fp8.py; the approximate instructions in
test_approx.py against their bounds). An ordinary run replays a fixed third of each family;
PTXJIT_GOLDEN=full (scripts/golden.sh) replays all of them.
"""

from __future__ import annotations

import importlib
import re

from tests.markers import golden_needs
from tests.unit.goldenutil import REQUESTED, golden_cases, golden_test

# f32/f64 arithmetic (lower/rules/floating.py, fpbits.py) and the warp collectives
REST = (r"^isa_((add|sub|mul|fma|mad|div|abs|neg|min|max|sqrt|rcp|copysign|testp)_(?!.*approx)(?!.*full).*f(32|64)"
        r"|(shfl|vote|redux|match|activemask|bar)_.*)$")
FAMILY_MODULES = ["test_convert", "test_half", "test_compare", "test_int_arith", "test_bits", "test_video",
                  "test_atomics", "test_fp8"]
# the approximate instructions: tests/unit/test_approx.py replays each against the H100 (exact or within its
# recorded bound, lower/approx_bounds.py)
APPROX = r"^isa_((sin|cos|lg2|ex2|tanh|rcp|rsqrt|sqrt)_.*approx.*|div_(approx|full)_.*)$"


test_golden_float_and_warp = golden_test(REST, "f32/f64 arithmetic and warp collective")


@golden_needs("isa")
def test_every_golden_variant_is_replayed() -> None:
    for name in FAMILY_MODULES:  # importing registers their patterns
        importlib.import_module(f"tests.unit.{name}")
    patterns = [*REQUESTED, REST, APPROX]
    everything = golden_cases(".", full=True)
    missing = [c for c in everything if not any(re.search(p, c) for p in patterns)]
    assert len(everything) == 1608
    assert not missing, f"{len(missing)} golden variants no test replays: {missing[:20]}"
