"""Streams, events and graphs: asynchronous kernel launches with CUDA's ordering rules.

scheduler.py distributes batches of CTAs to worker threads and aggregates completion counts;
stream.py holds Stream, Event and the ordering rules; graph.py captures and replays work."""

from ptxjit.streams.graph import Graph
from ptxjit.streams.stream import Event, Stream, copy_async, get_elapsed_time, synchronize

__all__ = ["Event", "Graph", "Stream", "copy_async", "get_elapsed_time", "synchronize"]
