"""`.align` on .local and .shared variables holds at run time, as on the GPU: numba's
`cuda.local.array(..., alignment=256)` and `cuda.shared.array(..., alignment=64)` declare exactly these, and
read their addresses back (`cvta`).  The reference is the PTX rule itself: the address is a multiple of the
alignment, in every thread's local memory and in every CTA's shared memory."""

from __future__ import annotations

import numpy as np
import pytest

import ptxjit

PTX = """
.version 8.0
.target sm_90
.address_size 64
.visible .entry where(.param .u64 out)
{
    .local .align 4 .b8 small[12];
    .local .align 256 .b8 wide[40];
    .shared .align 4 .b8 s_small[12];
    .shared .align 64 .b8 s_mid[8];
    .shared .align 256 .b8 s_wide[64];
    .reg .b32 %r<4>;
    .reg .b64 %rd<12>;
    ld.param.u64 %rd1, [out];
    cvta.to.global.u64 %rd1, %rd1;
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mad.lo.s32 %r1, %r2, %r3, %r1;
    mul.wide.u32 %rd2, %r1, 32;
    add.s64 %rd3, %rd1, %rd2;
    mov.u64 %rd4, small;
    cvta.local.u64 %rd4, %rd4;
    mov.u64 %rd5, wide;
    cvta.local.u64 %rd5, %rd5;
    mov.u64 %rd6, s_mid;
    cvta.shared.u64 %rd6, %rd6;
    mov.u64 %rd7, s_wide;
    cvta.shared.u64 %rd7, %rd7;
    st.local.u32 [wide], %r1;
    st.shared.u32 [s_wide], %r1;
    st.global.u64 [%rd3], %rd4;
    st.global.u64 [%rd3+8], %rd5;
    st.global.u64 [%rd3+16], %rd6;
    st.global.u64 [%rd3+24], %rd7;
    ret;
}
"""


@pytest.mark.parametrize("tiers", ["1", "0"])
def test_local_and_shared_alignment(monkeypatch, tiers):
    monkeypatch.setenv("PTXJIT_TIERS", tiers)
    k = ptxjit.Module(PTX).get_function("where")
    grid, block = 3, 70
    out = np.zeros((grid * block, 4), np.uint64)
    k(grid, block, (out,))
    small, wide, s_mid, s_wide = out.T
    assert np.all(wide % 256 == 0), sorted(set((wide % 256).tolist()))
    assert np.all(s_mid % 64 == 0) and np.all(s_wide % 256 == 0)
    assert np.all(small % 4 == 0)
    for cta in wide.reshape(grid, block):  # every thread of a CTA its own slice
        assert len(set(cta.tolist())) == block
