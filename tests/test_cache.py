"""Launch-time translation and the translation caches (memory and disk)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import ptxjit
from ptxjit.jit import cache, cache_dir

EXAMPLES = Path(__file__).parent.parent / "examples"
PTX = (EXAMPLES / "demo_kernels.ptx").read_text()


@pytest.fixture(autouse=True)
def _untiered(monkeypatch):
    """These tests count the translations and disk entries of one launch: one untiered translation each
    (a tiered launch makes tier 0, tier 1 and the plain code; test_tiered_versions_come_from_disk below
    covers the disk cache with tiers on).  Child processes inherit the setting.  Tier-1 builds that
    earlier tests' launches started in the background would count in cache_stats() too: waited for."""
    from ptxjit.tiers import state as tier_state

    monkeypatch.setenv("PTXJIT_TIERS", "0")
    for th in list(tier_state._builders):
        th.join(timeout=300)


@pytest.fixture()
def fresh_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PTXJIT_CACHE_DIR", str(tmp_path))
    return tmp_path


def _saxpy(mod, grid, block, n=1000):
    x = np.arange(n, dtype=np.float32)
    y = np.ones(n, np.float32)
    mod.get_function("saxpy")(grid, block, (n, 2.0, x, y))
    np.testing.assert_array_equal(y, 2 * x + 1)


def test_other_grid_shares_translation_other_block_does_not(fresh_cache):
    mod = ptxjit.Module(PTX)
    s0 = ptxjit.cache_stats()
    _saxpy(mod, 8, 128)
    _saxpy(mod, 16, 128)  # other grid: same translation
    s1 = ptxjit.cache_stats()
    assert s1["translations"] - s0["translations"] == 1
    assert s1["memory_hits"] - s0["memory_hits"] == 1
    _saxpy(mod, 4, 256)  # other block shape: specialized again
    s2 = ptxjit.cache_stats()
    assert s2["translations"] - s1["translations"] == 1


def test_second_module_hits_disk_cache(fresh_cache):
    _saxpy(ptxjit.Module(PTX), 4, 256)
    s0 = ptxjit.cache_stats()
    _saxpy(ptxjit.Module(PTX), 4, 256)
    s1 = ptxjit.cache_stats()
    assert s1["disk_hits"] - s0["disk_hits"] == 1
    assert s1["translations"] == s0["translations"]
    assert cache.info()["entries"] >= 1


_CHILD = """
import json, time, numpy as np, ptxjit
t = time.perf_counter()
mod = ptxjit.Module.from_file({path!r})
A = np.random.default_rng(0).random((64, 64), dtype=np.float32)
C = np.zeros_like(A)
mod.get_function("matmul")((4, 4), (16, 16), (A, A, C, 64))
ok = bool(np.allclose(C, A @ A, rtol=1e-4))
print(json.dumps(dict(ptxjit.cache_stats(), seconds=time.perf_counter() - t, ok=ok)))
"""


