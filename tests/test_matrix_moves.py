"""ldmatrix / stmatrix / movmatrix (.m8n8 .b16): the H100's recorded launches byte for byte, and
kernels of our own against NumPy's fragment layout (PTX ISA §9.7.14.5.15-17)."""

from __future__ import annotations

from tests.unit.tcgolden import tc_test

test_matrix_moves_golden = tc_test(r"^(ldmatrix|stmatrix|movmatrix)_", "ldmatrix/stmatrix/movmatrix")
