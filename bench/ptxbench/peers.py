"""The implementations the harness compares: ptxjit (the committed PTX), C/OpenMP (compiled at run
time with gcc), pocl through pyopencl, and NumPy.  Each loader raises PeerUnavailable with a reason
when its peer cannot be used; the harness records the reason and carries on."""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent
KERNELS = BENCH / "kernels"
PTX_DIR = KERNELS / "ptx"
NATIVE_DIR = BENCH / "native"

GCC_FLAGS = ["-O3", "-march=native", "-fopenmp", "-shared", "-fPIC"]


class PeerUnavailable(Exception):
    """A peer (or one of its kernels) cannot be built or run; the message says why."""


def quiet_runtimes() -> None:
    """Make the OpenMP and OpenBLAS thread pools sleep, not spin, once a parallel region ends, so one
    implementation's idle workers do not steal the cores from the next one in an interleaved run.
    Must run before libgomp / NumPy are loaded."""
    os.environ.setdefault("OMP_WAIT_POLICY", "passive")
    os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")


# ------------------------------------------------------------------------------------------ ptxjit
class PtxjitPeer:
    name = "ptxjit"

    def __init__(self) -> None:
        try:
            import ptxjit
        except Exception as e:  # noqa: BLE001 - any import failure means the peer is unavailable
            raise PeerUnavailable(f"cannot import ptxjit: {e}") from e
        self.ptxjit = ptxjit
        self._modules: dict[str, object] = {}

    def kernel(self, kernel: str, entry: str | None = None):
        """Kernel `entry` (default: `kernel`) of kernels/ptx/`kernel`.ptx."""
        mod = self._modules.get(kernel)
        if mod is None:
            path = PTX_DIR / f"{kernel}.ptx"
            try:
                mod = self.ptxjit.Module.from_file(path)
            except Exception as e:  # noqa: BLE001
                raise PeerUnavailable(f"ptxjit cannot load {path.name}: {type(e).__name__}: {e}") from e
            self._modules[kernel] = mod
        return mod.get_function(entry or kernel)


class _LaunchWith:
    """A kernel whose launches get extra keyword arguments (a ptxjit variant's options)."""

    def __init__(self, kernel, options: dict) -> None:
        self._kernel, self._options = kernel, options

    def __call__(self, *args, **kwargs):
        return self._kernel(*args, **{**self._options, **kwargs})

    def __getattr__(self, name):
        return getattr(self._kernel, name)


class PtxjitVariant(PtxjitPeer):
    """ptxjit launched with other options (e.g. `unchecked=True`): timed beside the default ptxjit peer, so
    the cost of a feature is a ratio measured in one interleaved run."""

    def __init__(self, name: str, options: dict) -> None:
        super().__init__()
        self.name, self.options = name, options

    def kernel(self, kernel: str, entry: str | None = None):
        return _LaunchWith(super().kernel(kernel, entry), self.options)


def settle_tiers(runs: dict, launches: int = 12, quiet: int = 8, most: int = 80) -> None:
    """Bring ptxjit's launches in `runs` to their steady state before they are timed: with tiers on (the
    default) a kernel starts on tier 0, builds tier 1 in the background from its second launch, races
    the specialized code against the plain code over 10 launches, then counts one launch and rebuilds
    with the branch weights it gives (ptxjit/tiers/state.py).  Timing before that measures tier 0's
    generic code and a core shared with LLVM (scan: 550 ms instead of 22 ms in a quick run).  Each round
    launches every run once and waits for the builds it started; at least `launches` rounds, then until
    `quiet` rounds in a row started no build (at most `most` rounds)."""
    try:
        from ptxjit import tiers
        from ptxjit.tiers import state
    except ImportError:
        return
    if not runs or not tiers.enabled():
        return
    calm = 0
    for k in range(most):
        for fn in runs.values():
            fn()
        started = list(state._builders)
        for th in started:
            th.join(timeout=900)
        calm = 0 if started else calm + 1
        if k + 1 >= launches and calm >= quiet:
            return


# ptxjit variants the harness times beside ptxjit: peer name -> launch options
PTXJIT_VARIANTS = {"ptxjit_unchecked": {"unchecked": True}}  # the opt-out of default bounds checks


