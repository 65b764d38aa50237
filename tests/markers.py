"""The suite's shared test markers: each skips the tests it marks when their condition does not hold and
carries the pytest marker that selects them (`-m golden`, `-m slow`; registered in pyproject.toml).

- `golden`: replays or reads the H100 golden set, ../shared/gpu-golden beside the checkout (it is not in
  it); `golden_needs("tc")` when the test needs one of its sub-folders (isa, tc, mufu).
- `slow`: a slow translation, run only with PTXJIT_TEST_SLOW=1.

Each is a list of marks that also works as a decorator: `@golden` on a test function or class,
`pytestmark = golden` for a whole module (`pytestmark = [*golden, other]` beside other marks), and
`pytest.param(..., marks=slow)` for one parameter.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

GOLDEN_SET = Path(__file__).resolve().parents[1].parent / "shared" / "gpu-golden"


class Marks(list):
    """pytest marks applied together, as a decorator or as a `pytestmark` list."""

    def __call__(self, obj):
        for mark in reversed(self):
            obj = mark(obj)
        return obj


def golden_needs(sub: str = "") -> Marks:
    """`golden`, skipping unless shared/gpu-golden/`sub` (the whole set when `sub` is empty) is present."""
    where = GOLDEN_SET / sub if sub else GOLDEN_SET
    shown = "shared/gpu-golden" + (f"/{sub}" if sub else "")
    return Marks([pytest.mark.skipif(not where.is_dir(), reason=f"{shown} is not beside this checkout"),
                  pytest.mark.golden])


golden = golden_needs()

slow = Marks([pytest.mark.skipif(not os.environ.get("PTXJIT_TEST_SLOW"), reason="slow: runs with PTXJIT_TEST_SLOW=1"),
              pytest.mark.slow])
