"""The driver's JIT linker (driver/link.py) on separately compiled nvcc output (tests/data/link, regen.sh):
what the GPU's linker accepts links here too, and the linked kernel's results are checked against NumPy."""

from __future__ import annotations

from pathlib import Path

import numpy as np

import ptxjit
from ptxjit.driver.context import DRIVER
from ptxjit.driver.link import INPUT_PTX, LinkState

DATA = Path(__file__).resolve().parent / "data" / "link"


def _linked(*names: str) -> str:
    DRIVER.init(0)  # cuInit: the linker picks each input's PTX for the virtual device
    state = LinkState(handle=1)
    for name in names:
        state.add(INPUT_PTX, (DATA / f"{name}.ptx").read_bytes(), f"{name}.ptx")
    image = state.complete()
    assert image.endswith(b"\0")
    return image[:-1].decode()


def test_void_callee_and_shared_weak_variable_link_and_run():
    """caller.ptx calls `consume` expecting a value (`call.uni (retval0), consume, ...`) that callee.ptx
    defines void, and both define the weak inline variable `bias`: the link holds one `bias` and a call
    without the return operand, and the kernel computes what the CUDA source says."""
    text = _linked("caller", "callee")
    assert text.count(".weak .global .align 4 .u32 bias = 7;") == 1
    kernel = ptxjit.Module(text).get_function("scale_and_consume")
    n = 300
    x = np.arange(n, dtype=np.int32) * 3 - 100
    out = np.zeros(n, np.int32)
    slots = np.zeros(n, np.int32)
    kernel((n + 127) // 128, 128, (out, slots, x, n))
    np.testing.assert_array_equal(out, 2 * x + 7)
    np.testing.assert_array_equal(slots, x + 7)


def test_link_order_does_not_matter():
    """The callee first: its header leads, the caller's extern declaration of `consume` goes, and the
    caller's duplicate `bias` is the one dropped."""
    text = _linked("callee", "caller")
    assert text.count("bias = 7;") == 1 and ".extern .func" not in text
    kernel = ptxjit.Module(text).get_function("scale_and_consume")
    x = np.arange(64, dtype=np.int32)
    out, slots = np.zeros(64, np.int32), np.zeros(64, np.int32)
    kernel(1, 64, (out, slots, x, 64))
    np.testing.assert_array_equal(out, 2 * x + 7)
    np.testing.assert_array_equal(slots, x + 7)


def test_a_mismatched_call_within_one_input_is_still_refused():
    """ptxas refuses a call whose return values do not match its callee in one compilation unit; the
    linker's leniency is only for calls across inputs."""
    text = (DATA / "callee.ptx").read_text() + """
.visible .entry bad(.param .u64 p)
{
    .reg .b64 %rd<2>;
    ld.param.u64 %rd1, [p];
    {
    .param .b64 a0;
    st.param.b64 [a0], %rd1;
    .param .b32 a1;
    st.param.b32 [a1], 1;
    .param .b32 r0;
    call.uni (r0), consume, (a0, a1);
    }
    ret;
}
"""
    DRIVER.init(0)
    state = LinkState(handle=2)
    state.add(INPUT_PTX, text.encode(), "one.ptx")
    image = state.complete()[:-1].decode()
    try:
        ptxjit.Module(image)
    except ptxjit.PTXValidationError as e:
        assert "consume" in str(e) and "returns 0" in str(e)
    else:
        raise AssertionError("a mismatched call within one input was accepted")
