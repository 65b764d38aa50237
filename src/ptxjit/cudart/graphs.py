"""CUDA graphs in the runtime API: stream capture and explicitly built graphs, on the driver's graphs.

A graph, its nodes and an executable graph are the driver's objects (driver/graphs.py), so their handles
are the ones cuGraph* takes.  What the runtime adds:

- **stream capture across streams**, as the CUDA samples use it: while a stream captures, an event recorded
  in it remembers the captured work so far, and a stream that waits for that event joins the capture (a
  fork); the origin stream waiting for an event of a joined stream merges its work back (a join).
  `cudaStreamEndCapture` on the origin ends the capture of every joined stream, and fails with
  cudaErrorStreamCaptureUnjoined if some captured work is not an ancestor of the origin's last work;
- calls that may not run while a stream captures (synchronizing or querying a capturing stream) fail with
  cudaErrorStreamCaptureUnsupported and invalidate the capture: its end is cudaErrorStreamCaptureInvalidated;
- node kinds by the runtime's parameter structures (cudaKernelNodeParams names a kernel by its host stub,
  cudaMemcpy3DParms, cudaMemsetParams), edges added after the nodes (`cudaGraphAddDependencies`), and an
  instantiation that orders the nodes topologically (refusing a cycle).

Launching an executable graph puts its nodes on the stream in that order: the stream runs them one after
another, which is one of the orders a GPU may choose.
"""

from __future__ import annotations

from ptxjit.cudart import base as B
from ptxjit.cudart import errors as RE
from ptxjit.cudart import registry as R
from ptxjit.cudart.errors import RuntimeError_
from ptxjit.driver import capture as _capture
from ptxjit.driver import graphs as G
from ptxjit.driver import launch as _launch
from ptxjit.driver import memory as M
from ptxjit.driver import streams as _streams
from ptxjit.driver.context import DRIVER

entry = B.entry

MemsetWork = G.MemsetWork


# ---------------------------------------------------------------------------- stream capture
@entry
def cudaStreamBeginCapture(stream, mode):
    B.ctx()
    v = B.h(stream)
    if v not in _capture.LEGACY_HANDLES:
        _streams.synchronized(DRIVER.top(), DRIVER.streams.get(v).stream.synchronize)  # earlier work runs first
    _capture.begin(DRIVER, v, mode, "cudaStreamBeginCapture")


@entry
def cudaStreamBeginCaptureToGraph(stream, graph, deps, edges, n, mode):
    B.ctx()
    v = B.h(stream)
    g = _graph(graph)
    nodes = [DRIVER.graph_nodes.get(h) for h in _deps(deps, n)]
    if any(node.graph is not g for node in nodes):
        raise RuntimeError_(RE.INVALID_VALUE, "cudaStreamBeginCaptureToGraph: a dependency is not in the graph")
    if v not in _capture.LEGACY_HANDLES:
        _streams.synchronized(DRIVER.top(), DRIVER.streams.get(v).stream.synchronize)
    _capture.begin(DRIVER, v, mode, "cudaStreamBeginCaptureToGraph", graph=g, deps=nodes)


@entry
def cudaStreamEndCapture(stream, out):
    B.ctx()
    B.out(out, "pGraph")[0] = B.ffi.NULL
    g = _capture.end(DRIVER, B.h(stream), "cudaStreamEndCapture")
    out[0] = B.ffi.cast("void *", g.handle)


@entry
def cudaStreamIsCapturing(stream, out):
    B.ctx()
    v = B.h(stream)
    _streams.resolve(DRIVER, v)
    B.out(out, "pCaptureStatus")[0] = _capture.status(v)


@entry
def cudaStreamGetCaptureInfo(stream, status, ident, graph, deps, edges, ndeps):
    B.ctx()
    v = B.h(stream)
    _streams.resolve(DRIVER, v)
    B.out(status, "captureStatus_out")[0] = _capture.status(v)
    cap = _capture.of(v)
    ffi = B.ffi
    tail = _capture.dependencies(DRIVER, v)
    if ident != ffi.NULL:
        ident[0] = cap.ident if cap is not None else 0
    if graph != ffi.NULL:
        graph[0] = ffi.cast("void *", cap.graph.handle) if cap is not None else ffi.NULL
    if deps != ffi.NULL:
        arr = ffi.new("void *[]", [ffi.cast("void *", n.handle) for n in tail] or [ffi.NULL])
        _keep[v] = arr  # valid until the next call for the stream, as CUDA's
        deps[0] = arr if tail else ffi.NULL
    if edges != ffi.NULL:
        edges[0] = ffi.NULL
    if ndeps != ffi.NULL:
        ndeps[0] = len(tail)


