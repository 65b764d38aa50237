"""Memory record layouts (instrument/buffers.py): address, tid and site packed in one 64-bit key where tid
and site fit its top 16 bits, else the wide layout -- the same trace either way.

Expected values are computed by hand (Python integers, the PTX's address arithmetic), never from the
instrumentation itself.
"""

from __future__ import annotations

import platform

import numpy as np
import pytest

import ptxjit
from ptxjit.instrument.buffers import ADDR_BITS, key_tid_bits, unpack_keys
from ptxjit.instrument.probes import Plan

pa = pytest.importorskip("pyarrow")

NLOADS = 70  # + one store: 71 memory sites, 7 bits of site
X86 = platform.machine().lower() in ("x86_64", "amd64")  # packed keys need addresses below 2**47


def _many_sites_ptx() -> str:
    loads = "\n".join(f"\tld.global.f32 %f2, [%rd3+{4 * k}];\n\tadd.f32 %f1, %f1, %f2;" for k in range(NLOADS))
    return f""".version 7.0
.target sm_70
.address_size 64

.visible .entry many_sites(.param .u64 p_a, .param .u64 p_out)
{{
\t.reg .f32 %f<3>;
\t.reg .b32 %r<5>;
\t.reg .b64 %rd<6>;
\tld.param.u64 %rd1, [p_a];
\tld.param.u64 %rd2, [p_out];
\tmov.u32 %r1, %ctaid.x;
\tmov.u32 %r2, %ntid.x;
\tmov.u32 %r3, %tid.x;
\tmad.lo.s32 %r4, %r1, %r2, %r3;
\tmul.wide.s32 %rd4, %r4, 4;
\tadd.s64 %rd3, %rd1, %rd4;
\tmov.f32 %f1, 0f00000000;
{loads}
\tadd.s64 %rd5, %rd2, %rd4;
\tst.global.f32 [%rd5], %f1;
\tret;
}}
"""


def test_unpack_keys_by_hand():
    """addr sign-extended from ADDR_BITS bits (a negative offset comes back whole), then tid, then site."""
    mask = (1 << ADDR_BITS) - 1
    rows = [(0x7FFF_1234_5678, 5, 3, 8), (-8, 255, 255, 8), (0, 1023, 63, 10), (123_456, 0, 1, 1)]
    keys = np.array([(a & mask) | (t << ADDR_BITS) | (s << (ADDR_BITS + tb)) for a, t, s, tb in rows], np.uint64)
    for i, (a, t, s, tb) in enumerate(rows):
        addr, tid_site = unpack_keys(keys[i:i + 1], tb)
        assert int(addr.view(np.int64)[0]) == a
        assert int(tid_site[0]) == t | (s << 16)


@pytest.mark.parametrize("nthreads,nsites,want", [(256, 3, 8), (256, 256, 8), (256, 257, None), (1024, 64, 10),
                                                  (1024, 65, None), (None, 64, 10), (1, 1, 1), (33, 1024, 6),
                                                  (33, 1025, None)])
def test_key_layout_choice(nthreads, nsites, want):
    """The key holds tid (bits of nthreads - 1; any block: 10) and site (bits of nsites - 1) in 16 bits."""
    plan = Plan()
    plan.memory = [None] * nsites
    assert key_tid_bits(plan, nthreads) == (want if X86 else None)


@pytest.mark.parametrize("block,generic,packed", [(64, False, True), (1024, False, False), (64, True, False)],
                         ids=["packed", "wide-1024-threads", "wide-generic"])
def test_packed_and_wide_memory_records_give_the_same_trace(block, generic, packed):
    """71 memory sites: with 64 threads a CTA tid and site fit the key (8-byte records), with 1,024 (or
    the generic translation, any block) they do not (12-byte records); the table is the same."""
    k = ptxjit.Module(_many_sites_ptx(), "many_sites.ptx").get_function("many_sites")
    nctas = 2
    n = nctas * block
    a = np.random.default_rng(7).random(n + NLOADS, dtype=np.float32)
    out = np.zeros(n, np.float32)
    t = ptxjit.trace(k, nctas, block, (a, out), records=("memory",), _generic=generic)
    packed = packed and X86
    want = np.array([a[i:i + NLOADS].astype(np.float64).sum() for i in range(n)])
    np.testing.assert_allclose(out, want, rtol=1e-5)
    per = NLOADS + 1
    assert t.counts() == t.capacity() == {"memory": n * per}
    assert t.nbytes() == {"memory": n * per * (8 if packed else 12)}
    m = t.table("memory")
    g = np.repeat(np.arange(n, dtype=np.int64), per)  # global thread index of each record, in trace order
    k_ = np.tile(np.arange(per, dtype=np.int64), n)  # its access in program order
    np.testing.assert_array_equal(m.column("cta").to_numpy().astype(np.int64), g // block)
    np.testing.assert_array_equal(m.column("tid").to_numpy().astype(np.int64), g % block)
    np.testing.assert_array_equal(m.column("site").to_numpy().astype(np.int64), k_)
    addr = np.where(k_ < NLOADS, a.ctypes.data + 4 * (g + k_), out.ctypes.data + 4 * g).astype(np.uint64)
    np.testing.assert_array_equal(m.column("addr").to_numpy(), addr)
