"""Initialization, handles and contexts.

CUDA's objects reach the program as opaque pointers (CUcontext, CUmodule, CUfunction, CUstream, CUevent,
...).  Here each is an integer from one counter, mapped to its Python object in a table per kind, so that a
handle of the wrong kind, a destroyed one or garbage is recognized and answered with CUDA's error code
instead of being followed.

Contexts: the primary context (retained, reference counted) and created ones; each thread has its own stack
of current contexts.  A kernel fault is sticky on its context, as on a GPU: once a launch made an illegal
access, every later call in that context returns the same error.
"""

from __future__ import annotations

import itertools
import threading
from dataclasses import dataclass, field

from ptxjit.driver import errors as E
from ptxjit.driver.device import DeviceModel, selected_model
from ptxjit.driver.errors import CudaError

_counter = itertools.count(1)


class HandleTable:
    """Handles of one kind: small distinct integers (16-byte steps, so they look like aligned pointers)."""

    def __init__(self, kind: str, error: int = E.INVALID_HANDLE) -> None:
        self.kind = kind
        self.error = error
        self._objects: dict[int, object] = {}

    def new(self, obj) -> int:
        h = 0x7A000000 + 16 * next(_counter)
        self._objects[h] = obj
        return h

    def alias(self, handle: int, obj) -> None:
        """Make an existing handle of another table valid in this one too."""
        self._objects[handle] = obj

    def get(self, handle: int):
        obj = self._objects.get(handle)
        if obj is None:
            raise CudaError(self.error, f"{handle:#x} is not a live {self.kind} handle"
                            if handle else f"NULL {self.kind} handle")
        return obj

    def drop(self, handle: int) -> object:
        obj = self.get(handle)
        del self._objects[handle]
        return obj

    def items(self):
        return list(self._objects.items())


@dataclass
class Context:
    """A CUDA context: its handle, flags, limits, and what was made in it."""

    handle: int
    flags: int = 0
    primary: bool = False
    alive: bool = True
    sticky: int = 0  # a sticky error code, 0 while healthy
    sticky_report: str = ""
    limits: dict[int, int] = field(default_factory=dict)
    cache_config: int = 0
    shared_config: int = 0


class Driver:
    """The process's driver state: one device, its primary context, the handle tables."""

    def __init__(self) -> None:
        self.initialized = False
        self.model: DeviceModel | None = None
        self.lock = threading.RLock()
        self.contexts = HandleTable("context", E.INVALID_CONTEXT)
        self.modules = HandleTable("module")
        self.functions = HandleTable("function")
        self.libraries = HandleTable("library")
        self.kernels = HandleTable("kernel")
        self.streams = HandleTable("stream")
        self.events = HandleTable("event")
        self.links = HandleTable("link state")
        self.pools = HandleTable("memory pool")
        self.graphs = HandleTable("graph")
        self.graph_execs = HandleTable("graph exec")
        self.graph_nodes = HandleTable("graph node")
        self.user_objects = HandleTable("user object")
        self.primary: Context | None = None
        self.primary_refs = 0
        self.primary_flags = 0
        self._tls = threading.local()

    # ------------------------------------------------------------------ init and device
    def init(self, flags: int) -> None:
        if flags != 0:
            raise CudaError(E.INVALID_VALUE, f"cuInit: Flags must be 0, got {flags}")
        with self.lock:
            if not self.initialized:
                try:
                    self.model = selected_model()
                except ValueError as exc:
                    raise CudaError(E.INVALID_DEVICE, str(exc)) from None
                self.initialized = True

    def require_init(self) -> DeviceModel:
        if not self.initialized:
            raise CudaError(E.NOT_INITIALIZED, "cuInit(0) has not been called")
        return self.model  # type: ignore[return-value]

    def device(self, ordinal: int) -> DeviceModel:
        model = self.require_init()
        if ordinal != 0:
            raise CudaError(E.INVALID_DEVICE, f"device {ordinal}: ptxjit has one device, ordinal 0")
        return model

    # ------------------------------------------------------------------ contexts
    def _stack(self) -> list[Context]:
        st = getattr(self._tls, "stack", None)
        if st is None:
            st = self._tls.stack = []
        return st

    def retain_primary(self, ordinal: int) -> Context:
        self.device(ordinal)
        with self.lock:
            if self.primary is None or not self.primary.alive:
                ctx = Context(0, self.primary_flags, primary=True)
                ctx.handle = self.contexts.new(ctx)
                self.primary = ctx
            self.primary_refs += 1
            return self.primary

    def release_primary(self, ordinal: int) -> None:
        self.device(ordinal)
        with self.lock:
            if self.primary_refs <= 0:
                raise CudaError(E.INVALID_CONTEXT, "cuDevicePrimaryCtxRelease: the primary context is not retained")
            self.primary_refs -= 1

    def reset_primary(self, ordinal: int) -> None:
        self.device(ordinal)
        with self.lock:
            if self.primary is not None:
                self.destroy(self.primary)
                self.primary = None
                self.primary_refs = 0

    def create(self, flags: int, ordinal: int) -> Context:
        self.device(ordinal)
        ctx = Context(0, flags)
        ctx.handle = self.contexts.new(ctx)
        self._stack().append(ctx)
        return ctx

    def destroy(self, ctx: Context) -> None:
        from ptxjit.driver import modules, streams
        from ptxjit.driver.memory import REGISTRY

        streams.drain_context(self, ctx)
        ctx.alive = False
        modules.unload_context(self, ctx)
        for a in REGISTRY.of_context(ctx):
            REGISTRY.remove(a.base, (a.kind,), "cuCtxDestroy")
        try:
            self.contexts.drop(ctx.handle)
        except CudaError:
            pass
        for st in [self._stack()]:
            while ctx in st:
                st.remove(ctx)

    def context(self, handle: int) -> Context:
        ctx = self.contexts.get(handle)
        if not ctx.alive:
            raise CudaError(E.INVALID_CONTEXT, f"context {handle:#x} was destroyed")
        return ctx

    def current(self, required: bool = True) -> Context | None:
        """The calling thread's current context; CUDA_ERROR_INVALID_CONTEXT without one (when `required`).
        A sticky error of that context is raised here, so every call after a fault returns it."""
        self.require_init()
        st = self._stack()
        ctx = st[-1] if st else None
        if ctx is None or not ctx.alive:
            if not required:
                return None
            raise CudaError(E.INVALID_CONTEXT, "no current context: call cuCtxCreate, cuCtxSetCurrent or "
                                               "cuDevicePrimaryCtxRetain + cuCtxSetCurrent first")
        if ctx.sticky:
            raise CudaError(ctx.sticky, "the context is unusable after an earlier kernel error: "
                            + ctx.sticky_report.splitlines()[0] if ctx.sticky_report else "an earlier kernel error")
        return ctx

    def set_current(self, ctx: Context | None) -> None:
        st = self._stack()
        if st:
            st.pop()
        if ctx is not None:
            st.append(ctx)

    def push(self, ctx: Context) -> None:
        self._stack().append(ctx)

    def pop(self) -> Context:
        st = self._stack()
        if not st:
            raise CudaError(E.INVALID_CONTEXT, "cuCtxPopCurrent: the thread's context stack is empty")
        return st.pop()

    def top(self) -> Context | None:
        st = self._stack()
        return st[-1] if st else None


DRIVER = Driver()
