"""Framework-style layer kernels (bench/kernels/{batchnorm,maxpool,im2col,nchw_to_nhwc}.cu): one thread
per element, the element's coordinates recovered from its flat index by dividing by the tensor's
run-time dimensions, as deep-learning frameworks write element-wise, pooling and layout kernels.  Their
shapes are launch arguments: what tier 1's specialization (ptxjit/tiers) folds into constants.

Sizes: batchnorm, maxpool and nchw_to_nhwc work on a BATCH x CHANNELS x n x n tensor; im2col on one
CHANNELS x n x n image with a 3x3 kernel, padding 1, stride 1."""

from __future__ import annotations

import numpy as np

from ptxbench.case import Case, I, P, cdiv, i32, ocl_simple, ptr

BATCH, CHANNELS = 16, 64
KSIZE, PAD, STRIDE = 3, 1, 1
SIZES = {"tiny": 10, "quick": 64, "full": 128}


def _launch_1d(k, total: int, args: tuple):
    return lambda: k(cdiv(total, 256), 256, args)


def _ocl_1d(peer, d, name: str, args: list, total: int, outs: list[str]):
    return ocl_simple(peer, d, name, args, (cdiv(total, 256) * 256,), (256,), outs)


# --------------------------------------------------------------------------------- batchnorm
def _bn_make(n, rng):
    return {"x": rng.standard_normal((BATCH, CHANNELS, n, n), dtype=np.float32),
            "scale": rng.uniform(0.5, 1.5, CHANNELS).astype(np.float32),
            "shift": rng.uniform(-0.5, 0.5, CHANNELS).astype(np.float32),
            "y": np.zeros((BATCH, CHANNELS, n, n), np.float32)}


def _bn_ref(d):
    x = d["x"].astype(np.float64)
    return {"y": np.maximum(x * d["scale"][:, None, None] + d["shift"][:, None, None], 0.0)}


def _bn_ptx(k, d, n):
    return _launch_1d(k, d["x"].size, (d["x"], d["scale"], d["shift"], d["y"], d["x"].size, CHANNELS, n * n))


def _bn_native(peer, d, n):
    fn = peer.function("batchnorm", [P, P, P, P, I, I, I])
    x, s, b, y = ptr(d["x"]), ptr(d["scale"]), ptr(d["shift"]), ptr(d["y"])
    return lambda: fn(x, s, b, y, BATCH, CHANNELS, n * n)


def _bn_numpy(d, n):
    x, y, s, b = d["x"], d["y"], d["scale"][:, None, None], d["shift"][:, None, None]

    def run():
        np.multiply(x, s, out=y)
        np.add(y, b, out=y)
        np.maximum(y, 0.0, out=y)
    return run


BATCHNORM = Case(
    "batchnorm", "memory", f"y = relu(x*scale[c] + shift[c]), NCHW {BATCH}x{CHANNELS}xnxn (float32)", SIZES,
    _bn_make, _bn_ref, ["y"], {"y": (1e-6, 1e-6)}, _bn_ptx, _bn_native,
    lambda peer, d, n: _ocl_1d(peer, d, "batchnorm", ["x", "scale", "shift", "y", i32(d["x"].size), i32(CHANNELS),
                                                      i32(n * n)], d["x"].size, ["y"]),
    _bn_numpy, bytes_moved=lambda n: 8 * BATCH * CHANNELS * n * n, flops=lambda n: 3 * BATCH * CHANNELS * n * n,
    label=lambda n: f"{BATCH}x{CHANNELS}x{n}x{n}")


