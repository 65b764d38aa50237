"""Instructions described loosely: sured (tex/tld4/txq/suld/sust/suq: isa/texture.py), multimem, tensormap,
istypep, cluster launch control and the sm_100 tcgen05 family.  The table knows their modifier vocabulary
and operand counts, enough to tell a typo (an unknown modifier) from valid PTX; the rules that run some of
them check the rest (sured: lower/rules/texture.py, multimem: multimem.py, tensormap: tensormap.py,
istypep: istypep.py)."""

from __future__ import annotations

from ptxjit.isa.spec import loose

GEOM = "1d 2d 3d a1d a2d cube acube 2dms a2dms"
SURF = "b trap clamp zero v2 v4 b8 b16 b32 b64 p"

SPECS = [
    loose("sured", "surface", f"{GEOM} {SURF} add min max and or u32 u64 s32 s64", 2, 2),
    loose("istypep", "texture", "texref samplerref surfref", 2, 2),
    loose("multimem", "memory", "ld_reduce st red global weak relaxed release acquire cta cluster gpu sys "
          "min max add and or xor acc::f32 v2 v4 v8 noftz u32 s32 u64 s64 f32 f64 f16 f16x2 bf16 bf16x2 "
          "e5m2 e4m3 e5m2x2 e4m3x2 e5m2x4 e4m3x4 b32 b64 cp async bulk", 1, 4),
    loose("tensormap", "memory", "replace cp_fenceproxy tile global_address rank box_dim global_dim "
          "global_stride element_stride elemtype interleave_layout swizzle_mode fill_mode "
          "shared::cta shared::cluster global sync aligned b1024 b32 b64 release acquire gpu cta cluster sys "
          "tensormap::generic to_proxy from_proxy", 2, 4),
    loose("clusterlaunchcontrol", "control", "try_cancel query_cancel is_canceled get_first_ctaid get_first_ctaid::x "
          "get_first_ctaid::y get_first_ctaid::z async shared::cta mbarrier::complete_tx::bytes "
          "multicast::cluster::all "
          "b128 pred v4 b32", 2, 3),
    loose("tcgen05", "tensor", "alloc dealloc relinquish_alloc_permit ld st wait mma commit cp shift fence "
          "before_thread_sync after_thread_sync cta_group::1 cta_group::2 sync aligned shared::cta "
          "b32 b64 16x64b 16x128b 16x256b 32x32b 16x32bx2 x1 x2 x4 x8 x16 x32 x64 x128 pack::16b "
          "unpack::16b ::load ::store down mbarrier::arrive::one shared::cluster multicast::cluster "
          "kind::f16 kind::tf32 kind::f8f6f4 kind::i8 kind::mxf8f6f4 kind::mxf4 kind::mxf4nvf4 ws "
          "128x256b 4x256b 128x128b 64x128b warpx2::02_13 warpx2::01_23 warpx4 b6x16_p32 b4x16_p64 "
          "collector::a::fill collector::a::use collector::a::lastuse collector::a::discard "
          "block_scale block16 block32 scale_vec::1X scale_vec::2X scale_vec::4X", 0, 8),
]
