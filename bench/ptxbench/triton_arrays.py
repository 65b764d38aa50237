"""What Triton's interpreter (TRITON_INTERPRET=1) asks of a torch tensor, over a NumPy array: the interpreter
runs in host memory already, so NumPy arrays stand in for tensors without torch installed."""

from __future__ import annotations


class InterpArray:
    def __init__(self, a, dtype=None):
        self.a, self.dtype = a, (a.dtype if dtype is None else dtype)

    def data_ptr(self):
        return self.a.ctypes.data

    def untyped_storage(self):
        return self

    def cpu(self):
        return self

    def new_empty(self, *a, **k):
        return InterpArray(self.a, self.dtype)

    def set_(self, storage, *a):
        self.a = storage.a
        return self

    def storage_offset(self):
        return 0

    def size(self):
        return self.a.shape

    def stride(self):
        return self.a.strides

    def copy_(self, other):
        return self