# ------------------------------------------------------------------------------------- C / OpenMP
def gcc_path() -> str | None:
    return shutil.which(os.environ.get("CC", "gcc")) or shutil.which("gcc")


class NativePeer:
    """Each bench/native/NAME.c is compiled to its own shared library in a temporary directory (in
    parallel), so one that fails to build only loses that kernel."""

    name = "native_c"

    def __init__(self, names: list[str] | None = None) -> None:
        self.gcc = gcc_path()
        if self.gcc is None:
            raise PeerUnavailable("gcc not found")
        self.tmp = tempfile.TemporaryDirectory(prefix="ptxjit-bench-native-")
        self.libs: dict[str, ctypes.CDLL] = {}
        self.errors: dict[str, str] = {}
        sources = sorted(NATIVE_DIR.glob("*.c"))
        if names is not None:
            sources = [s for s in sources if s.stem in names]
        t0 = time.perf_counter()
        with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 1)) as ex:
            results = list(ex.map(self._compile, sources))
        self.compile_s = time.perf_counter() - t0
        for src, (so, err) in zip(sources, results, strict=True):
            if err:
                self.errors[src.stem] = err
                continue
            try:
                self.libs[src.stem] = ctypes.CDLL(str(so))
            except OSError as e:
                self.errors[src.stem] = f"cannot load {so.name}: {e}"

    def _compile(self, src: Path) -> tuple[Path, str | None]:
        so = Path(self.tmp.name) / f"lib{src.stem}.so"
        cmd = [self.gcc, *GCC_FLAGS, str(src), "-o", str(so), "-lm"]
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            return so, f"gcc failed ({' '.join(cmd)}): {p.stderr.strip()[-500:]}"
        return so, None

    def function(self, kernel: str, argtypes: list, restype=None, symbol: str | None = None):
        """The C function `symbol` (default: `kernel`) of native/`kernel`.c."""
        lib = self.libs.get(kernel)
        if lib is None:
            raise PeerUnavailable(self.errors.get(kernel, f"no native/{kernel}.c"))
        fn = getattr(lib, symbol or kernel)
        fn.argtypes = argtypes
        fn.restype = restype
        return fn


# ----------------------------------------------------------------------------------- pocl / OpenCL
class OpenCLPeer:
    name = "pocl"

    def __init__(self) -> None:
        try:
            import pyopencl as cl
        except Exception as e:  # noqa: BLE001
            raise PeerUnavailable(f"cannot import pyopencl: {e}") from e
        self.cl = cl
        devices = []
        try:
            for p in cl.get_platforms():
                if "portable" in p.name.lower() or "pocl" in p.name.lower():
                    devices += p.get_devices(device_type=cl.device_type.CPU)
        except Exception as e:  # noqa: BLE001
            raise PeerUnavailable(f"no OpenCL platform: {e}") from e
        if not devices:
            raise PeerUnavailable("no pocl CPU device found")
        self.device = devices[0]
        self.ctx = cl.Context([self.device])
        self.queue = cl.CommandQueue(self.ctx)
        self._programs: dict[str, object] = {}
        self.build_s: dict[str, float] = {}

    def kernel(self, kernel: str, entry: str | None = None):
        prg = self._programs.get(kernel)
        if prg is None:
            src = (KERNELS / f"{kernel}.cl").read_text()
            t0 = time.perf_counter()
            try:
                prg = self.cl.Program(self.ctx, src).build()
            except Exception as e:  # noqa: BLE001
                raise PeerUnavailable(f"pocl build of {kernel}.cl failed: {str(e)[-500:]}") from e
            self.build_s[kernel] = time.perf_counter() - t0
            self._programs[kernel] = prg
        return self.cl.Kernel(prg, entry or kernel)

    def buffer(self, arr):
        mf = self.cl.mem_flags
        return self.cl.Buffer(self.ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=arr)

    def launch(self, kern, gsize: tuple, lsize: tuple | None) -> None:
        self.cl.enqueue_nd_range_kernel(self.queue, kern, gsize, lsize)
        self.queue.finish()

    def fetch(self, arr, buf) -> None:
        self.cl.enqueue_copy(self.queue, arr, buf)
        self.queue.finish()