_keep: dict[int, object] = {}


@entry
def cudaStreamUpdateCaptureDependencies(stream, deps, edges, n, flags):
    B.ctx()
    nodes = [DRIVER.graph_nodes.get(h) for h in _deps(deps, n)]
    _capture.update_dependencies(DRIVER, B.h(stream), nodes, flags, "cudaStreamUpdateCaptureDependencies")


@entry
def cudaThreadExchangeStreamCaptureMode(mode):
    p = B.out(mode, "mode")
    p[0] = _capture.exchange_mode(p[0], "cudaThreadExchangeStreamCaptureMode")


# ---------------------------------------------------------------------------- graphs and nodes
def _graph(h) -> G.Graph:
    return DRIVER.graphs.get(B.h(h))


def _drop_graph(g: G.Graph) -> None:
    _capture.drop_graph(DRIVER, g)


@entry
def cudaGraphCreate(out, flags):
    B.ctx()
    B.out(out, "pGraph")
    if flags:
        raise RuntimeError_(RE.INVALID_VALUE, f"cudaGraphCreate: flags must be 0, not {flags}")
    g = G.Graph()
    g.handle = DRIVER.graphs.new(g)
    out[0] = B.ffi.cast("void *", g.handle)


@entry
def cudaGraphDestroy(graph):
    g = _graph(graph)
    _drop_graph(g)
    G.release_user_refs(DRIVER, g.user_refs)


def _deps(deps, n: int) -> list[int]:
    if n and deps == B.ffi.NULL:
        raise RuntimeError_(RE.INVALID_VALUE, f"{n} dependencies but pDependencies is NULL")
    hs = [B.h(deps[i]) for i in range(n)]
    if len(set(hs)) != len(hs):  # CUDA refuses a dependency named twice
        raise RuntimeError_(RE.INVALID_VALUE, "a dependency is listed twice")
    return hs


def _add(out, graph, deps, n, work) -> None:
    B.out(out, "pGraphNode")
    g = _graph(graph)
    node = g.add(DRIVER, work, _deps(deps, n))
    out[0] = B.ffi.cast("void *", node.handle)


def kernel_work(p) -> G.KernelNode:
    """A driver kernel node from a cudaKernelNodeParams (its arguments copied now, as CUDA copies them)."""
    p = B.out(p, "pNodeParams")
    f = R.function_of(B.h(p.func), B.ctx())
    grid, block = (p.gridDim.x, p.gridDim.y, p.gridDim.z), (p.blockDim.x, p.blockDim.y, p.blockDim.z)
    if min(grid) < 1 or min(block) < 1:
        raise RuntimeError_(RE.INVALID_VALUE, f"kernel node '{f.name}': grid {grid} and block {block} must be >= 1")
    raw = B.params_of(f, p.kernelParams, p.extra, "kernel node")
    B.check_dynamic_shared(f, p.sharedMemBytes)
    return G.KernelNode(f, grid, block, p.sharedMemBytes, raw)


@entry
def cudaGraphAddKernelNode(out, graph, deps, n, params):
    _add(out, graph, deps, n, kernel_work(params))


@entry
def cudaGraphKernelNodeGetParams(node, params):
    work = _node(node).work
    if not isinstance(work, G.KernelNode):
        raise RuntimeError_(RE.INVALID_VALUE, "cudaGraphKernelNodeGetParams: not a kernel node")
    p = B.out(params, "pNodeParams")
    stub = next((k.host for k in R.KERNELS.values() if k.name == work.function.name), 0)
    p.func = B.ffi.cast("void *", stub)
    p.gridDim.x, p.gridDim.y, p.gridDim.z = work.grid
    p.blockDim.x, p.blockDim.y, p.blockDim.z = work.block
    p.sharedMemBytes = work.shared_mem
    p.kernelParams = B.ffi.NULL  # the node keeps the arguments' bytes, not the caller's pointers
    p.extra = B.ffi.NULL