# ----------------------------------------------------------------------------------- maxpool
def _mp_make(n, rng):
    return {"x": rng.standard_normal((BATCH, CHANNELS, n, n), dtype=np.float32),
            "y": np.zeros((BATCH, CHANNELS, n // 2, n // 2), np.float32)}


def _mp_ref(d):
    x = d["x"]
    b, c, h, w = x.shape
    return {"y": x[:, :, :h // 2 * 2, :w // 2 * 2].reshape(b, c, h // 2, 2, w // 2, 2).max(axis=(3, 5))}


def _mp_ptx(k, d, n):
    return _launch_1d(k, d["y"].size, (d["x"], d["y"], d["y"].size, n, n))


def _mp_native(peer, d, n):
    fn = peer.function("maxpool", [P, P, I, I, I])
    x, y = ptr(d["x"]), ptr(d["y"])
    return lambda: fn(x, y, BATCH * CHANNELS, n, n)


def _mp_numpy(d, n):
    x, y = d["x"], d["y"]
    m = n // 2 * 2

    def run():
        np.maximum(x[:, :, 0:m:2, 0:m:2], x[:, :, 0:m:2, 1:m:2], out=y)
        np.maximum(y, x[:, :, 1:m:2, 0:m:2], out=y)
        np.maximum(y, x[:, :, 1:m:2, 1:m:2], out=y)
    return run


MAXPOOL = Case(
    "maxpool", "memory", f"2x2 max pooling, stride 2, NCHW {BATCH}x{CHANNELS}xnxn (float32)", SIZES,
    _mp_make, _mp_ref, ["y"], {"y": (0, 0)}, _mp_ptx, _mp_native,
    lambda peer, d, n: _ocl_1d(peer, d, "maxpool", ["x", "y", i32(d["y"].size), i32(n), i32(n)], d["y"].size, ["y"]),
    _mp_numpy, bytes_moved=lambda n: 5 * BATCH * CHANNELS * n * n, label=lambda n: f"{BATCH}x{CHANNELS}x{n}x{n}")


# ------------------------------------------------------------------------------------ im2col
def _out(n: int) -> int:
    return (n + 2 * PAD - KSIZE) // STRIDE + 1


def _ic_make(n, rng):
    return {"img": rng.standard_normal((CHANNELS, n, n), dtype=np.float32),
            "col": np.zeros((CHANNELS * KSIZE * KSIZE, _out(n) * _out(n)), np.float32)}


def _ic_windows(img: np.ndarray) -> np.ndarray:
    """(C, K, K, out_h, out_w) view of the zero-padded image: window (ky, kx) of every output pixel."""
    padded = np.pad(img, ((0, 0), (PAD, PAD), (PAD, PAD)))
    win = np.lib.stride_tricks.sliding_window_view(padded, (KSIZE, KSIZE), axis=(1, 2))[:, ::STRIDE, ::STRIDE]
    return win.transpose(0, 3, 4, 1, 2)


def _ic_ref(d):
    c = d["img"].shape[0]
    return {"col": _ic_windows(d["img"]).reshape(c * KSIZE * KSIZE, -1)}


def _ic_args(d, n):
    return (CHANNELS, n, n, KSIZE, PAD, STRIDE, _out(n), _out(n))


def _ic_ptx(k, d, n):
    return _launch_1d(k, CHANNELS * _out(n) ** 2, (d["img"], d["col"], *_ic_args(d, n)))


def _ic_native(peer, d, n):
    fn = peer.function("im2col", [P, P, I, I, I, I, I, I, I, I])
    img, col = ptr(d["img"]), ptr(d["col"])
    return lambda: fn(img, col, *_ic_args(d, n))


def _ic_numpy(d, n):
    img, col = d["img"], d["col"]
    shaped = col.reshape(CHANNELS, KSIZE, KSIZE, _out(n), _out(n))
    return lambda: np.copyto(shaped, _ic_windows(img))


IM2COL = Case(
    "im2col", "memory", f"im2col, {CHANNELS}xnxn image, {KSIZE}x{KSIZE} kernel, padding {PAD} (float32)", SIZES,
    _ic_make, _ic_ref, ["col"], {"col": (0, 0)}, _ic_ptx, _ic_native,
    lambda peer, d, n: _ocl_1d(peer, d, "im2col", ["img", "col", *(i32(v) for v in _ic_args(d, n))],
                               CHANNELS * _out(n) ** 2, ["col"]),
    _ic_numpy, bytes_moved=lambda n: 4 * CHANNELS * (n * n + KSIZE * KSIZE * _out(n) ** 2),
    label=lambda n: f"{CHANNELS}x{n}x{n}")
# quick and full: twice the side of the other layers (one image, not a batch of 16)
IM2COL.sizes = {"tiny": 13, "quick": 128, "full": 256}


# ------------------------------------------------------------------------------ nchw_to_nhwc
def _nh_make(n, rng):
    return {"x": rng.standard_normal((BATCH, CHANNELS, n, n), dtype=np.float32),
            "y": np.zeros((BATCH, n, n, CHANNELS), np.float32)}


def _nh_ptx(k, d, n):
    return _launch_1d(k, d["x"].size, (d["x"], d["y"], d["x"].size, CHANNELS, n * n))


def _nh_native(peer, d, n):
    fn = peer.function("nchw_to_nhwc", [P, P, I, I, I])
    x, y = ptr(d["x"]), ptr(d["y"])
    return lambda: fn(x, y, BATCH, CHANNELS, n * n)


NCHW_TO_NHWC = Case(
    "nchw_to_nhwc", "memory", f"NCHW -> NHWC layout change, {BATCH}x{CHANNELS}xnxn (float32)", SIZES,
    _nh_make, lambda d: {"y": d["x"].transpose(0, 2, 3, 1)}, ["y"], {"y": (0, 0)}, _nh_ptx, _nh_native,
    lambda peer, d, n: _ocl_1d(peer, d, "nchw_to_nhwc", ["x", "y", i32(d["x"].size), i32(CHANNELS), i32(n * n)],
                               d["x"].size, ["y"]),
    lambda d, n: (lambda: np.copyto(d["y"], d["x"].transpose(0, 2, 3, 1))),
    bytes_moved=lambda n: 8 * BATCH * CHANNELS * n * n, label=lambda n: f"{BATCH}x{CHANNELS}x{n}x{n}")

LAYERS = (BATCHNORM, MAXPOOL, IM2COL, NCHW_TO_NHWC)
