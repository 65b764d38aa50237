"""ptxjit.config: every PTXJIT_* name in the sources and docs is declared there, docs/configuration.md is
its table, only config.py reads the variables, and the accessors parse as their callers expect."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from ptxjit import config

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "ptxjit"
DOCS = ROOT / "docs"
NAME = re.compile(r"PTXJIT_[A-Z0-9_]*[A-Z0-9]")
# a read of a PTXJIT_* variable spelled out: os.environ.get("PTXJIT_..."), os.environ["PTXJIT_..."],
# os.getenv / util.getenv("PTXJIT_..."), "PTXJIT_..." in os.environ, or a pre-encoded b"PTXJIT_..." key
DIRECT_READ = re.compile(r"""(environ(\.get)?\s*[\[(]|getenv\s*\()\s*["']PTXJIT_|\bb["']PTXJIT_"""
                         r"""|["']PTXJIT_\w+["']\s+(not\s+)?in\s+(os\.)?environ""")
# modules loaded by path, without the ptxjit package (ptxjit exec's sitecustomize): they read os.environ
LOADED_BY_PATH = {"cudart/static_runtime.py"}


def _files(root: Path, suffixes: tuple[str, ...]) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.suffix in suffixes and "__pycache__" not in p.parts)


def test_every_name_is_declared():
    declared = set(config.BY_NAME)
    assert len(declared) == len(config.VARS), "two records with the same name"
    missing: dict[str, list[str]] = {}
    for p in [*_files(SRC, (".py", ".c", ".h")), *_files(DOCS, (".md",)), ROOT / "README.md"]:
        for name in set(NAME.findall(p.read_text(encoding="utf-8"))) - declared:
            missing.setdefault(name, []).append(str(p.relative_to(ROOT)))
    assert not missing, f"PTXJIT_* names not declared in ptxjit.config: {missing}"


def test_records_are_complete():
    for v in config.VARS:
        assert v.name.startswith("PTXJIT_") and v.key == v.name.encode()
        assert v.kind in ("flag", "int", "float", "path", "choice", "text"), v
        assert v.values and v.default and v.meaning and v.reader and v.when, v
        assert v.once == v.when.startswith("once"), v


def test_docs_table_is_generated():
    text = (DOCS / "configuration.md").read_text(encoding="utf-8")
    table = "".join(line for line in text.splitlines(keepends=True) if line.startswith("|"))
    assert table == config.markdown_table(), "docs/configuration.md is stale: python -m ptxjit.config"


def test_only_config_reads_the_environment():
    found = []
    for p in _files(SRC, (".py",)):
        if p == SRC / "config.py" or p.relative_to(SRC).as_posix() in LOADED_BY_PATH:
            continue
        for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1):
            if DIRECT_READ.search(line):
                found.append(f"{p.relative_to(ROOT)}:{i}: {line.strip()}")
    assert not found, "PTXJIT_* read outside ptxjit.config:\n" + "\n".join(found)


def test_config_imports_only_util():
    text = (SRC / "config.py").read_text(encoding="utf-8")
    assert set(re.findall(r"^\s*(?:from|import)\s+(ptxjit[\w.]*)", text, re.M)) == {"ptxjit.util"}


def test_tiers(monkeypatch):
    monkeypatch.delenv("PTXJIT_TIERS", raising=False)
    assert config.tiers_enabled() is config.TIERS_DEFAULT_ON
    for off in ("0", "false", " OFF ", "no"):
        monkeypatch.setenv("PTXJIT_TIERS", off)
        assert config.tiers_enabled() is False
        assert config.tiers_enabled() is False  # the cached parse
    for on in ("1", "yes", "on"):
        monkeypatch.setenv("PTXJIT_TIERS", on)
        assert config.tiers_enabled() is True
    monkeypatch.setenv("PTXJIT_TIERS", " ")
    assert config.tiers_enabled() is config.TIERS_DEFAULT_ON


def test_workers(monkeypatch):
    monkeypatch.delenv("PTXJIT_WORKERS", raising=False)
    assert config.workers() == (os.cpu_count() or 1)
    monkeypatch.setenv("PTXJIT_WORKERS", "")
    assert config.workers() == (os.cpu_count() or 1)
    monkeypatch.setenv("PTXJIT_WORKERS", "3")
    assert config.workers() == 3
    for bad in ("0", "-2", "two"):
        monkeypatch.setenv("PTXJIT_WORKERS", bad)
        with pytest.raises(ValueError, match="PTXJIT_WORKERS must be a positive integer"):
            config.workers()


def test_timeout(monkeypatch):
    monkeypatch.delenv("PTXJIT_TIMEOUT", raising=False)
    assert config.timeout() is None
    monkeypatch.setenv("PTXJIT_TIMEOUT", "")
    assert config.timeout() is None
    monkeypatch.setenv("PTXJIT_TIMEOUT", "2.5")
    assert config.timeout() == 2.5
    for bad in ("0", "-1", "soon", "nan"):
        monkeypatch.setenv("PTXJIT_TIMEOUT", bad)
        with pytest.raises(ValueError, match="PTXJIT_TIMEOUT must be a positive number"):
            config.timeout()


def test_launch_checked(monkeypatch):
    monkeypatch.delenv("PTXJIT_UNCHECKED", raising=False)
    monkeypatch.delenv("PTXJIT_CHECKED", raising=False)
    assert config.launch_checked()
    monkeypatch.setenv("PTXJIT_UNCHECKED", "0")
    assert config.launch_checked()
    monkeypatch.setenv("PTXJIT_UNCHECKED", "")
    assert config.launch_checked()
    monkeypatch.setenv("PTXJIT_CHECKED", "off")
    assert not config.launch_checked()
    monkeypatch.setenv("PTXJIT_CHECKED", "1")
    monkeypatch.setenv("PTXJIT_UNCHECKED", "1")
    assert not config.launch_checked()  # PTXJIT_UNCHECKED wins


def test_flags_and_values(monkeypatch):
    monkeypatch.delenv("PTXJIT_FMAD", raising=False)
    assert config.fmad()
    monkeypatch.setenv("PTXJIT_FMAD", "")
    assert config.fmad()
    monkeypatch.setenv("PTXJIT_FMAD", "No")
    assert not config.fmad()
    for v, want in (("", False), ("0", False), ("1", True), ("yes", True)):
        monkeypatch.setenv("PTXJIT_PERF_MAP", v)
        assert config.perf_map() is want
    for v, want in ((" 0 ", None), ("", None), ("1", "1"), (" out.json ", "out.json")):
        monkeypatch.setenv("PTXJIT_STATS", v)
        assert config.stats() == want
    for v, want in (("5", 5), ("0", None), ("-3", None), ("many", None), (" 7 ", 7)):
        monkeypatch.setenv("PTXJIT_CHECK_PRINT_LIMIT", v)
        assert config.check_print_limit() == want
    for v, want in (("0", 0), ("4096", 4096), ("lots", 0)):
        monkeypatch.setenv("PTXJIT_TRACE_POOL", v)
        assert config.trace_pool_bytes() == want
    monkeypatch.delenv("PTXJIT_TRACE_POOL")
    assert config.trace_pool_bytes() >= 0
    monkeypatch.setenv("PTXJIT_RAY_ACTORS", "x")
    with pytest.raises(ValueError):
        config.ray_actors()
    monkeypatch.delenv("PTXJIT_RAY_ACTORS")
    assert config.ray_actors() is None
    monkeypatch.setenv("PTXJIT_DEVICE", "  SM_80 ")
    assert config.DEVICE.text() == "SM_80" and config.DEVICE.raw() == "  SM_80 "
    monkeypatch.delenv("PTXJIT_DEVICE")
    assert config.DEVICE.text() == "" and config.DEVICE.raw() is None
