"""istypep (PTX ISA §9.7.10.7): .texref is true exactly for a live texture object, .surfref for a live
surface object; ptxjit has no separate sampler objects, so .samplerref is false.  The expectations are the
ISA's definition applied to the objects the test creates (and frees)."""

from __future__ import annotations

import numpy as np

import ptxjit
from ptxjit import texture as T

PTX = """.version 8.7
.target sm_90a
.address_size 64

.visible .entry kinds(.param .u64 pa, .param .u64 pout)
{
  .reg .pred %p<4>;
  .reg .b32 %r<4>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [pa];
  ld.param.u64 %rd2, [pout];
  istypep.texref %p1, %rd1;
  istypep.surfref %p2, %rd1;
  istypep.samplerref %p3, %rd1;
  selp.u32 %r1, 1, 0, %p1;
  selp.u32 %r2, 1, 0, %p2;
  selp.u32 %r3, 1, 0, %p3;
  st.global.v2.u32 [%rd2], {%r1, %r2};
  st.global.u32 [%rd2+8], %r3;
  ret;
}
"""


def _kinds(f, handle: int) -> list[int]:
    out = np.full(3, 7, dtype=np.uint32)
    f(1, 1, (np.uint64(handle), out))
    return out.tolist()


def test_istypep_kinds():
    f = ptxjit.Module(PTX).get_function("kinds")
    a = np.arange(8, dtype=np.float32)
    cd = T.ChannelFormatDescriptor(32, 0, 0, 0, T.cudaChannelFormatKindFloat)
    tex = T.TextureObject(T.ResourceDescriptor(T.cudaResourceTypeLinear, arr=a, chDesc=cd, sizeInBytes=a.nbytes),
                          T.TextureDescriptor((T.cudaAddressModeClamp,)))
    arr = T.CUDAarray(cd, 8, 0, 0, flags=T.cudaArraySurfaceLoadStore)
    surf = T.SurfaceObject(T.ResourceDescriptor(T.cudaResourceTypeArray, cuArr=arr))
    assert _kinds(f, int(tex)) == [1, 0, 0]
    assert _kinds(f, int(surf)) == [0, 1, 0]
    for other in (0, a.ctypes.data, int(tex) ^ (1 << 20), int(tex) + 1, (1 << 64) - 1):
        assert _kinds(f, other) == [0, 0, 0], hex(other)
    h = int(tex)
    tex.free()  # a freed object is no texture any more
    assert _kinds(f, h) == [0, 0, 0]
    surf.free()
