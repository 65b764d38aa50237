"""Explicit graphs (cuGraph*): nodes recorded with their parameters, instantiated, launched on a stream.

A kernel node keeps a copy of its parameter bytes (CUDA copies `kernelParams` when the node is added or set),
a memcpy node its 3-D copy.  cuGraphLaunch puts an executable graph's nodes on the stream in an order that
respects every dependency (a topological order: the stream then runs them one after another, which is one
of the orders a GPU may choose), so a graph costs what its launches cost, without re-reading parameters.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ptxjit.driver import errors as E
from ptxjit.driver import memory as M
from ptxjit.driver.errors import CudaError


@dataclass
class KernelNode:
    function: object
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared_mem: int
    params: bytes


@dataclass
class Copy3D:
    """A CUDA_MEMCPY3D between host/device memory: `depth` slices of `height` rows of `width` bytes."""

    dst: int
    dst_pitch: int
    dst_height: int
    src: int
    src_pitch: int
    src_height: int
    width: int
    height: int
    depth: int

    def run(self) -> None:
        for z in range(self.depth):
            for y in range(self.height):
                M.move(self.dst + (z * self.dst_height + y) * self.dst_pitch,
                       self.src + (z * self.src_height + y) * self.src_pitch, self.width)


@dataclass
class HostNode:
    call: object  # () -> None


class MemsetWork(HostNode):
    """A memset node: host work with its parameters kept (the node's type tells it from a host node)."""

    def __init__(self, dst: int, pitch: int, value: int, size: int, width: int, height: int) -> None:
        super().__init__(lambda: M.fill(dst, value, size, width, "memset node", pitch, height))
        self.dst, self.pitch, self.value, self.size, self.width, self.height = dst, pitch, value, size, width, height


# CUgraphNodeType / cudaGraphNodeType
NODE_KERNEL, NODE_MEMCPY, NODE_MEMSET, NODE_HOST, NODE_GRAPH, NODE_EMPTY = 0, 1, 2, 3, 4, 5


def kind_of(work) -> int:
    if isinstance(work, KernelNode):
        return NODE_KERNEL
    if isinstance(work, Copy3D):
        return NODE_MEMCPY
    if isinstance(work, MemsetWork):
        return NODE_MEMSET
    if isinstance(work, HostNode):
        return NODE_HOST
    return NODE_EMPTY


@dataclass
class Node:
    handle: int
    graph: Graph
    work: object  # KernelNode, Copy3D, HostNode or None (an empty node)
    deps: list[Node] = field(default_factory=list)


@dataclass
class Graph:
    handle: int = 0
    nodes: list[Node] = field(default_factory=list)
    user_refs: dict[int, int] = field(default_factory=dict)  # user object handle -> references the graph owns

    def add(self, driver, work, deps: list[int]) -> Node:
        parents = []
        for h in deps:
            n = driver.graph_nodes.get(h)
            if n.graph is not self:
                raise CudaError(E.INVALID_VALUE, f"dependency {h:#x} is a node of another graph")
            parents.append(n)
        node = Node(0, self, work, parents)
        node.handle = driver.graph_nodes.new(node)
        self.nodes.append(node)
        return node


@dataclass
class GraphExec:
    handle: int
    order: list[Node]  # topological
    work: dict[int, object]  # node handle -> its (settable) work in this instance
    user_refs: dict[int, int] = field(default_factory=dict)  # cloned from the graph's at instantiation


def topological(g: Graph) -> list[Node]:
    """The nodes in an order that respects every edge (Kahn's, ties by order of addition); a cycle (edges
    added after the nodes can make one) is refused."""
    pending = {n.handle: len(n.deps) for n in g.nodes}
    children: dict[int, list[Node]] = {n.handle: [] for n in g.nodes}
    for n in g.nodes:
        for d in n.deps:
            children[d.handle].append(n)
    ready = [n for n in g.nodes if not n.deps]
    order: list[Node] = []
    while ready:
        n = ready.pop(0)
        order.append(n)
        for c in children[n.handle]:
            pending[c.handle] -= 1
            if pending[c.handle] == 0:
                ready.append(c)
    if len(order) != len(g.nodes):
        raise CudaError(E.INVALID_VALUE, "graph instantiation: the graph has a cycle")
    return order


def dependents(g: Graph, node: Node) -> list[Node]:
    return [n for n in g.nodes if node in n.deps]


def add_edges(driver, g: Graph, pairs: list[tuple[int, int]], what: str) -> None:
    for a_h, b_h in pairs:
        a, b = driver.graph_nodes.get(a_h), driver.graph_nodes.get(b_h)
        if a.graph is not g or b.graph is not g:
            raise CudaError(E.INVALID_VALUE, f"{what}: a node is not in this graph")
        if a in b.deps or a is b:
            raise CudaError(E.INVALID_VALUE, f"{what}: the edge exists already")
        b.deps.append(a)


def destroy_node(driver, node: Node) -> None:
    g = node.graph
    g.nodes.remove(node)
    for other in g.nodes:
        if node in other.deps:
            other.deps.remove(node)
    driver.graph_nodes.drop(node.handle)


def instantiate(driver, graph: Graph) -> GraphExec:
    ex = GraphExec(0, topological(graph), {n.handle: n.work for n in graph.nodes}, dict(graph.user_refs))
    for h, count in ex.user_refs.items():  # the executable graph holds references of its own
        driver.user_objects.get(h).refs += count
    ex.handle = driver.graph_execs.new(ex)
    return ex


@dataclass
class UserObject:
    """cuUserObjectCreate's object: a destructor called once the last reference (the caller's, a graph's or an
    executable graph's) is released."""

    handle: int
    destroy: object  # () -> None
    refs: int


def release_user_object(driver, handle: int, count: int) -> None:
    obj = driver.user_objects.get(handle)
    if count == 0 or count > obj.refs:
        raise CudaError(E.INVALID_VALUE, f"user object {handle:#x}: releasing {count} of its {obj.refs} references")
    obj.refs -= count
    if obj.refs == 0:
        driver.user_objects.drop(handle)
        obj.destroy()


def release_user_refs(driver, refs: dict[int, int]) -> None:
    """The references a graph or an executable graph owns, released as it is destroyed."""
    for handle, count in list(refs.items()):
        release_user_object(driver, handle, count)
    refs.clear()


def copy_3d(p, host_address, what: str) -> Copy3D:
    """A Copy3D from a CUDA_MEMCPY3D (cffi struct); CUDA arrays are refused."""
    def end(kind: int, host: int, dev: int, x: int, y: int, z: int, pitch: int, height: int, side: str) -> int:
        if kind == M.MEMORYTYPE_HOST:
            base = host
        elif kind in (M.MEMORYTYPE_DEVICE, M.MEMORYTYPE_UNIFIED):
            base = dev
        else:
            raise CudaError(E.NOT_SUPPORTED if kind == M.MEMORYTYPE_ARRAY else E.INVALID_VALUE,
                            f"{what}: {side}MemoryType {kind} (CUDA arrays are not supported)")
        return base + (z * height + y) * pitch + x

    w, h, d = p.WidthInBytes, max(1, p.Height), max(1, p.Depth)
    sp, dp = p.srcPitch or w, p.dstPitch or w
    sh, dh = p.srcHeight or h, p.dstHeight or h
    src = end(p.srcMemoryType, host_address(p.srcHost), p.srcDevice, p.srcXInBytes, p.srcY, p.srcZ, sp, sh, "src")
    dst = end(p.dstMemoryType, host_address(p.dstHost), p.dstDevice, p.dstXInBytes, p.dstY, p.dstZ, dp, dh, "dst")
    if w and (sp < w or dp < w):
        raise CudaError(E.INVALID_VALUE, f"{what}: a pitch ({sp}, {dp}) is smaller than the width {w}")
    span_s = ((d - 1) * sh + (h - 1)) * sp + w
    span_d = ((d - 1) * dh + (h - 1)) * dp + w
    M.REGISTRY.check_range(src, span_s, what + " source")
    M.REGISTRY.check_range(dst, span_d, what + " destination")
    return Copy3D(dst, dp, dh, src, sp, sh, w, h, d)
