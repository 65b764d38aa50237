"""Generic loads and stores of .shared (and .global, .const, .local) memory, against NumPy.

- tests/data/generic_shared.cu (nvcc -O3, sm_80): a __shared__ array's address converted with cvta.shared and
  passed as a generic pointer to __noinline__ device functions that load and store through it, beside a global
  pointer passed the same way;
- hand-written PTX naming a variable in a generic ld/st/atom (`ld.u32 %r1, [smem+8]`): ptxas takes the
  variable's generic address there (sm_90: `STS`/`LDS` of the variable for a .shared one), where the variable's
  value as an operand (`mov.u32 %r, smem`) is its offset in the shared window.  A .const variable is the
  exception: ptxas refuses it in a generic access ("State space mismatch"); its generic address is cvta.const's.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import ptxjit
from ptxjit.errors import InvalidInstructionError
from tests.ptxsnip import snippet_kernel

DATA = Path(__file__).parent / "data" / "generic_shared.ptx"
N = 128
MODES = [pytest.param({}, id="checked"), pytest.param({"unchecked": True}, id="unchecked")]


@pytest.mark.parametrize("mode", MODES)
def test_shared_array_through_generic_pointers(mode):
    grid = 3
    rng = np.random.default_rng(7)
    inp = rng.integers(-1000, 1000, N * grid, dtype=np.int32)
    out = np.full(3 * N * grid, 0x5A5A5A5A, dtype=np.int32)
    scratch = np.zeros(N * grid, dtype=np.int32)
    ptxjit.Module.from_file(DATA).get_function("generic_shared")(grid, N, (inp, out, scratch), **mode)
    x = inp.reshape(grid, N).astype(np.int64)
    window = sum(np.roll(3 * x, -j, axis=1) for j in range(4))        # sum_window over the shared copy
    gwindow = sum(np.roll(5 * x, -j, axis=1) for j in range(4))       # and over the global one
    bumped = np.roll(3 * x + 1, -1, axis=1) + 1                       # buf[t + 1] after bump, + counts (1 each)
    want = np.stack([window, gwindow, bumped], axis=-1).reshape(-1).astype(np.int32)
    assert np.array_equal(out, want)
    assert np.array_equal(scratch, (5 * x).reshape(-1).astype(np.int32))


DECLS = (".shared .align 16 .b32 smem[16];\n.global .align 16 .u32 garr[4] = {1, 2, 3, 4};\n"
         ".const .align 4 .u32 carr[4] = {11, 12, 13, 14};\n")

# (body leaving its result in %r1, the result): generic accesses naming a variable
NAMED = [
    ("st.shared.u32 [smem+8], 77;\n    ld.u32 %r1, [smem+8];", 77),
    ("st.u32 [smem+12], 78;\n    ld.shared.u32 %r1, [smem+12];", 78),
    ("st.shared.v2.u32 [smem+8], {12, 13};\n    ld.v2.u32 {%r1, %r2}, [smem+8];\n    add.u32 %r1, %r1, %r2;", 25),
    ("st.shared.u32 [smem], 10;\n    atom.add.u32 %r2, [smem], 5;\n    ld.shared.u32 %r1, [smem];\n"
     "    add.u32 %r1, %r1, %r2;", 25),
    (".shared .align 4 .b32 fs[4];\n    st.u32 [fs+4], 9;\n    mov.u32 %r3, fs;\n    ld.shared.u32 %r1, [%r3+4];", 9),
    ("cvta.shared.u64 %rd5, smem;\n    st.u32 [%rd5+4], 31;\n    ld.u32 %r1, [smem+4];", 31),
    ("ld.u32 %r1, [garr+8];", 3),
    ("st.u32 [garr+12], 40;\n    ld.global.u32 %r1, [garr+12];", 40),
    ("cvta.const.u64 %rd5, carr;\n    ld.u32 %r1, [%rd5+4];", 12),
    (".local .align 4 .b32 lv[4];\n    st.u32 [lv+4], 8;\n    ld.local.u32 %r1, [lv+4];", 8),
]


def _named_ptx(body: str) -> str:
    return snippet_kernel(f"    ld.param.u64 %rd2, [out];\n    {body}\n    st.global.u32 [%rd2], %r1;",
                          [("u64", "out")], extra_decls=DECLS)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("body,want", NAMED, ids=[f"case{i}" for i in range(len(NAMED))])
def test_generic_access_naming_a_variable(body, want, mode):
    out = np.zeros(1, dtype=np.uint32)
    ptxjit.Module(_named_ptx(body), "named.ptx").get_function("k")(1, 1, (out,), **mode)
    assert out[0] == want


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="ptxas not on PATH")
def test_named_cases_are_valid_ptx(tmp_path):
    for body, _ in NAMED:
        f = tmp_path / "k.ptx"
        f.write_text(_named_ptx(body))
        r = subprocess.run(["ptxas", "-arch=sm_80", str(f), "-o", "/dev/null"], capture_output=True, text=True)
        assert r.returncode == 0, (body, r.stderr)


@pytest.mark.parametrize("body", ["ld.u32 %r1, [carr+4];", "st.u32 [carr], 1;", "atom.add.u32 %r1, [carr], 1;"])
def test_generic_access_naming_a_const_variable_is_refused(body, tmp_path):
    """ptxas: "State space mismatch between instruction and address"."""
    with pytest.raises(InvalidInstructionError) as ei:
        ptxjit.Module(_named_ptx(body), "named.ptx")
    line = next(i for i, t in enumerate(_named_ptx(body).splitlines(), 1) if body in t)
    assert str(ei.value).startswith(f"named.ptx:{line}:") and "carr is a .const variable" in str(ei.value)
    if shutil.which("ptxas"):
        f = tmp_path / "k.ptx"
        f.write_text(_named_ptx(body))
        assert subprocess.run(["ptxas", "-arch=sm_80", str(f), "-o", "/dev/null"], capture_output=True).returncode
