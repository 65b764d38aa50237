"""The one virtual device: an H100 (SXM5, 80 GB) by default, an A100 with PTXJIT_DEVICE=sm_80.

Its attributes are what the real board reports (cuDeviceGetAttribute), so that a client sizes its work for
the GPU it was written for: grid and block limits, 48 KB of shared memory per block without opt-in and the
opt-in maximum, 132 SMs.  ptxjit runs a launch on the host's cores whatever these say; the launch checks
(runtime/args.py) enforce the same CUDA limits.  Attributes of features ptxjit does not provide (IPC, GPU
Direct, multicast, texture/surface arrays beyond what ptxjit.texture models) read 0.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ptxjit import config
from ptxjit.driver.abi_tables import DEVICE_ATTRIBUTE
from ptxjit.runtime.args import MAX_BLOCK, MAX_GRID, MAX_SHARED_PER_BLOCK, MAX_THREADS_PER_BLOCK

_COMMON = {
    "MAX_THREADS_PER_BLOCK": MAX_THREADS_PER_BLOCK,
    "MAX_BLOCK_DIM_X": MAX_BLOCK[0], "MAX_BLOCK_DIM_Y": MAX_BLOCK[1], "MAX_BLOCK_DIM_Z": MAX_BLOCK[2],
    "MAX_GRID_DIM_X": MAX_GRID[0], "MAX_GRID_DIM_Y": MAX_GRID[1], "MAX_GRID_DIM_Z": MAX_GRID[2],
    "MAX_SHARED_MEMORY_PER_BLOCK": 48 * 1024, "TOTAL_CONSTANT_MEMORY": 64 * 1024, "WARP_SIZE": 32,
    "MAX_PITCH": 2 ** 31 - 1, "MAX_REGISTERS_PER_BLOCK": 65536, "TEXTURE_ALIGNMENT": 512, "GPU_OVERLAP": 1,
    "KERNEL_EXEC_TIMEOUT": 0, "INTEGRATED": 0, "CAN_MAP_HOST_MEMORY": 1, "COMPUTE_MODE": 0,
    "MAXIMUM_TEXTURE1D_WIDTH": 131072, "MAXIMUM_TEXTURE2D_WIDTH": 131072, "MAXIMUM_TEXTURE2D_HEIGHT": 65536,
    "MAXIMUM_TEXTURE3D_WIDTH": 16384, "MAXIMUM_TEXTURE3D_HEIGHT": 16384, "MAXIMUM_TEXTURE3D_DEPTH": 16384,
    "SURFACE_ALIGNMENT": 512, "CONCURRENT_KERNELS": 1, "ECC_ENABLED": 1, "PCI_BUS_ID": 0, "PCI_DEVICE_ID": 0,
    "TCC_DRIVER": 0, "MAX_THREADS_PER_MULTIPROCESSOR": 2048, "UNIFIED_ADDRESSING": 1,
    "TEXTURE_PITCH_ALIGNMENT": 32, "STREAM_PRIORITIES_SUPPORTED": 1, "GLOBAL_L1_CACHE_SUPPORTED": 1,
    "LOCAL_L1_CACHE_SUPPORTED": 1, "MAX_REGISTERS_PER_MULTIPROCESSOR": 65536, "MANAGED_MEMORY": 1,
    "MULTI_GPU_BOARD": 0, "HOST_NATIVE_ATOMIC_SUPPORTED": 0, "SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO": 2,
    "PAGEABLE_MEMORY_ACCESS": 0, "CONCURRENT_MANAGED_ACCESS": 1, "COMPUTE_PREEMPTION_SUPPORTED": 1,
    "CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM": 1, "COOPERATIVE_LAUNCH": 1, "HOST_REGISTER_SUPPORTED": 1,
    "DIRECT_MANAGED_MEM_ACCESS_FROM_HOST": 0, "MAX_BLOCKS_PER_MULTIPROCESSOR": 32,
    "RESERVED_SHARED_MEMORY_PER_BLOCK": 1024, "READ_ONLY_HOST_REGISTER_SUPPORTED": 1,
    "MEMORY_POOLS_SUPPORTED": 1, "ASYNC_ENGINE_COUNT": 2, "CAN_TEX2D_GATHER": 1,
}


@dataclass(frozen=True)
class DeviceModel:
    """A GPU model: its name, compute capability, memory and the attributes that differ between models."""

    name: str
    major: int
    minor: int
    total_mem: int
    attributes: dict[str, int] = field(default_factory=dict)

    @property
    def sm(self) -> int:
        return self.major * 10 + self.minor

    def attribute(self, number: int) -> int | None:
        """The value of CUdevice_attribute `number`, or None if CUDA defines no such attribute."""
        name = _ATTRIBUTE_NAMES.get(number)
        if name is None:
            return None
        return self.attributes.get(name, _COMMON.get(name, 0))


_ATTRIBUTE_NAMES: dict[int, str] = {}
for _name, _number in DEVICE_ATTRIBUTE.items():
    if _name != "CU_DEVICE_ATTRIBUTE_MAX":
        _ATTRIBUTE_NAMES.setdefault(_number, _name.removeprefix("CU_DEVICE_ATTRIBUTE_"))

H100 = DeviceModel("NVIDIA H100 80GB HBM3 (ptxjit)", 9, 0, 80 * 2 ** 30, {
    "COMPUTE_CAPABILITY_MAJOR": 9, "COMPUTE_CAPABILITY_MINOR": 0, "MULTIPROCESSOR_COUNT": 132,
    "CLOCK_RATE": 1980000, "MEMORY_CLOCK_RATE": 2619000, "GLOBAL_MEMORY_BUS_WIDTH": 5120,
    "L2_CACHE_SIZE": 50 * 2 ** 20, "MAX_SHARED_MEMORY_PER_MULTIPROCESSOR": 228 * 1024,
    "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN": MAX_SHARED_PER_BLOCK, "MAX_PERSISTING_L2_CACHE_SIZE": 30 * 2 ** 20,
    "MAX_ACCESS_POLICY_WINDOW_SIZE": 2 ** 27, "CLUSTER_LAUNCH": 1, "TENSOR_MAP_ACCESS_SUPPORTED": 1,
    "MEM_SYNC_DOMAIN_COUNT": 4, "UNIFIED_FUNCTION_POINTERS": 1, "ASYNC_ENGINE_COUNT": 3,
})
A100 = DeviceModel("NVIDIA A100-SXM4-80GB (ptxjit)", 8, 0, 80 * 2 ** 30, {
    "COMPUTE_CAPABILITY_MAJOR": 8, "COMPUTE_CAPABILITY_MINOR": 0, "MULTIPROCESSOR_COUNT": 108,
    "CLOCK_RATE": 1410000, "MEMORY_CLOCK_RATE": 1593000, "GLOBAL_MEMORY_BUS_WIDTH": 5120,
    "L2_CACHE_SIZE": 40 * 2 ** 20, "MAX_SHARED_MEMORY_PER_MULTIPROCESSOR": 164 * 1024,
    "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN": 163 * 1024, "MAX_PERSISTING_L2_CACHE_SIZE": 30 * 2 ** 20,
    "MAX_ACCESS_POLICY_WINDOW_SIZE": 2 ** 27,
})
MODELS = {"sm_90": H100, "sm_80": A100}


def selected_model() -> DeviceModel:
    """The model PTXJIT_DEVICE names (sm_90 default; `90`, `sm_90`, `compute_90`, `9.0` all work)."""
    raw = config.DEVICE.text().lower()
    if not raw:
        return H100
    key = raw.replace("compute_", "sm_").replace(".", "")
    if not key.startswith("sm_"):
        key = "sm_" + key
    model = MODELS.get(key)
    if model is None:
        raise ValueError(f"{config.DEVICE.name}={raw!r}: ptxjit models {', '.join(MODELS)}")
    return model
