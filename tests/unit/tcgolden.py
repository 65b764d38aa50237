"""Replay the H100's tensor-core, matrix-fragment and asynchronous-copy launches (shared/gpu-golden/tc) through
ptxjit, byte for byte.

`tc/layout.jsonl` has one JSON line per kernel: its case name, kernel, PTX (by sha256), grid/block/shared, buffers and
per-lane slot layout (see shared/gpu-golden/README.md).  `tc_cases(regex)` lists the cases whose name matches,
`replay_tc(case)` runs one and returns a line per differing lane (at most 10); [] when every byte matches.  Tests skip
when the set is absent (it lives beside the checkout, not in it).
"""

from __future__ import annotations

import json
import re
import struct
import warnings
from functools import cache
from pathlib import Path

import numpy as np

TC = Path(__file__).resolve().parents[2].parent / "shared" / "gpu-golden" / "tc"

_SCALAR = {"f32": "<f", "f64": "<d", "u8": "<B", "s8": "<b", "b8": "<B", "u16": "<H", "s16": "<h", "b16": "<H",
           "u32": "<I", "s32": "<i", "b32": "<I", "u64": "<Q", "s64": "<q", "b64": "<Q"}


def available() -> bool:
    return (TC / "layout.jsonl").is_file()


@cache
def _layouts() -> dict[str, dict]:
    out: dict[str, dict] = {}
    for line in (TC / "layout.jsonl").read_text().splitlines():
        if line.strip():
            d = json.loads(line)
            out.setdefault(d["case"], d)
    return out


def tc_cases(pattern: str) -> list[str]:
    """Names of the tc cases matching `pattern` (re.search); [] when the set is absent."""
    if not available():
        return []
    return sorted(c for c in _layouts() if re.search(pattern, c))


def _args(kernel, meta: dict, bufs: list[np.ndarray]) -> list:
    args = []
    for p, decl in zip(meta["params"], kernel.fn.params, strict=True):
        if "buf" in p:
            b = bufs[p["buf"]]
            args.append(b[p["delta"]:] if p["delta"] else b)
            continue
        raw = bytes.fromhex(p["hex"])
        fmt = _SCALAR.get(decl.type)
        args.append(struct.unpack(fmt, raw[:struct.calcsize(fmt)])[0] if fmt and not decl.dims else raw)
    return args


def replay_tc(case: str) -> list[str]:
    """Run tc case `case` through ptxjit; one line per lane slot that differs from the H100's (at most 10)."""
    import ptxjit

    lay = _layouts()[case]
    rid = lay["id"]
    z = np.load(TC / "in" / f"{rid}.npz")
    g = np.load(TC / "gpu" / f"{rid}.npz")
    meta = json.loads(str(z["meta"]))
    mod = ptxjit.Module((TC / "ptx" / f"{meta['ptx']}.ptx").read_text())
    k = mod.get_function(meta["kernel"])
    bufs = [np.ascontiguousarray(z[f"b{i}"]).copy() for i in range(len(meta["bufs"]))]
    with warnings.catch_warnings():  # byte buffers hold mixed slot types: exactly what the H100 read
        warnings.simplefilter("ignore", ptxjit.PtxjitWarning)
        k(tuple(meta["grid"]), tuple(meta["block"]), _args(k, meta, bufs), shared_mem=meta["shared"])
    bad: list[str] = []
    slot = int(lay.get("slot_out_bytes") or 4)
    for i, b in enumerate(bufs):
        want = g[f"g{i}"] if f"g{i}" in g.files else z[f"b{i}"]  # absent: the H100 left it unchanged
        got_bytes, want_bytes = b.view(np.uint8).ravel(), want.view(np.uint8).ravel()
        if got_bytes.tobytes() == want_bytes.tobytes():
            continue
        for t in dict.fromkeys(int(j) // slot for j in np.flatnonzero(got_bytes != want_bytes)):
            got = got_bytes[t * slot:(t + 1) * slot].tobytes()[::-1].hex()
            exp = want_bytes[t * slot:(t + 1) * slot].tobytes()[::-1].hex()
            bad.append(f"buf {i} lane slot {t}: ptxjit 0x{got}, H100 0x{exp} (little endian, whole slot)")
            if len(bad) >= 10:
                return bad
    return bad


def tc_test(pattern: str, what: str, unchecked: bool = False):
    """A pytest test function replaying every tc case matching `pattern`, each byte for byte against the H100;
    skipped when the set is absent.  `unchecked`: without bounds checks (PTXJIT_UNCHECKED=1), the other
    lowering of each access."""
    import pytest

    from tests.markers import golden_needs

    cases = tc_cases(pattern)

    @golden_needs("tc")
    @pytest.mark.parametrize("case", cases or ["none"])
    def test(case: str, monkeypatch) -> None:
        from tests.unit.goldenutil import untiered

        if unchecked:
            monkeypatch.setenv("PTXJIT_UNCHECKED", "1")
        if untiered(case):  # (half of the cases: the block-specialized code, see goldenutil.untiered)
            monkeypatch.setenv("PTXJIT_TIERS", "0")
        bad = replay_tc(case)
        assert not bad, f"{case}:\n" + "\n".join(bad)

    test.__doc__ = f"Every golden {what} kernel, byte for byte as the H100 computed it" + \
        (", without bounds checks." if unchecked else ".")
    return test
