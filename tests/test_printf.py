"""Device printf never crashes the process: %s reads only memory the launch knows, widths and
precisions are capped, C's conversions are formatted as C formats them (tests/data/printf_bad.cu)."""

from __future__ import annotations

import struct
import time
from pathlib import Path

import numpy as np
import pytest

import ptxjit
from ptxjit.runtime import printf

DATA = Path(__file__).parent / "data"


@pytest.fixture(scope="module")
def mod() -> ptxjit.Module:
    return ptxjit.Module.from_file(DATA / "printf_bad.ptx")


def _out(capfd) -> list[str]:
    return capfd.readouterr().out.splitlines()


def test_string_in_an_argument_array_is_printed(mod, capfd):
    s = np.frombuffer(b"hello\0", np.uint8)  # read-only: the kernel only reads it (printf does not write)
    mod.get_function("print_str_ptr")(1, 32, (s,))
    assert _out(capfd) == ["[hello]"]


def test_string_inside_an_array_stops_at_the_array_end(mod, capfd):
    s = np.frombuffer(b"abcdefgh", np.uint8)  # no NUL: reading stops at the end of the known array
    k = mod.get_function("print_offset_str")
    k(1, 32, (s, 5))
    k(1, 32, (s, 50))  # past the end of the array: not memory the launch knows
    out = _out(capfd)
    assert out[0] == "[fgh]"
    assert out[1].startswith("[(bad pointer 0x") and out[1].endswith(")]")


@pytest.mark.parametrize("addr", [8, 0xDEADBEEF, 2 ** 63 + 5, 2 ** 64 - 1])
def test_bad_pointer_for_s_is_reported_not_followed(mod, capfd, addr):
    mod.get_function("print_addr_as_str")(1, 32, (addr,))
    assert _out(capfd) == [f"[(bad pointer {addr:#x})]"]


def test_valid_but_unknown_memory_is_not_read(mod, capfd):
    secret = np.frombuffer(b"secret\0", np.uint8)  # mapped, but not this launch's memory
    mod.get_function("print_addr_as_str")(1, 32, (secret.ctypes.data,))
    out = _out(capfd)
    assert out == [f"[(bad pointer {secret.ctypes.data:#x})]"] and "secret" not in out[0]


def test_int_passed_for_s(mod, capfd):
    mod.get_function("print_int_as_str")(1, 32, (5,))
    out = _out(capfd)
    assert len(out) == 1 and out[0].startswith("[(bad pointer 0x")


def test_huge_star_width_and_precision_are_capped(mod, capfd):
    t = time.perf_counter()
    mod.get_function("print_star_width")(1, 32, (2 ** 31 - 1, 2 ** 31 - 1, 7))
    assert time.perf_counter() - t < 10  # was 35 s uncapped
    (line,) = _out(capfd)
    first, second = line.split("][")
    assert len(first) == 1 + printf.MAX_WIDTH and first.endswith("7")
    assert second == "1." + "5" + "0" * (printf.MAX_WIDTH - 1) + "]"


def test_negative_star_width_left_justifies_negative_precision_is_omitted(mod, capfd):
    mod.get_function("print_star_width")(1, 32, (-5, -3, 7))
    assert _out(capfd) == ["[7    ][1.500000]"]


def test_literals_flags_and_length_modifiers(mod, capfd):
    mod.get_function("print_literal")(1, 32, (300,))
    # %hhd of 300 is 44 (C converts to signed char); %hd of 300 is 300; %c of 65 + (300 & 7) is 'E'
    assert _out(capfd) == ["[lit|abc|ab    |   cd] 44 300 300 12c E %"]


# ------------------------------------------------------------------ the formatter on its own
def _buf(*items: tuple[str, object]) -> np.ndarray:
    raw = bytearray()
    for fmt, v in items:
        size = struct.calcsize("<" + fmt)
        raw += b"\0" * (-len(raw) % size) + struct.pack("<" + fmt, v)
    return np.frombuffer(bytes(raw) + b"\0" * 8, np.uint8).copy()


def test_format_conversions():
    b = _buf(("i", -3), ("I", 2 ** 32 - 1), ("q", -(2 ** 40)), ("d", 0.25), ("Q", 0xABC))
    s = printf.format_cuda(b"%d %u %lld %.2f %p", b.ctypes.data)
    assert s == f"-3 {2 ** 32 - 1} {-(2 ** 40)} 0.25 0xabc"


@pytest.mark.parametrize("fmt", [b"%99999999999d", b"%.99999999999f", b"%0999999999x", b"%-99999999s"])
def test_huge_literal_widths_are_capped(fmt):
    b = _buf(("q", 0), ("q", 0))
    s = printf.format_cuda(fmt, b.ctypes.data)
    assert len(s) <= printf.MAX_WIDTH + 16


def test_odd_and_unsupported_conversions_never_raise():
    b = _buf(("q", 65), ("q", 66), ("q", 67))
    for fmt in (b"%#c", b"%.3c", b"%#o", b"%n", b"%ls", b"%lc", b"%", b"%5", b"%#s", b"%+p", b"\xff\xfe %d"):
        assert isinstance(printf.format_cuda(fmt, b.ctypes.data), str)
    assert printf.format_cuda(b"%#o", _buf(("i", 8)).ctypes.data) == "010"


def test_more_conversions_than_arguments_do_not_read_unmapped_memory():
    # the argument buffer's address is wrong (unmapped): every argument reads as missing, no crash
    s = printf.format_cuda(b"%d %s %f\n", 8)
    assert s.endswith("(printf: argument buffer unreadable)\n")


def test_bad_format_pointer(capfd):
    assert printf.printf_callback(0x1234, 0) > 0
    assert "bad format pointer 0x1234" in capfd.readouterr().out
