"""A device assert whose string arguments are not strings (a wrong __assertfail call: ptxas rejects its types,
a generator may still emit it) stops the kernel with KernelTrap, the unreadable strings shown as '?'.  The host
reads the message, file and function names without faulting, whatever address the kernel passed.  Run in a
child process: a crash fails this test instead of the test run."""

from __future__ import annotations

import subprocess
import sys
import textwrap

PTX = r"""
.version 8.0
.target sm_90
.address_size 64
.extern .func __assertfail
(
    .param .b64 __assertfail_param_0,
    .param .b64 __assertfail_param_1,
    .param .b32 __assertfail_param_2,
    .param .b64 __assertfail_param_3,
    .param .b64 __assertfail_param_4
)
;
.global .align 1 .b8 msg[6] = {120, 32, 62, 32, 48, 0};
.visible .entry bad_assert(.param .u64 where)
{
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [where];
    mov.u64 %rd2, msg;
    {
    .param .b64 param0;
    st.param.b64 [param0+0], %rd1;
    .param .b64 param1;
    st.param.b64 [param1+0], 12;
    .param .b32 param2;
    st.param.b32 [param2+0], 7;
    .param .b64 param3;
    st.param.b64 [param3+0], 140737488355328;
    .param .b64 param4;
    st.param.b64 [param4+0], 1;
    call.uni __assertfail, (param0, param1, param2, param3, param4);
    }
    ret;
}
"""

CHILD = textwrap.dedent("""
    import sys
    import ptxjit
    k = ptxjit.Module(sys.stdin.read(), "bad_assert.ptx").get_function("bad_assert")
    for where in (0, 12, 0xdead0000, 2 ** 47 - 8):  # NULL, low page, unmapped, the top of user space
        try:
            k(1, 32, (ptxjit.Pointer(where),), checked=False)
        except ptxjit.KernelTrap as exc:
            print("trap", str(exc).split(" in block")[0])
""")


def test_assert_strings_at_unreadable_addresses_do_not_crash():
    r = subprocess.run([sys.executable, "-c", CHILD], input=PTX, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    lines = r.stdout.splitlines()
    assert len(lines) == 4, r.stdout + r.stderr[-2000:]
    for line in lines:
        assert line == "trap kernel 'bad_assert' failed assertion '?' (?:7)", line
