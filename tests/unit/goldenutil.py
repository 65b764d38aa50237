"""Replay recorded H100 launches from shared/gpu-golden/isa through ptxjit, byte for byte.

Each record of the golden set is one launch of a one-instruction kernel: its PTX, its input buffers and
the bytes an H100 wrote (see shared/gpu-golden/README.md).  `golden_cases(regex)` lists the variants
whose name matches; `replay_case(name)` runs one through ptxjit and returns the differing elements.
The tests skip when the golden set is absent (it lives beside the checkout, not in it).
"""

from __future__ import annotations

import json
import os
import re
import struct
import warnings
import zlib
from functools import cache
from pathlib import Path

import numpy as np

GOLDEN = Path(__file__).resolve().parents[2].parent / "shared" / "gpu-golden" / "isa"

_INT = {"u8": "<B", "s8": "<b", "b8": "<B", "u16": "<H", "s16": "<h", "b16": "<H", "u32": "<I", "s32": "<i",
        "b32": "<I", "u64": "<Q", "s64": "<q", "b64": "<Q", "pred": "<I"}


def available() -> bool:
    return (GOLDEN / "layout.json").is_file()


@cache
def _index() -> dict[str, str]:
    """variant name -> record id"""
    out = {}
    for p in sorted((GOLDEN / "in").glob("*.npz")):
        meta = json.loads(str(np.load(p)["meta"]))
        out.setdefault(meta["case"], p.stem)
    return out


FULL = os.environ.get("PTXJIT_GOLDEN", "").lower() == "full"
REQUESTED: set[str] = set()  # every pattern a test module replays (tests/test_golden.py checks they cover the set)
SAMPLE_EVERY = 3  # an ordinary test run replays a fixed third of the variants; PTXJIT_GOLDEN=full all of them


def golden_cases(pattern: str, full: bool | None = None) -> list[str]:
    """Names of the golden variants matching `pattern` (re.search); [] when the set is absent.

    By default a deterministic third of them (by a hash of the name, so every family keeps some), all with
    PTXJIT_GOLDEN=full or `full=True`: scripts/golden.sh runs the full set, CI the sample."""
    REQUESTED.add(pattern)
    if not available():
        return []
    names = sorted(c for c in _index() if re.search(pattern, c))
    if full or (full is None and FULL):
        return names
    return [c for c in names if zlib.crc32(c.encode()) % SAMPLE_EVERY == 0]


def _args(kernel, meta: dict, bufs: list[np.ndarray]) -> list:
    args = []
    for p, decl in zip(meta["params"], kernel.fn.params, strict=True):
        if "buf" in p:
            b = bufs[p["buf"]]
            b = b[p["delta"]:] if p["delta"] else b
            dt = np.dtype(p.get("dtype") or "|u1")
            # hand the kernel its element type (a view: the bytes land in bufs all the same)
            args.append(b.view(dt) if b.nbytes % dt.itemsize == 0 else b)
            continue
        raw = bytes.fromhex(p["hex"])
        fmt = {"f32": "<f", "f64": "<d"}.get(decl.type) or _INT.get(decl.type)
        args.append(struct.unpack(fmt, raw[:struct.calcsize(fmt)])[0] if fmt and not decl.dims else raw)
    return args


def untiered(case: str) -> bool:
    """Is variant `case` replayed without tiers?  Half of the variants, by a hash of the name: a single
    launch with tiers runs tier 0's generic code, without them the block-specialized code users run in
    the steady state (region mode: batched shuffles, shuffle chains, fast copies), and both must match."""
    return zlib.crc32(case.encode()) >> 8 & 1 == 1


def replay_case(case: str) -> list[str]:
    """Run golden variant `case` through ptxjit; one line per output element that differs from the H100's
    (at most 10), [] when every byte matches."""
    import ptxjit

    rid = _index()[case]
    z = np.load(GOLDEN / "in" / f"{rid}.npz")
    g = np.load(GOLDEN / "gpu" / f"{rid}.npz")
    meta = json.loads(str(z["meta"]))
    layout = json.loads((GOLDEN / "layout.json").read_text())["variants"][case]
    mod = ptxjit.Module((GOLDEN / "ptx" / f"{meta['ptx']}.ptx").read_text())
    k = mod.get_function(meta["kernel"])
    bufs = [np.ascontiguousarray(z[f"b{i}"]).copy() for i in range(len(meta["bufs"]))]
    with warnings.catch_warnings():  # input slots mix types: the byte buffer is exactly what the H100 read
        warnings.simplefilter("ignore", ptxjit.PtxjitWarning)
        k(tuple(meta["grid"]), tuple(meta["block"]), _args(k, meta, bufs), shared_mem=meta["shared"])
    bad = []
    for i, b in enumerate(bufs):
        want = g[f"g{i}"] if f"g{i}" in g.files else z[f"b{i}"]  # absent: the H100 left it unchanged
        if b.tobytes() == want.tobytes():
            continue
        slot = layout["out_slot"] if i == 1 else 1
        for t in dict.fromkeys(int(j) // slot for j in np.flatnonzero(b != want)):
            got = b[t * slot:(t + 1) * slot].tobytes()[::-1].hex()
            exp = want[t * slot:(t + 1) * slot].tobytes()[::-1].hex()
            inp = z["b0"][t * layout["in_slot"]:(t + 1) * layout["in_slot"]].tobytes()[::-1].hex()
            bad.append(f"thread {t}: in 0x{inp} -> ptxjit 0x{got}, H100 0x{exp} (slots, little endian)")
            if len(bad) >= 10:
                return bad
    return bad


def golden_test(pattern: str, what: str):
    """A pytest test function replaying every golden variant matching `pattern` (a third of them unless
    PTXJIT_GOLDEN=full), each byte for byte against the H100; skipped when the set is absent."""
    import pytest

    from tests.markers import golden_needs

    cases = golden_cases(pattern)

    @golden_needs("isa")
    @pytest.mark.parametrize("case", cases or ["none"])
    def test(case: str, monkeypatch) -> None:
        if untiered(case):
            monkeypatch.setenv("PTXJIT_TIERS", "0")
        bad = replay_case(case)
        assert not bad, f"{case}:\n" + "\n".join(bad)

    test.__doc__ = f"Every golden {what} variant, byte for byte as the H100 computed it."
    return test
