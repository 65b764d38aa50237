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


def test_a_common_variable_of_several_inputs_is_one():
    """Two inputs that both define `.common .global .u64 env` (numba's environment pointer with debug=True):
    one variable after the link, which both inputs' code reaches (ptxas refuses two definitions in one input)."""
    head = ".version 8.0\n.target sm_90\n.address_size 64\n.common .global .align 8 .u64 env;\n"
    writer = head + """.visible .func set_env(.param .u64 v)
{
    .reg .b64 %rd<2>;
    ld.param.u64 %rd1, [v];
    st.global.u64 [env], %rd1;
    ret;
}
"""
    reader = head + """.extern .func set_env(.param .u64 v);
.visible .entry read_env(.param .u64 out)
{
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [out];
    mov.u64 %rd2, 41;
    { .param .u64 a; st.param.u64 [a], %rd2; call.uni set_env, (a); }
    ld.global.u64 %rd3, [env];
    add.u64 %rd3, %rd3, 1;
    st.global.u64 [%rd1], %rd3;
    ret;
}
"""
    DRIVER.init(0)
    state = LinkState(handle=2)
    state.add(INPUT_PTX, writer.encode(), "writer.ptx")
    state.add(INPUT_PTX, reader.encode(), "reader.ptx")
    image = state.complete()[:-1].decode()
    assert image.count(".common .global .align 8 .u64 env;") == 1
    out = np.zeros(1, np.uint64)
    ptxjit.Module(image).get_function("read_env")(1, 1, (out,))
    assert out[0] == 42


def test_a_weak_function_of_several_inputs_is_one():
    """numba with debug=True compiles a device function into each caller's input as `.weak .func`: the link
    keeps the first definition (braces in comments do not end it early), the kernel calls it."""
    head = ".version 8.0\n.target sm_90\n.address_size 64\n"
    helper = """.weak .func (.param .b32 r) twice(.param .b32 x)
{   // a comment with a brace }
    .reg .b32 %r<3>;
    ld.param.b32 %r1, [x];
    add.s32 %r2, %r1, %r1;
    st.param.b32 [r], %r2;
    ret;
}
"""
    first = head + helper + """.visible .entry use_twice(.param .u64 out)
{
    .reg .b32 %r<3>;
    .reg .b64 %rd<2>;
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, 21;
    { .param .b32 a; .param .b32 r; st.param.b32 [a], %r1; call.uni (r), twice, (a); ld.param.b32 %r2, [r]; }
    st.global.u32 [%rd1], %r2;
    ret;
}
"""
    DRIVER.init(0)
    state = LinkState(handle=3)
    state.add(INPUT_PTX, first.encode(), "first.ptx")
    state.add(INPUT_PTX, (head + helper).encode(), "second.ptx")
    image = state.complete()[:-1].decode()
    assert image.count(".weak .func (.param .b32 r) twice") == 1
    out = np.zeros(1, np.uint32)
    ptxjit.Module(image).get_function("use_twice")(1, 1, (out,))
    assert out[0] == 42
