"""Run by every Python that `ptxjit exec` starts (this folder is first on its PYTHONPATH).

It redirects the statically linked CUDA runtime of extension modules (CuPy's) to ptxjit's libcudart.so.13
(ptxjit/cudart/static_runtime.py, loaded by path: the ptxjit package itself is not imported), then runs the
sitecustomize this one hides, if there is one.
"""

import importlib.machinery
import importlib.util
import os
import sys

_here = os.path.dirname(os.path.abspath(__file__))


def _install() -> None:
    path = os.path.join(os.path.dirname(_here), "static_runtime.py")
    spec = importlib.util.spec_from_file_location("_ptxjit_static_runtime", path)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    module.install()


def _chain() -> None:
    """The next sitecustomize on sys.path (a distribution's or the user's), as if this one were not there."""
    rest = [p for p in sys.path if os.path.abspath(p or os.curdir) != _here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)


# CuPy under ptxjit: kernels handed to the driver as PTX (ptxjit translates PTX, not cubins), and reductions
# on CuPy's own kernels (its CUB accelerator's kernels are SASS only); a value the user set wins
os.environ.setdefault("CUPY_COMPILE_WITH_PTX", "1")
os.environ.setdefault("CUPY_ACCELERATORS", "")

try:
    _install()
except Exception as exc:  # noqa: BLE001 - Python starts regardless; CuPy's CUDA calls would then fail
    sys.stderr.write(f"ptxjit: could not install the static CUDA runtime redirect: {exc}\n")
_chain()
