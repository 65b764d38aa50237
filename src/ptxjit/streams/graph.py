"""Graph capture and replay: while a stream captures, the work enqueued on it is recorded (kernel
launches with their packed arguments, host functions, copies, event records and waits) instead of
run; `Graph.launch(stream)` enqueues the recorded work on a stream again, each kernel launch with a
freshly packed launch record (the arrays are the ones captured: replays see their current contents,
as CUDA graphs do)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ptxjit.streams.stream import Stream


class Graph:
    """Work recorded by Stream.capture(); replay it with launch(stream)."""

    def __init__(self) -> None:
        """An empty graph; Stream.capture() makes and fills one."""
        self._nodes: list[Callable[[Stream], None]] = []
        self._open = True

    def add(self, node: Callable[[Stream], None]) -> None:
        """Append a node: a callable that enqueues its work on the stream it is given."""
        self._nodes.append(node)

    def __len__(self) -> int:
        return len(self._nodes)

    def launch(self, stream: Stream | None = None) -> None:
        """Enqueue the recorded work, in the recorded order, on `stream` (default: the legacy stream)."""
        from ptxjit.streams.stream import Stream

        if self._open:
            raise RuntimeError("a graph cannot be launched while it is still being captured")
        s = stream if stream is not None else Stream.null
        for node in self._nodes:
            node(s)

    # CuPy calls it upload/launch; instantiate is CUDA's step in between (nothing to do here)
    def instantiate(self) -> Graph:
        """CUDA's instantiation step: nothing to do here, the graph itself is launchable."""
        return self


@contextlib.contextmanager
def capture(stream: Stream) -> Iterator[Graph]:
    if stream.is_null:
        raise RuntimeError("the legacy default stream cannot be captured (CUDA forbids it too)")
    if stream._graph is not None:
        raise RuntimeError(f"{stream!r} is already capturing")
    g = Graph()
    stream._graph = g
    try:
        yield g
    finally:
        stream._graph = None
        g._open = False