@entry
def cudaGraphKernelNodeSetParams(node, params):
    n = _node(node)
    if not isinstance(n.work, G.KernelNode):
        raise RuntimeError_(RE.INVALID_VALUE, "cudaGraphKernelNodeSetParams: not a kernel node")
    n.work = kernel_work(params)


def copy_work(p) -> G.Copy3D:
    """A driver copy from a cudaMemcpy3DParms between pitched pointers (CUDA arrays are refused)."""
    p = B.out(p, "pCopyParams")
    B.kind(p.kind, "memcpy node")
    if p.srcArray != B.ffi.NULL or p.dstArray != B.ffi.NULL:
        raise RuntimeError_(RE.NOT_SUPPORTED, "memcpy node: copies to or from a CUDA array are not supported in "
                                              "graphs; copy between pitched pointers")
    e = p.extent
    w, h, d = e.width, max(1, e.height), max(1, e.depth)
    sp, dp = p.srcPtr.pitch or w, p.dstPtr.pitch or w
    sh, dh = p.srcPtr.ysize or h, p.dstPtr.ysize or h
    if w and (sp < w or dp < w):
        raise RuntimeError_(RE.INVALID_VALUE, f"memcpy node: a pitch ({sp}, {dp}) is smaller than the width {w}")
    src = B.h(p.srcPtr.ptr) + (p.srcPos.z * sh + p.srcPos.y) * sp + p.srcPos.x
    dst = B.h(p.dstPtr.ptr) + (p.dstPos.z * dh + p.dstPos.y) * dp + p.dstPos.x
    M.REGISTRY.check_range(src, ((d - 1) * sh + (h - 1)) * sp + w, "memcpy node source")
    M.REGISTRY.check_range(dst, ((d - 1) * dh + (h - 1)) * dp + w, "memcpy node destination")
    return G.Copy3D(dst, dp, dh, src, sp, sh, w, h, d)


@entry
def cudaGraphAddMemcpyNode(out, graph, deps, n, params):
    B.ctx()
    _add(out, graph, deps, n, copy_work(params))


@entry
def cudaGraphAddMemcpyNode1D(out, graph, deps, n, dst, src, count, kind):
    B.ctx()
    B.kind(kind, "cudaGraphAddMemcpyNode1D")
    d, s = B.h(dst), B.h(src)
    M.REGISTRY.check_range(s, count, "memcpy node source")
    M.REGISTRY.check_range(d, count, "memcpy node destination")
    _add(out, graph, deps, n, G.Copy3D(d, count, 1, s, count, 1, count, 1, 1))


def memset_work(p) -> MemsetWork:
    p = B.out(p, "pMemsetParams")
    size = p.elementSize
    if size not in (1, 2, 4):
        raise RuntimeError_(RE.INVALID_VALUE, f"memset node: elementSize {size} (it must be 1, 2 or 4)")
    height = max(1, p.height)
    pitch = p.pitch if height > 1 else p.width * size
    if height > 1 and pitch < p.width * size:
        raise RuntimeError_(RE.INVALID_VALUE, f"memset node: pitch {pitch} < width {p.width} x {size} bytes")
    d = B.h(p.dst)
    M.REGISTRY.check_range(d, pitch * (height - 1) + p.width * size, "memset node")
    return MemsetWork(d, pitch, p.value & ((1 << (8 * size)) - 1), size, p.width, height)


@entry
def cudaGraphAddMemsetNode(out, graph, deps, n, params):
    B.ctx()
    _add(out, graph, deps, n, memset_work(params))


@entry
def cudaGraphAddHostNode(out, graph, deps, n, params):
    p = B.out(params, "pNodeParams")
    fn, user = p.fn, p.userData
    if fn == B.ffi.NULL:
        raise RuntimeError_(RE.INVALID_VALUE, "cudaGraphAddHostNode: fn is NULL")
    _add(out, graph, deps, n, G.HostNode(lambda: fn(user)))


@entry
def cudaGraphAddEmptyNode(out, graph, deps, n):
    _add(out, graph, deps, n, None)


def _node(h) -> G.Node:
    return DRIVER.graph_nodes.get(B.h(h))


@entry
def cudaGraphNodeGetType(node, out):
    B.out(out, "pType")[0] = G.kind_of(_node(node).work)