def _child(cache_dir: Path) -> dict:
    env = dict(os.environ, PTXJIT_CACHE_DIR=str(cache_dir))
    out = subprocess.run([sys.executable, "-c", _CHILD.format(path=str(EXAMPLES / "demo_kernels.ptx"))],
                         env=env, capture_output=True, text=True, timeout=120, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_fresh_process_starts_from_disk_cache(tmp_path, capsys):
    cold = _child(tmp_path)
    warm = _child(tmp_path)
    assert cold["ok"] and warm["ok"]
    assert cold["translations"] == 1 and cold["disk_hits"] == 0
    assert warm["translations"] == 0 and warm["disk_hits"] == 1
    with capsys.disabled():  # measured, not asserted: machines are noisy
        print(f"\n[cache] first launch: cold {cold['seconds'] * 1e3:.0f} ms, warm {warm['seconds'] * 1e3:.0f} ms")


_TIERED_CHILD = """
import json, numpy as np, ptxjit
from ptxjit import tiers
tiers.HOOKS["synchronous"] = True  # tier 1 (and the plain code) built before the launch returns
tiers.POLICY.hot_run_ratio = 0.0  # hot at once: tier 1 at the second launch, however short the launches
mod = ptxjit.Module.from_file({path!r})
A = np.random.default_rng(0).random((64, 64), dtype=np.float32)
ok = True
for _ in range(4):  # tier 1 is built at the second launch (from disk in the warm process)
    C = np.zeros_like(A)
    mod.get_function("matmul")((4, 4), (16, 16), (A, A, C, 64))
    ok = ok and bool(np.allclose(C, A @ A, rtol=1e-4))
st = ptxjit.stats()["matmul"]
print(json.dumps(dict(ptxjit.cache_stats(), ok=ok, tier=st["tier"], launches=st["launches"],
                      builds=[[b["level"], b["from_disk"], sorted(b["spec"])] for b in st["builds"]])))
"""


def test_tiered_versions_come_from_disk(tmp_path, monkeypatch):
    """With tiers on, a new process gets tier 0 and the specialized tier-1 version from the disk cache:
    nothing is translated again, and it runs tier 1 once built at its second launch (results against NumPy)."""
    monkeypatch.setenv("PTXJIT_TIERS", "1")
    env = dict(os.environ, PTXJIT_CACHE_DIR=str(tmp_path))
    code = _TIERED_CHILD.format(path=str(EXAMPLES / "demo_kernels.ptx"))

    def child() -> dict:
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300,
                             check=True)
        return json.loads(out.stdout.strip().splitlines()[-1])

    cold = child()
    warm = child()
    assert cold["ok"] and warm["ok"]
    assert cold["tier"] == 1 and warm["tier"] == 1
    levels = sorted(b[0] for b in cold["builds"])
    assert levels[0] == 0 and 1 in levels  # tier 0 and at least one tier-1 version were built
    assert cold["translations"] >= 2 and cold["disk_hits"] == 0
    assert warm["translations"] == 0 and warm["disk_hits"] >= 2
    assert all(from_disk for _, from_disk, _ in warm["builds"]), warm["builds"]
    # the same versions (same specializations) as the cold process built
    assert sorted(map(str, warm["builds"])) == sorted(map(str, [[lv, True, sp] for lv, _, sp in cold["builds"]]))
    assert warm["launches"][1] >= 2
    assert len(list((tmp_path / "kernels").glob("*.bin"))) >= 2


