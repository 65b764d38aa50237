"""The texture table as generated code reads it (lower/rules/texture.py, istypep.py): one int64 row per live
texture or surface object, reached through the symbol `__ptxjit_texture_table`, which ptxjit.texture
allocates and defines; and the trap words the code raises on a bad handle or an out-of-range surface
access, which ptxjit.texture explains."""

from __future__ import annotations

SYMBOL = "__ptxjit_texture_table"
ROWS = 4096
WORDS = 32
(W_HANDLE, W_DATA, W_WIDTH, W_HEIGHT, W_DEPTH, W_LAYERS, W_FILTER, W_NORM, W_ADDR0, W_ADDR1, W_ADDR2, W_FLOATS,
 W_BORDER, _B1, _B2, _B3, W_PITCH, W_SLICE, W_WBYTES, W_ELEM, W_DIMS, W_LAYERED, W_QADDR0) = range(23)
# txq.addr_mode_N answers in PTX's enumeration (PTX ISA, txq): wrap 0, mirror 1, clamp_to_edge 3, border 4
PTX_ADDR_MODE = {0: 0, 1: 3, 2: 1, 3: 4}
W_ZEXT = 25  # surfaces: the extent of the third coordinate (the depth, or the layers of a layered array)
KIND_TEXTURE, KIND_SURFACE = 1, 2
# address modes as the generated code tests them (wrap/mirror need normalized coordinates: CUDA
# clamps otherwise, and so does make_row)
MODE_WRAP, MODE_CLAMP, MODE_MIRROR, MODE_BORDER = 0, 1, 2, 3

# The generated code traps with L_ERR_ARG = TEXTURE_TRAP << 56 | why << 48 | the handle's low 48 bits.
TEXTURE_TRAP = 0x7E
TRAP_BAD_TEXTURE, TRAP_BAD_SURFACE, TRAP_SURFACE_RANGE = 1, 2, 3


def trap_word(why: int) -> int:
    return TEXTURE_TRAP << 56 | why << 48
