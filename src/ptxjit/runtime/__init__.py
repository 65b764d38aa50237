"""The runtime: translated kernels launched on the CPU's cores, their memory, and the process state that
generated code reaches through symbols.  Importing the package defines those symbols (llvm.add_symbol:
the device heap's state, %globaltimer's epoch; ptxjit.texture's table comes with runtime.launch) before
any translation is loaded, so that code from the disk cache binds to this process's state."""

from ptxjit.runtime import globaltimer, heap  # noqa: F401  (their symbols)
