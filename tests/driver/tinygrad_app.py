"""tinygrad tensor programs on its CUDA backend (DEV=CUDA: CUDA C through NVRTC; DEV=CUDA:PTX: tinygrad's own PTX
renderer): elementwise, reductions, matmul, a convolution, half precision, and a TinyJit function (replayed as CUDA
graphs).  Each result is checked against NumPy; prints the renderer and OK."""
import numpy as np
from tinygrad import Device, Tensor, TinyJit, dtypes

rng = np.random.default_rng(0)
x = rng.standard_normal((64, 96)).astype(np.float32)
w = rng.standard_normal((96, 32)).astype(np.float32)
t = Tensor(x)
assert np.allclose((t @ Tensor(w)).numpy(), x @ w, atol=1e-3), "matmul"
assert np.allclose(t.sum(axis=1).numpy(), x.sum(axis=1), atol=1e-3), "sum"
assert np.allclose(t.max(axis=0).numpy(), x.max(axis=0)), "max"
assert np.allclose(t.exp().mean().numpy(), np.exp(x).mean(), rtol=1e-4), "exp mean"
assert np.allclose(t.relu().sqrt().numpy(), np.sqrt(np.maximum(x, 0)), rtol=1e-5), "relu sqrt"
img = rng.standard_normal((2, 3, 12, 12)).astype(np.float32)
k = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
ref = np.zeros((2, 4, 10, 10), np.float32)
for i in range(10):
    for j in range(10):
        ref[:, :, i, j] = np.einsum("ncab,ocab->no", img[:, :, i:i + 3, j:j + 3], k)
assert np.allclose(Tensor(img).conv2d(Tensor(k)).numpy(), ref, atol=1e-3), "conv2d"
h = x.astype(np.float16)
assert np.allclose((Tensor(h) * 2 + 1).numpy().astype(np.float32), (h * 2 + 1).astype(np.float32), atol=1e-2), "half"
assert Tensor(h).dtype == dtypes.half
assert np.allclose(Tensor(h).sum().numpy(), h.astype(np.float32).sum(), rtol=2e-2), "half sum"


@TinyJit
def step(a: Tensor, b: Tensor) -> Tensor:
    return ((a @ b).relu() + 1).sum(axis=0).realize()


for i in range(4):  # the first calls record, then the jit replays its kernels as a CUDA graph
    a = rng.standard_normal((16, 24)).astype(np.float32)
    b = rng.standard_normal((24, 8)).astype(np.float32)
    got = step(Tensor(a), Tensor(b)).numpy()
    assert np.allclose(got, (np.maximum(a @ b, 0) + 1).sum(axis=0), atol=1e-3), f"jit call {i}"
print(type(Device[Device.DEFAULT].renderer).__name__, "tinygrad OK")