@pytest.mark.parametrize("damage", ["truncate", "flip", "garbage"])
def test_corrupted_entry_is_rebuilt_not_loaded(fresh_cache, cache_warnings, damage):
    _saxpy(ptxjit.Module(PTX), 4, 256)
    files = list((fresh_cache / "kernels").glob("*.bin"))
    assert len(files) == 1
    f = files[0]
    data = bytearray(f.read_bytes())
    if damage == "truncate":
        f.write_bytes(bytes(data[: len(data) // 2]))
    elif damage == "flip":
        data[-10] ^= 0xFF
        f.write_bytes(bytes(data))
    else:
        f.write_bytes(b"not a cache entry at all")
    s0 = ptxjit.cache_stats()
    with pytest.warns(ptxjit.PtxjitWarning, match="is damaged"):
        _saxpy(ptxjit.Module(PTX), 4, 256)
    s1 = ptxjit.cache_stats()
    assert s1["translations"] - s0["translations"] == 1
    assert s1["disk_hits"] == s0["disk_hits"]
    # the rebuilt entry is good again
    _saxpy(ptxjit.Module(PTX), 4, 256)
    assert ptxjit.cache_stats()["disk_hits"] - s1["disk_hits"] == 1


def test_key_depends_on_ptx_content(fresh_cache):
    _saxpy(ptxjit.Module(PTX), 4, 256)
    changed = PTX.replace("// Generated by", "// (changed) Generated by")
    s0 = ptxjit.cache_stats()
    _saxpy(ptxjit.Module(changed), 4, 256)
    assert ptxjit.cache_stats()["translations"] - s0["translations"] == 1


def test_cache_cli(fresh_cache):
    from click.testing import CliRunner

    from ptxjit.cli import main

    _saxpy(ptxjit.Module(PTX), 4, 256)
    r = CliRunner().invoke(main, ["cache", "info"])
    assert r.exit_code == 0 and str(fresh_cache) in r.output.replace("\n", "") and "entries: 1" in r.output
    r = CliRunner().invoke(main, ["cache", "clear"], input="n\n")  # asks first; "no" keeps everything
    assert r.exit_code != 0 and "Delete every cached translation" in r.output and "Traceback" not in r.output
    assert cache.info()["entries"] == 1
    r = CliRunner().invoke(main, ["cache", "clear"])  # no answer (not a terminal): nothing is deleted
    assert r.exit_code != 0 and cache.info()["entries"] == 1
    r = CliRunner().invoke(main, ["cache", "clear"], input="y\n")
    assert r.exit_code == 0 and "removed 1" in r.output
    _saxpy(ptxjit.Module(PTX), 4, 256)
    r = CliRunner().invoke(main, ["cache", "clear", "--yes"])
    assert r.exit_code == 0 and "removed 1" in r.output
    assert cache.info()["entries"] == 0


# ------------------------------------------------------------------ trust: directory, entries, files
@pytest.fixture()
def cache_warnings():
    """Forget which cache warnings were given, so that each test sees its own."""
    cache_dir._warned.clear()
    yield
    cache_dir._warned.clear()


def _stats_delta(fn) -> dict:
    s0 = ptxjit.cache_stats()
    fn()
    s1 = ptxjit.cache_stats()
    return {k: s1[k] - s0[k] for k in s0}


def _entry(d: Path) -> Path:
    files = list((d / "kernels").glob("*.bin"))
    assert len(files) == 1, files
    return files[0]


def _no_disk_cache(d: Path) -> None:
    """Two modules translate twice, nothing is loaded from or written to d."""
    delta = _stats_delta(lambda: (_saxpy(ptxjit.Module(PTX), 4, 256), _saxpy(ptxjit.Module(PTX), 4, 256)))
    assert delta["translations"] == 2 and delta["disk_hits"] == 0
    assert not list(d.rglob("*.bin"))


@pytest.mark.parametrize("mode, who", [(0o777, "group and others"), (0o770, "group"), (0o703, "others")])
def test_directory_writable_by_others_is_refused(fresh_cache, cache_warnings, mode, who):
    fresh_cache.chmod(mode)
    try:
        with pytest.warns(ptxjit.PtxjitWarning, match=f"not using the cache directory .*writable by {who}"):
            _no_disk_cache(fresh_cache)
    finally:
        fresh_cache.chmod(0o700)


def test_kernels_subdirectory_writable_by_others_is_refused(fresh_cache, cache_warnings):
    _saxpy(ptxjit.Module(PTX), 4, 256)
    (fresh_cache / "kernels").chmod(0o777)
    with pytest.warns(ptxjit.PtxjitWarning, match="kernels: it is writable by group and others"):
        delta = _stats_delta(lambda: _saxpy(ptxjit.Module(PTX), 4, 256))
    assert delta["translations"] == 1 and delta["disk_hits"] == 0


def test_directory_owned_by_someone_else_is_refused(fresh_cache, cache_warnings, monkeypatch):
    # the tests run as root (or as the owner): pretend to be another user instead of chown-ing
    monkeypatch.setattr(cache_dir, "_euid", lambda: 4242)
    with pytest.warns(ptxjit.PtxjitWarning, match=r"owned by uid \d+, not by you \(uid 4242\)"):
        _no_disk_cache(fresh_cache)


def test_parent_writable_by_everyone_without_sticky_bit_is_refused(tmp_path, monkeypatch, cache_warnings):
    parent = tmp_path / "open"
    parent.mkdir()
    parent.chmod(0o777)
    d = parent / "cache"
    monkeypatch.setenv("PTXJIT_CACHE_DIR", str(d))
    try:
        with pytest.warns(ptxjit.PtxjitWarning, match="writable by everyone without the sticky bit"):
            _no_disk_cache(d)
        parent.chmod(0o1777)  # sticky, like /tmp: others cannot rename our directory away
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            _saxpy(ptxjit.Module(PTX), 4, 256)
        assert len(list(d.rglob("*.bin"))) == 1
    finally:
        parent.chmod(0o700)


def test_new_cache_directory_is_private(tmp_path, monkeypatch):
    d = tmp_path / "a" / "b"
    monkeypatch.setenv("PTXJIT_CACHE_DIR", str(d))
    _saxpy(ptxjit.Module(PTX), 4, 256)
    assert d.stat().st_mode & 0o777 == 0o700 and (d / "kernels").stat().st_mode & 0o777 == 0o700
    assert _entry(d).stat().st_mode & 0o777 == 0o600


def test_refusal_is_warned_once(fresh_cache, cache_warnings):
    fresh_cache.chmod(0o777)
    try:
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            for _ in range(3):
                _saxpy(ptxjit.Module(PTX), 4, 256)
        assert len([x for x in w if issubclass(x.category, ptxjit.PtxjitWarning)]) == 1
    finally:
        fresh_cache.chmod(0o700)


def test_cache_dir_that_is_a_file_is_unusable_not_fatal(tmp_path, monkeypatch, cache_warnings):
    f = tmp_path / "file"
    f.write_text("x")
    monkeypatch.setenv("PTXJIT_CACHE_DIR", str(f))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        delta = _stats_delta(lambda: _saxpy(ptxjit.Module(PTX), 4, 256))
    msgs = " ".join(str(x.message) for x in w)
    assert "it is not a directory" in msgs and "cannot create the cache directory" in msgs
    assert delta["translations"] == 1


def test_cache_info_reports_refusal(fresh_cache, cache_warnings):
    from click.testing import CliRunner

    from ptxjit.cli import main

    fresh_cache.chmod(0o777)
    try:
        r = CliRunner().invoke(main, ["cache", "info"])
        assert r.exit_code == 0 and "not used: it is writable by group and others" in r.output
    finally:
        fresh_cache.chmod(0o700)


def _two_entries(d: Path) -> tuple[Path, Path]:
    _saxpy(ptxjit.Module(PTX), 4, 256)
    a = set((d / "kernels").glob("*.bin"))
    _saxpy(ptxjit.Module(PTX), 8, 128)
    b = set((d / "kernels").glob("*.bin")) - a
    return a.pop(), b.pop()


def test_swapped_entries_are_detected_and_rebuilt(fresh_cache, cache_warnings):
    a, b = _two_entries(fresh_cache)
    da, db = a.read_bytes(), b.read_bytes()
    a.write_bytes(db)  # each entry is intact (checksums match) but sits under the other's key
    b.write_bytes(da)
    with pytest.warns(ptxjit.PtxjitWarning, match="belongs to another key"):
        delta = _stats_delta(lambda: (_saxpy(ptxjit.Module(PTX), 4, 256), _saxpy(ptxjit.Module(PTX), 8, 128)))
    assert delta["translations"] == 2 and delta["disk_hits"] == 0
    delta = _stats_delta(lambda: (_saxpy(ptxjit.Module(PTX), 4, 256), _saxpy(ptxjit.Module(PTX), 8, 128)))
    assert delta["disk_hits"] == 2  # the rebuilt entries are good


def test_entry_copied_to_another_key_is_refused(fresh_cache, cache_warnings):
    a, b = _two_entries(fresh_cache)
    b.write_bytes(a.read_bytes())
    with pytest.warns(ptxjit.PtxjitWarning, match="belongs to another key"):
        delta = _stats_delta(lambda: _saxpy(ptxjit.Module(PTX), 8, 128))
    assert delta["translations"] == 1


def _with_alarm(fn, seconds: int = 60):
    """Run fn, failing (instead of hanging the test run) if it blocks, e.g. opening a FIFO."""
    import signal

    def timeout(*_):
        raise TimeoutError("blocked")

    old = signal.signal(signal.SIGALRM, timeout)
    signal.alarm(seconds)
    try:
        return fn()
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def test_fifo_in_place_of_an_entry_does_not_block(fresh_cache, cache_warnings):
    _saxpy(ptxjit.Module(PTX), 4, 256)
    f = _entry(fresh_cache)
    f.unlink()
    os.mkfifo(f)
    with pytest.warns(ptxjit.PtxjitWarning, match="it is a FIFO"):
        delta = _with_alarm(lambda: _stats_delta(lambda: _saxpy(ptxjit.Module(PTX), 4, 256)))
    assert delta["translations"] == 1
    assert f.is_file() and not f.is_fifo()  # replaced by a good entry


@pytest.mark.parametrize("target", ["/dev/zero", "/dev/urandom", "good-entry-elsewhere"])
def test_symlinked_entry_is_never_followed(fresh_cache, cache_warnings, tmp_path, target):
    _saxpy(ptxjit.Module(PTX), 4, 256)
    f = _entry(fresh_cache)
    if target == "good-entry-elsewhere":  # even a valid entry is not read through a link
        elsewhere = tmp_path / "elsewhere.bin"
        elsewhere.write_bytes(f.read_bytes())
        target = str(elsewhere)
    f.unlink()
    f.symlink_to(target)
    with pytest.warns(ptxjit.PtxjitWarning, match="symbolic link"):
        delta = _with_alarm(lambda: _stats_delta(lambda: _saxpy(ptxjit.Module(PTX), 4, 256)))
    assert delta["translations"] == 1 and delta["disk_hits"] == 0
    assert not f.is_symlink() and f.is_file()


def test_oversize_entry_is_not_read(fresh_cache, cache_warnings):
    _saxpy(ptxjit.Module(PTX), 4, 256)
    f = _entry(fresh_cache)
    with open(f, "r+b") as fh:  # sparse: large on paper, nothing to read
        fh.truncate(cache.MAX_ENTRY_BYTES + 1)
    with pytest.warns(ptxjit.PtxjitWarning, match="more than the"):
        delta = _stats_delta(lambda: _saxpy(ptxjit.Module(PTX), 4, 256))
    assert delta["translations"] == 1
    assert f.stat().st_size < cache.MAX_ENTRY_BYTES


def test_directory_in_place_of_an_entry(fresh_cache, cache_warnings):
    _saxpy(ptxjit.Module(PTX), 4, 256)
    f = _entry(fresh_cache)
    f.unlink()
    f.mkdir()
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        delta = _stats_delta(lambda: _saxpy(ptxjit.Module(PTX), 4, 256))
    msgs = " ".join(str(x.message) for x in w)
    assert "it is a directory" in msgs and "cannot write to the translation cache" in msgs
    assert delta["translations"] == 1 and f.is_dir()  # left alone; the translation still works


def test_entry_owned_by_someone_else_is_not_read(fresh_cache, cache_warnings, monkeypatch):
    _saxpy(ptxjit.Module(PTX), 4, 256)
    monkeypatch.setattr(cache_dir, "untrusted_reason", lambda p: None)  # the directory itself passes
    monkeypatch.setattr(cache_dir, "_euid", lambda: os.geteuid() + 1)
    with pytest.warns(ptxjit.PtxjitWarning, match="owned by uid"):
        delta = _stats_delta(lambda: _saxpy(ptxjit.Module(PTX), 4, 256))
    assert delta["disk_hits"] == 0


def test_older_format_entry_is_rebuilt(fresh_cache, cache_warnings):
    _saxpy(ptxjit.Module(PTX), 4, 256)
    f = _entry(fresh_cache)
    data = bytearray(f.read_bytes())
    data[:8] = b"PTXJITC1"
    f.write_bytes(bytes(data))
    with pytest.warns(ptxjit.PtxjitWarning, match="damaged"):
        delta = _stats_delta(lambda: _saxpy(ptxjit.Module(PTX), 4, 256))
    assert delta["translations"] == 1


def test_clear_removes_only_cache_entries(fresh_cache):
    _saxpy(ptxjit.Module(PTX), 4, 256)
    keep = fresh_cache / "kernels" / "notes.txt"
    keep.write_text("mine")
    outside = fresh_cache / "outside.bin"
    outside.write_text("x")
    (fresh_cache / "kernels" / ("0" * 64 + ".bin")).symlink_to(outside)
    assert cache.clear() == 2  # the entry and the link (not what it points to)
    assert keep.exists() and outside.exists()


# ------------------------------------------------------------------ the NVRTC cache lives in the same place
NVRTC_SRC = 'extern "C" __global__ void fill(int* x, int v) { x[threadIdx.x] = v + threadIdx.x; }\n'
NVRTC_SRC2 = 'extern "C" __global__ void fill(int* x, int v) { x[threadIdx.x] = v - threadIdx.x; }\n'


@pytest.fixture()
def nvrtc(fresh_cache):
    if not ptxjit.cuda.nvrtc_available():
        pytest.skip("NVRTC is not installed")
    return fresh_cache / "nvrtc"


def _nvrtc_entry(d: Path, src: str) -> Path:
    before = set(d.rglob("*.json")) if d.exists() else set()
    ptxjit.compile_cuda(src)
    (p,) = set(d.rglob("*.json")) - before
    return p


@pytest.mark.parametrize("kind", ["fifo", "devzero", "swapped"])
def test_nvrtc_cache_entries_are_checked(nvrtc, kind):
    p = _nvrtc_entry(nvrtc, NVRTC_SRC)
    if kind == "fifo":
        p.unlink()
        os.mkfifo(p)
    elif kind == "devzero":
        p.unlink()
        p.symlink_to("/dev/zero")
    else:  # the other source's entry under this key: intact, but not this source's PTX
        q = _nvrtc_entry(nvrtc, NVRTC_SRC2)
        p.write_bytes(q.read_bytes())
    res = _with_alarm(lambda: ptxjit.compile_cuda(NVRTC_SRC))
    assert not res.from_cache and res.ptx == ptxjit.compile_cuda(NVRTC_SRC, cache=False).ptx
    assert ptxjit.compile_cuda(NVRTC_SRC).from_cache  # rewritten as a good entry


def test_nvrtc_cache_in_untrusted_directory_is_not_used(nvrtc, fresh_cache, cache_warnings):
    fresh_cache.chmod(0o777)
    try:
        with pytest.warns(ptxjit.PtxjitWarning, match="not using the cache directory"):
            ptxjit.compile_cuda(NVRTC_SRC)
        assert not ptxjit.compile_cuda(NVRTC_SRC).from_cache
        assert not nvrtc.exists()
    finally:
        fresh_cache.chmod(0o700)


def test_dump_dir_dumps_also_when_the_translation_is_cached(tmp_path, monkeypatch):
    """PTXJIT_DUMP_DIR writes IR and assembly even when the disk cache already holds the kernel."""
    monkeypatch.setenv("PTXJIT_CACHE_DIR", str(tmp_path / "cache"))
    src = (EXAMPLES / "demo_kernels.ptx").read_text()
    x = np.ones(256, np.float32)
    y = np.zeros(256, np.float32)
    ptxjit.Module(src).get_function("saxpy")(1, 256, (256, 2.0, x, y))  # fills the disk cache
    dump = tmp_path / "dump"
    monkeypatch.setenv("PTXJIT_DUMP_DIR", str(dump))
    ptxjit.Module(src).get_function("saxpy")(1, 256, (256, 2.0, x, y))
    assert {p.suffix for p in dump.iterdir()} >= {".ll", ".s", ".o"}
    np.testing.assert_array_equal(y, np.full(256, 4.0, np.float32))  # two launches of y = 2x + y
