"""Test-session setup: keep ptxjit's on-disk caches inside a temporary directory."""

from __future__ import annotations

import os
import tempfile

# set before any test imports ptxjit's cache users; tests needing their own directory monkeypatch it
os.environ.setdefault("PTXJIT_CACHE_DIR", tempfile.mkdtemp(prefix="ptxjit-test-cache-"))