def _list(nodes, out, count, what: str) -> None:
    B.out(count, what)
    if out != B.ffi.NULL:
        for i, node in enumerate(nodes[:count[0]]):
            out[i] = B.ffi.cast("void *", node.handle)
        count[0] = min(count[0], len(nodes))
    else:
        count[0] = len(nodes)


@entry
def cudaGraphGetNodes(graph, nodes, count):
    _list(_graph(graph).nodes, nodes, count, "numNodes")


@entry
def cudaGraphGetRootNodes(graph, nodes, count):
    _list([n for n in _graph(graph).nodes if not n.deps], nodes, count, "pNumRootNodes")


@entry
def cudaGraphAddDependencies(graph, from_, to, edge_data, n):
    g = _graph(graph)
    if n and (from_ == B.ffi.NULL or to == B.ffi.NULL):
        raise RuntimeError_(RE.INVALID_VALUE, "cudaGraphAddDependencies: from or to is NULL")
    if edge_data != B.ffi.NULL:
        raise RuntimeError_(RE.NOT_SUPPORTED, "cudaGraphAddDependencies: edge data is not supported")
    G.add_edges(DRIVER, g, [(B.h(from_[i]), B.h(to[i])) for i in range(n)], "cudaGraphAddDependencies")


@entry
def cudaGraphDestroyNode(node):
    G.destroy_node(DRIVER, _node(node))


# ---------------------------------------------------------------------------- executable graphs
def _instantiate(out, graph, flags: int) -> None:
    B.ctx()
    B.out(out, "pGraphExec")
    if flags & ~0xF:  # AutoFreeOnLaunch, Upload, DeviceLaunch, UseNodePriority
        raise RuntimeError_(RE.INVALID_VALUE, f"cudaGraphInstantiate: unknown flags {flags:#x}")
    ex = G.instantiate(DRIVER, _graph(graph))
    out[0] = B.ffi.cast("void *", ex.handle)


@entry
def cudaGraphInstantiate(out, graph, flags):
    _instantiate(out, graph, flags)


@entry
def cudaGraphInstantiateWithFlags(out, graph, flags):
    _instantiate(out, graph, flags)


@entry
def cudaGraphExecDestroy(ex):
    G.release_user_refs(DRIVER, DRIVER.graph_execs.drop(B.h(ex)).user_refs)


@entry
def cudaGraphExecKernelNodeSetParams(ex, node, params):
    e = DRIVER.graph_execs.get(B.h(ex))
    h = B.h(node)
    if not isinstance(e.work.get(h), G.KernelNode):
        raise RuntimeError_(RE.INVALID_VALUE, f"cudaGraphExecKernelNodeSetParams: {h:#x} is not a kernel node of "
                                              "this executable graph")
    work = kernel_work(params)
    if work.function is not e.work[h].function:  # CUDA lets the arguments and the shape change, not the kernel
        raise RuntimeError_(RE.INVALID_VALUE, "cudaGraphExecKernelNodeSetParams: the node's kernel cannot change")
    e.work[h] = work


@entry
def cudaGraphUpload(ex, stream):
    B.ctx()
    DRIVER.graph_execs.get(B.h(ex))
    _streams.resolve(DRIVER, B.h(stream))  # nothing to upload: device memory is host memory


@entry
def cudaGraphLaunch(ex, stream):
    ctx = B.ctx()
    e = DRIVER.graph_execs.get(B.h(ex))
    v = B.h(stream)
    if _capture.of(v) is not None:  # a graph launched into a capture becomes its nodes there
        for node in e.order:
            if e.work[node.handle] is not None:
                _capture.record(DRIVER, v, e.work[node.handle])
        return
    s = _streams.resolve(DRIVER, v)
    from ptxjit.cudart import textures

    for node in e.order:
        work = e.work[node.handle]
        if isinstance(work, G.KernelNode):
            textures.before_launch(work.function, work.params, s)
            _launch.launch(DRIVER, ctx, work.function, work.grid, work.block, work.shared_mem, s, work.params)
        elif isinstance(work, G.Copy3D):
            _streams.enqueue_host(s, lambda _, w=work: w.run())
        elif isinstance(work, G.HostNode):
            _streams.enqueue_host(s, lambda _, w=work: w.call())
