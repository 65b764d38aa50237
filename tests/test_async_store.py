"""st.async / red.async (PTX ISA §9.7.9.12, §9.7.13.6): the store or reduction lands in shared memory and
completes its bytes on the mbarrier, whose phase completes (§9.7.13.15.4: pending arrivals and tx-count
both zero) exactly when the last expected byte arrives.  Expectations from the ISA text, applied by hand."""

from __future__ import annotations

import numpy as np
import pytest

import ptxjit

PTX = """.version 8.7
.target sm_90a
.address_size 64

.visible .entry k(.param .u64 pout, .param .u32 a, .param .u32 b, .param .u32 c, .param .u32 d)
{
  .reg .pred %p<8>;
  .reg .b32 %r<32>;
  .reg .b64 %rd<8>;
  .shared .align 8 .b64 bar;
  .shared .align 16 .b32 buf[8];
  ld.param.u64 %rd2, [pout];
  ld.param.u32 %r1, [a];
  ld.param.u32 %r2, [b];
  ld.param.u32 %r3, [c];
  ld.param.u32 %r4, [d];
  mov.u32 %r20, bar;
  mov.u32 %r21, buf;
  mov.u32 %r5, 100;
  st.shared.u32 [%r21+4], %r5;
  mbarrier.init.shared::cta.b64 [%r20], 1;
  mbarrier.arrive.expect_tx.shared::cta.b64 %rd1, [%r20], 16;
  mbarrier.test_wait.parity.shared::cta.b64 %p1, [%r20], 0;
  st.async.shared::cluster.mbarrier::complete_tx::bytes.b32 [%r21], %r1, [%r20];
  mbarrier.test_wait.parity.shared::cta.b64 %p2, [%r20], 0;
  st.async.shared::cluster.mbarrier::complete_tx::bytes.v2.b32 [%r21+8], {%r2, %r3}, [%r20];
  mbarrier.test_wait.parity.shared::cta.b64 %p3, [%r20], 0;
  red.async.relaxed.cluster.shared::cluster.mbarrier::complete_tx::bytes.add.u32 [%r21+4], %r4, [%r20];
  mbarrier.test_wait.parity.shared::cta.b64 %p4, [%r20], 0;
  red.async.relaxed.cluster.shared::cluster.mbarrier::complete_tx::bytes.max.s32 [%r21+12], %r4, [%r20];
  ld.shared.v4.u32 {%r10, %r11, %r12, %r13}, [%r21];
  st.global.v4.u32 [%rd2], {%r10, %r11, %r12, %r13};
  selp.u32 %r14, 1, 0, %p1;
  selp.u32 %r15, 1, 0, %p2;
  selp.u32 %r16, 1, 0, %p3;
  selp.u32 %r17, 1, 0, %p4;
  st.global.v4.u32 [%rd2+16], {%r14, %r15, %r16, %r17};
  ret;
}
"""


@pytest.mark.parametrize("mode", [pytest.param({"checked": True}, id="checked"),
                                  pytest.param({"unchecked": True}, id="unchecked")])
def test_async_stores_complete_the_phase(mode):
    out = np.zeros(8, dtype=np.uint32)
    a, b, c, d = 0xDEADBEEF, 7, 0xFFFFFFF0, 5  # c is -16 as .s32
    ptxjit.Module(PTX).get_function("k")(1, 1, (out, np.uint32(a), np.uint32(b), np.uint32(c), np.uint32(d)),
                                        **mode)
    # buf: a; 100 + d (red.async.add); b; max.s32(-16, 5) = 5 (red.async.max after the phase completed)
    assert out[:4].tolist() == [a, 100 + d, b, d]
    # phase 0 is still open after the arrive (16 bytes expected), after 4 and after 12 bytes; the
    # reduction's 4 bytes complete it
    assert out[4:].tolist() == [0, 0, 0, 1]


def test_st_async_without_mbarrier_is_a_store():
    """ptxas accepts st.async with the [mbar] operand left out: then it is only the store."""
    ptx = PTX.replace("st.async.shared::cluster.mbarrier::complete_tx::bytes.b32 [%r21], %r1, [%r20];",
                      "st.async.shared::cluster.mbarrier::complete_tx::bytes.b32 [%r21], %r1;")
    out = np.zeros(8, dtype=np.uint32)
    ptxjit.Module(ptx).get_function("k")(1, 1, (out, np.uint32(9), np.uint32(8), np.uint32(3), np.uint32(1)))
    # 12 of the 16 expected bytes arrive: the phase stays open
    assert out.tolist() == [9, 101, 8, 3, 0, 0, 0, 0]
