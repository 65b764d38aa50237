"""Helpers shared by the real-kernel corpus tests (tests/test_corpus_*.py).

Kernels come from the committed PTX under corpus/<sub>/<stem>.ptx; each module is loaded once per session.
"""

from __future__ import annotations

import functools
from pathlib import Path

import ptxjit

CORPUS = Path(__file__).parent.parent / "corpus"


@functools.cache
def _module(sub: str, stem: str) -> ptxjit.Module:
    return ptxjit.Module.from_file(CORPUS / sub / f"{stem}.ptx")


def kernel(stem: str, name: str, sub: str = "ptx"):
    return _module(sub, stem).get_function(name)


def cdiv(a: int, b: int) -> int:
    return (a + b - 1) // b
