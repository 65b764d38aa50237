"""Textures and surfaces (ptxjit.texture, lower/rules/texture.py) on nvcc-compiled kernels
(tests/data/texture/texture.cu), against a NumPy model of the CUDA Programming Guide's "Texture
Fetching" appendix written here (not the code under test): point = floor, linear = x - 0.5 with the
weights in 9-bit fixed point (8 fractional bits), the address modes applied to texel indices, the
normalized-float read mode (unsigned n bits -> [0, 1], signed -> [-1, 1])."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import ptxjit
from ptxjit import texture as T

PTX = Path(__file__).parent / "data" / "texture" / "texture.ptx"
F32, S32, U32 = T.cudaChannelFormatKindFloat, T.cudaChannelFormatKindSigned, T.cudaChannelFormatKindUnsigned
WRAP, CLAMP, MIRROR, BORDER = (T.cudaAddressModeWrap, T.cudaAddressModeClamp, T.cudaAddressModeMirror,
                               T.cudaAddressModeBorder)
f32 = np.float32


@pytest.fixture(scope="module")
def mod() -> ptxjit.Module:
    return ptxjit.Module.from_file(PTX)


# ---------------------------------------------------------------- the reference model
def ref_index(i: np.ndarray, n: int, mode: int) -> tuple[np.ndarray, np.ndarray]:
    """(texel index, inside) under an address mode (CUDA Programming Guide, Texture Fetching)."""
    if mode == WRAP:
        return i % n, np.ones(i.shape, bool)
    if mode == MIRROR:
        m = i % (2 * n)
        return np.where(m < n, m, 2 * n - 1 - m), np.ones(i.shape, bool)
    return np.clip(i, 0, n - 1), (i >= 0) & (i < n) if mode == BORDER else np.ones(i.shape, bool)


def ref_fetch(texels: np.ndarray, coords: list[np.ndarray], modes: list[int], linear: bool, norm: bool,
              border=(0, 0, 0, 0), layer: np.ndarray | None = None, gather: int | None = None) -> np.ndarray:
    """texels: (layers, depth, height, width, 4) float32; coords x[, y[, z]] float32 arrays."""
    nd = len(coords)
    sizes = [texels.shape[3], texels.shape[2], texels.shape[1]][:nd]
    # wrap and mirror exist only with normalized coordinates; CUDA clamps otherwise
    modes = [m if norm or m in (CLAMP, BORDER) else CLAMP for m in modes]
    lay = np.zeros(coords[0].shape, np.int64) if layer is None else np.clip(layer, 0, texels.shape[0] - 1)
    i0, alpha = [], []
    for x, n in zip(coords, sizes, strict=True):
        x = x.astype(f32) * f32(n) if norm else x.astype(f32)
        if linear or gather is not None:
            x = x - f32(0.5)
        f = np.floor(x)
        i0.append(f.astype(np.int64))
        alpha.append((np.floor((x - f) * f32(256) + f32(0.5)) / f32(256)).astype(f32))
    corners = []
    for c in range(1 << nd if (linear or gather is not None) else 1):
        idx = [np.zeros_like(i0[0])] * 3
        ok = np.ones(i0[0].shape, bool)
        for k in range(nd):
            j, inside = ref_index(i0[k] + (c >> k & 1), sizes[k], modes[k])
            idx[k] = j
            ok &= inside
        t = texels[lay, idx[2], idx[1], idx[0]]
        corners.append(np.where(ok[:, None], t, np.array(border, texels.dtype)[None, :]))
    if gather is not None:
        return np.stack([corners[c][:, gather] for c in (2, 3, 1, 0)], axis=1)
    if not linear:
        return corners[0]
    out = np.zeros_like(corners[0])
    for c, t in enumerate(corners):
        w = None
        for k in range(nd):
            fk = alpha[k] if c >> k & 1 else f32(1) - alpha[k]
            w = fk if w is None else (w * fk).astype(f32)
        out = (out + w[:, None] * t).astype(f32) if c else (w[:, None] * t).astype(f32)
    return out


def as_texels(a: np.ndarray, channels: int, kind: int, bits: int, normalized: bool) -> np.ndarray:
    """Elements (..., channels) as the 4-channel float32/int32 texels the guide's read modes give."""
    floats = kind == F32 or normalized
    out = np.zeros((*a.shape[:-1], 4), f32 if floats else np.int64)
    out[..., 3] = 1
    v = a.astype(np.float64)
    if normalized and kind == U32:
        v = v / (2 ** bits - 1)
    elif normalized and kind == S32:
        v = np.maximum(v / (2 ** (bits - 1) - 1), -1.0)
    out[..., :channels] = v.astype(out.dtype)
    return out


def array_texture(data: np.ndarray, kind: int, bits: int, modes, linear=False, norm=False, normalized=False,
                  border=None, layered=False, channels=1):
    """A CUDAarray texture of `data` (shape (d, h, w, channels) squeezed as CUDA extents)."""
    desc = T.ChannelFormatDescriptor(*([bits] * channels + [0] * (4 - channels)), kind)
    shape = data.shape[:-1] if channels > 1 else data.shape
    extent = list(reversed(shape)) + [0] * (3 - len(shape))
    arr = T.CUDAarray(desc, *extent, flags=T.cudaArrayLayered if layered else 0)
    arr.copy_from(data)
    td = T.TextureDescriptor(tuple(modes), T.cudaFilterModeLinear if linear else T.cudaFilterModePoint,
                             T.cudaReadModeNormalizedFloat if normalized else T.cudaReadModeElementType,
                             borderColors=border, normalizedCoords=int(norm))
    return T.TextureObject(T.ResourceDescriptor(T.cudaResourceTypeArray, cuArr=arr), td), arr


def coords_for(n: int, size: int, rng, norm: bool) -> np.ndarray:
    """Coordinates inside, at texel centres and edges, and outside on both sides."""
    x = np.concatenate([rng.uniform(-1.5 * size, 2.5 * size, n - 6), [0, 0.5, size - 0.5, size, -0.25, 1.0 / 3]])
    return (x / size if norm else x).astype(f32)


# ---------------------------------------------------------------- textures
def test_fetch1d_linear_memory_border_and_clamp(mod):
    a = np.arange(10, dtype=f32) * 1.5
    cd = T.ChannelFormatDescriptor(32, 0, 0, 0, F32)
    for mode in (BORDER, CLAMP):
        tex = T.TextureObject(T.ResourceDescriptor(T.cudaResourceTypeLinear, arr=a, chDesc=cd, sizeInBytes=a.nbytes),
                              T.TextureDescriptor((mode,)))
        out = np.zeros(14, f32)
        mod.get_function("fetch1d")(1, 32, (tex, out, 14))
        i = np.arange(14) - 2  # the kernel fetches i - 2
        inside = a[np.clip(i, 0, 9)]
        want = np.where((i >= 0) & (i < 10), inside, 0 if mode == BORDER else inside)
        np.testing.assert_array_equal(out, want.astype(f32))


def test_fetch1d_int4_from_pitch_and_linear(mod):
    a = np.random.default_rng(1).integers(-2**31, 2**31, (16, 4)).astype(np.int32)
    cd = T.ChannelFormatDescriptor(32, 32, 32, 32, S32)
    tex = T.TextureObject(T.ResourceDescriptor(T.cudaResourceTypeLinear, arr=a, chDesc=cd, sizeInBytes=a.nbytes),
                          T.TextureDescriptor((CLAMP,)))
    out = np.zeros((16, 4), np.int32)
    mod.get_function("fetch1d_int4")(1, 32, (tex, out, 16))
    np.testing.assert_array_equal(out, a)


@pytest.mark.parametrize("norm", [False, True])
@pytest.mark.parametrize("linear", [False, True])
def test_tex1d_address_modes(mod, norm, linear):
    rng = np.random.default_rng(2)
    w = 7
    data = rng.standard_normal(w).astype(f32)
    for mode in (WRAP, CLAMP, MIRROR, BORDER):
        tex, _ = array_texture(data, F32, 32, [mode], linear=linear, norm=norm, border=(2.5, 0, 0, 0))
        x = coords_for(64, w, rng, norm)
        out = np.zeros(64, f32)
        mod.get_function("sample1d")(2, 32, (tex, x, out, 64))
        want = ref_fetch(as_texels(data[:, None], 1, F32, 32, False)[None, None, None], [x], [mode], linear, norm,
                         border=(2.5, 0, 0, 0))[:, 0]
        np.testing.assert_allclose(out, want, rtol=1e-6, atol=1e-6, err_msg=f"mode {mode}")


@pytest.mark.parametrize("kind,bits", [(U32, 8), (S32, 8), (U32, 16), (S32, 16)])
def test_normalized_float_read_mode_linear(mod, kind, bits):
    rng = np.random.default_rng(3)
    h, w = 5, 6
    dt = np.dtype(f"{'u' if kind == U32 else 'i'}{bits // 8}")
    info = np.iinfo(dt)
    data = rng.integers(info.min, info.max, (h, w, 4), endpoint=True).astype(dt)
    data[0, 0] = info.min  # -128 -> -1, not -128/127
    tex, _ = array_texture(data, kind, bits, [MIRROR, WRAP], linear=True, norm=True, normalized=True, channels=4)
    x, y = coords_for(96, w, rng, True), coords_for(96, h, rng, True)
    out = np.zeros((96, 4), f32)
    mod.get_function("sample2d")(3, 32, (tex, x, y, out, 96))
    want = ref_fetch(as_texels(data, 4, kind, bits, True)[None, None], [x, y], [MIRROR, WRAP], True, True)
    np.testing.assert_allclose(out, want, rtol=2e-6, atol=2e-6)
    assert out.min() >= -1 and out.max() <= 1


def test_tex2d_float2_border_color_unnormalized(mod):
    rng = np.random.default_rng(4)
    data = rng.standard_normal((4, 9, 2)).astype(f32)
    border = (0.25, -3.0, 7.0, 9.0)
    tex, _ = array_texture(data, F32, 32, [BORDER, CLAMP], linear=True, border=border, channels=2)
    x, y = coords_for(64, 9, rng, False), coords_for(64, 4, rng, False)
    out = np.zeros((64, 4), f32)
    mod.get_function("sample2d")(2, 32, (tex, x, y, out, 64))
    want = ref_fetch(as_texels(data, 2, F32, 32, False)[None, None], [x, y], [BORDER, CLAMP], True, False,
                     border=border)
    np.testing.assert_allclose(out, want, rtol=1e-6, atol=1e-6)


def test_tex2d_uint_element_type_point(mod):
    rng = np.random.default_rng(5)
    data = rng.integers(0, 2**32, (6, 5), dtype=np.uint64).astype(np.uint32)
    tex, _ = array_texture(data, U32, 32, [CLAMP, BORDER], border=(0, 0, 0, 0))
    x, y = coords_for(64, 5, rng, False), coords_for(64, 6, rng, False)
    out = np.zeros(64, np.uint32)
    mod.get_function("sample2d_uint")(2, 32, (tex, x, y, out, 64))
    want = ref_fetch(data.astype(np.int64)[None, None, :, :, None].repeat(4, -1), [x, y], [CLAMP, BORDER], False,
                     False)[:, 0]
    np.testing.assert_array_equal(out, want.astype(np.uint32))


def test_tex3d_linear(mod):
    rng = np.random.default_rng(6)
    data = rng.standard_normal((3, 4, 5)).astype(f32)
    tex, _ = array_texture(data, F32, 32, [WRAP, MIRROR, CLAMP], linear=True, norm=True)
    x, y, z = (coords_for(64, n, rng, True) for n in (5, 4, 3))
    out = np.zeros(64, f32)
    mod.get_function("sample3d")(2, 32, (tex, x, y, z, out, 64))
    want = ref_fetch(as_texels(data[..., None], 1, F32, 32, False)[None], [x, y, z], [WRAP, MIRROR, CLAMP], True,
                     True)[:, 0]
    np.testing.assert_allclose(out, want, rtol=1e-6, atol=1e-6)


def test_tex2d_layered(mod):
    rng = np.random.default_rng(7)
    data = rng.standard_normal((3, 4, 6)).astype(f32)  # 3 layers of 4 x 6
    tex, _ = array_texture(data, F32, 32, [CLAMP, CLAMP], linear=True, layered=True)
    x, y = coords_for(64, 6, rng, False), coords_for(64, 4, rng, False)
    layer = rng.integers(-1, 5, 64).astype(np.int32)  # out-of-range layers are clamped
    out = np.zeros(64, f32)
    mod.get_function("sample2d_layered")(2, 32, (tex, x, y, layer, out, 64))
    want = ref_fetch(as_texels(data[..., None], 1, F32, 32, False)[:, None], [x, y], [CLAMP, CLAMP], True, False,
                     layer=layer)[:, 0]
    np.testing.assert_allclose(out, want, rtol=1e-6, atol=1e-6)


def test_tex2d_gather(mod):
    rng = np.random.default_rng(8)
    data = rng.standard_normal((5, 7, 4)).astype(f32)
    tex, _ = array_texture(data, F32, 32, [BORDER, WRAP], norm=True, border=(1, 2, 3, 4), channels=4)
    x, y = coords_for(32, 7, rng, True), coords_for(32, 5, rng, True)
    out = np.zeros((32, 4, 4), f32)
    mod.get_function("gather2d")(1, 32, (tex, x, y, out, 32))
    for comp in range(4):
        want = ref_fetch(data[None, None], [x, y], [BORDER, WRAP], False, True, border=(1, 2, 3, 4), gather=comp)
        np.testing.assert_array_equal(out[:, comp], want)


def test_texture_sees_the_array_at_each_launch_and_pitch2d(mod):
    data = np.arange(12, dtype=f32).reshape(3, 4)
    tex, arr = array_texture(data, F32, 32, [CLAMP, CLAMP])
    x, y = np.array([0.5, 3.5], f32), np.array([0.5, 2.5], f32)
    out = np.zeros((2, 4), f32)
    k = mod.get_function("sample2d")
    k(1, 32, (tex, x, y, out, 2))
    assert out[:, 0].tolist() == [0, 11]
    arr.copy_from(data * 10)
    k(1, 32, (tex, x, y, out, 2))
    assert out[:, 0].tolist() == [0, 110]
    # pitched memory: rows of 4 floats in rows of 6
    buf = np.zeros((3, 6), f32)
    buf[:, :4] = data
    cd = T.ChannelFormatDescriptor(32, 0, 0, 0, F32)
    tex2 = T.TextureObject(T.ResourceDescriptor(T.cudaResourceTypePitch2D, arr=buf, chDesc=cd, width=4, height=3,
                                                pitchInBytes=24), T.TextureDescriptor((CLAMP, CLAMP)))
    k(1, 32, (tex2, x, y, out, 2))
    assert out[:, 0].tolist() == [0, 11]


def test_lod_and_grad_without_mipmaps_sample_level_0(mod):
    rng = np.random.default_rng(11)
    data = rng.standard_normal((4, 5)).astype(np.float16)  # 16-bit float channels
    tex, _ = array_texture(data, F32, 16, [CLAMP, WRAP], linear=True, norm=True)
    x, y = coords_for(32, 5, rng, True), coords_for(32, 4, rng, True)
    out = np.zeros((32, 2), f32)
    mod.get_function("sample2d_lod")(1, 32, (tex, x, y, out, 32))
    want = ref_fetch(as_texels(data[..., None], 1, F32, 16, False)[None, None], [x, y], [CLAMP, WRAP], True,
                     True)[:, 0]
    np.testing.assert_allclose(out[:, 0], want, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(out[:, 1], want, rtol=1e-6, atol=1e-6)


# ---------------------------------------------------------------- surfaces
def surface(data: np.ndarray, bits: int, kind: int, channels: int = 1):
    desc = T.ChannelFormatDescriptor(*([bits] * channels + [0] * (4 - channels)), kind)
    shape = data.shape[:-1] if channels > 1 else data.shape
    extent = list(reversed(shape)) + [0] * (3 - len(shape))
    arr = T.CUDAarray(desc, *extent, flags=T.cudaArraySurfaceLoadStore)
    arr.copy_from(data)
    return T.SurfaceObject(T.ResourceDescriptor(T.cudaResourceTypeArray, cuArr=arr)), arr


def test_surf2d_read_write(mod):
    h, w = 5, 7
    src = np.random.default_rng(9).standard_normal((h, w)).astype(f32)
    s_in, _ = surface(src, 32, F32)
    s_out, a_out = surface(np.zeros((h, w), f32), 32, F32)
    mod.get_function("surf2d_scale")((1, 1), (8, 8), (s_in, s_out, w, h))
    got = np.zeros((h, w), f32)
    a_out.copy_to(got)
    np.testing.assert_array_equal(got, src * 2)


def test_surf2d_uchar4_in_place(mod):
    data = np.random.default_rng(10).integers(0, 255, (3, 4, 4), dtype=np.uint8)
    s, arr = surface(data, 8, U32, channels=4)
    mod.get_function("surf2d_uchar4")((1, 1), (8, 8), (s, 4, 3))
    got = np.zeros_like(data)
    arr.copy_to(got)
    want = np.stack([data[..., 3], data[..., 2], data[..., 1], data[..., 0] + 1], -1).astype(np.uint8)
    np.testing.assert_array_equal(got, want)


def test_surf1d_boundary_modes(mod):
    n, w = 12, 8  # threads write i + 100 at element i: 4 of them past the end
    s, arr = surface(np.full(w, -1, np.int32), 32, S32)
    mod.get_function("surf1d_write_zero")(1, 32, (s, n))
    got = np.zeros(w, np.int32)
    arr.copy_to(got)
    np.testing.assert_array_equal(got, np.arange(w) + 100)  # the stores past the end are dropped
    s2, arr2 = surface(np.full(w, -1, np.int32), 32, S32)
    mod.get_function("surf1d_write_clamp")(1, 32, (s2, n))
    arr2.copy_to(got)
    # threads w-1 .. n-1 all write the last element (clamped): which one lands is unspecified, as on a GPU
    np.testing.assert_array_equal(got[:-1], np.arange(w - 1) + 100)
    assert got[-1] in range(w - 1 + 100, n + 100)
    with pytest.raises(ptxjit.KernelTrap, match=r"surface access out of range with .trap.*sust.b.1d.b32.trap"):
        mod.get_function("surf1d_write_trap")(1, 32, (s, n))
    out = np.zeros(n, np.int32)
    mod.get_function("surf1d_read_zero")(1, 32, (s, out, n))  # reads element i - 2
    i = np.arange(n) - 2
    np.testing.assert_array_equal(out, np.where((i >= 0) & (i < w), i + 100, 0))


def test_texture_over_a_surface_written_array_sees_the_writes(mod):
    """A texture copies its CUDAarray only when it may have changed: a live surface over the array
    (kernels may write it) makes every launch refresh."""
    src = np.arange(12, dtype=f32).reshape(3, 4)
    s_in, _ = surface(src, 32, F32)
    s_out, arr = surface(np.zeros((3, 4), f32), 32, F32)
    td = T.TextureDescriptor((CLAMP, CLAMP))
    tex = T.TextureObject(T.ResourceDescriptor(T.cudaResourceTypeArray, cuArr=arr), td)
    x, y = np.array([0.5, 3.5], f32), np.array([0.5, 2.5], f32)
    out = np.zeros((2, 4), f32)
    k = mod.get_function("sample2d")
    k(1, 32, (tex, x, y, out, 2))
    assert out[:, 0].tolist() == [0, 0]
    mod.get_function("surf2d_scale")((1, 1), (8, 8), (s_in, s_out, 4, 3))
    k(1, 32, (tex, x, y, out, 2))
    assert out[:, 0].tolist() == [0, 22]


def test_layered_surfaces(mod):
    w, h, layers = 5, 3, 4
    desc = T.ChannelFormatDescriptor(32, 0, 0, 0, S32)
    arr2 = T.CUDAarray(desc, w, h, layers, flags=T.cudaArrayLayered | T.cudaArraySurfaceLoadStore)
    s2 = T.SurfaceObject(T.ResourceDescriptor(T.cudaResourceTypeArray, cuArr=arr2))
    mod.get_function("surf2d_layered_fill")((1, 1), (8, 4), (s2, w, h, layers))
    got = np.zeros((layers, h, w), np.int32)
    arr2.copy_to(got)
    l, y, x = np.meshgrid(np.arange(layers), np.arange(h), np.arange(w), indexing="ij")
    np.testing.assert_array_equal(got, l * 1000 + y * 10 + x)
    # 1D layered (height 0): the kernel reads `layers` layers of an array that has 2: the rest are zero
    arr1 = T.CUDAarray(desc, w, 0, 2, flags=T.cudaArrayLayered | T.cudaArraySurfaceLoadStore)
    arr1.copy_from(np.arange(2 * w, dtype=np.int32) + 7)
    s1 = T.SurfaceObject(T.ResourceDescriptor(T.cudaResourceTypeArray, cuArr=arr1))
    out = np.full(layers * w, -1, np.int32)
    mod.get_function("surf1d_layered_read")(1, 8, (s1, out, w, layers))
    np.testing.assert_array_equal(out, np.r_[np.arange(2 * w) + 7, np.zeros((layers - 2) * w, np.int32)])


def test_txq_suq(mod):
    tex, _ = array_texture(np.zeros((3, 4, 5), f32), F32, 32, [CLAMP] * 3)
    s, _ = surface(np.zeros((6, 7), np.int32), 32, S32)
    out = np.zeros(5, np.int32)
    mod.get_function("query")(1, 1, (tex, s, out))
    assert out.tolist() == [5, 4, 3, 7, 6]


# ---------------------------------------------------------------- refusals
def test_launch_refuses_ints_stale_and_wrong_kind(mod):
    k = mod.get_function("sample1d")
    x, out = np.zeros(1, f32), np.zeros(1, f32)
    with pytest.raises(TypeError, match=r"sample1d_param_0.*used by the kernel as a texture.*TextureObject"):
        k(1, 1, (12345, x, out, 1))
    s, _ = surface(np.zeros(4, np.int32), 32, S32)
    with pytest.raises(TypeError, match=r"sample1d_param_0.*TextureObject, got a SurfaceObject"):
        k(1, 1, (s, x, out, 1))
    tex, _ = array_texture(np.zeros(4, f32), F32, 32, [CLAMP])
    tex.free()
    with pytest.raises(TypeError, match=r"sample1d_param_0.*freed \(a stale handle"):
        k(1, 1, (tex, x, out, 1))
    with pytest.raises(TypeError, match=r"surf1d_write_zero_param_0.*surface"):
        mod.get_function("surf1d_write_zero")(1, 1, (7, 1))


def test_handle_from_memory_is_checked_in_the_kernel():
    """A handle the launch cannot see (loaded from memory) is validated by the code: garbage traps."""
    ptx = """.version 7.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 hp, .param .u64 outp)
{
    .reg .b64 %rd<4>;
    .reg .f32 %f<6>;
    ld.param.u64 %rd1, [hp];
    ld.param.u64 %rd2, [outp];
    ld.global.u64 %rd3, [%rd1];
    mov.f32 %f1, 0f3F000000;
    tex.1d.v4.f32.f32 {%f2, %f3, %f4, %f5}, [%rd3, {%f1}];
    st.global.f32 [%rd2], %f2;
    ret;
}
"""
    k = ptxjit.Module(ptx).get_function("k")
    tex, _ = array_texture(np.array([4.0, 5.0], f32), F32, 32, [CLAMP])
    out = np.zeros(1, f32)
    k(1, 1, (np.array([tex.ptr], np.uint64), out))
    assert out[0] == 4.0
    for bad in (0, 12345, tex.ptr + 1, tex.ptr ^ (3 << 48)):
        with pytest.raises(ptxjit.KernelTrap, match=r"not a live ptxjit.texture.TextureObject.*tex.1d"):
            k(1, 1, (np.array([bad], np.uint64), out))


def test_object_creation_refusals():
    desc = T.ChannelFormatDescriptor(32, 0, 0, 0, S32)
    arr = T.CUDAarray(desc, 4)
    res = T.ResourceDescriptor(T.cudaResourceTypeArray, cuArr=arr)
    with pytest.raises(T.TextureError, match="linear filtering needs a float"):
        T.TextureObject(res, T.TextureDescriptor((CLAMP,), T.cudaFilterModeLinear))
    with pytest.raises(T.TextureError, match="8- or 16-bit"):
        T.TextureObject(res, T.TextureDescriptor((CLAMP,), readMode=T.cudaReadModeNormalizedFloat))
    with pytest.raises(T.TextureError, match="3-channel"):
        T.ChannelFormatDescriptor(8, 8, 8, 0, U32)
    with pytest.raises(T.TextureError, match="expected 4 elements of int32"):
        arr.copy_from(np.zeros(5, np.int32))


def test_unsupported_forms_are_refused_at_load():
    base = """.version 7.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 hp)
{{
    .reg .b64 %rd<2>;
    .reg .f32 %f<9>;
    .reg .b32 %r<4>;
    ld.param.u64 %rd1, [hp];
    {body}
    ret;
}}
"""
    with pytest.raises(ptxjit.UnsupportedInstructionError, match="cube maps"):
        ptxjit.Module(base.format(body="tex.cube.v4.f32.f32 {%f1, %f2, %f3, %f4}, [%rd1, {%f5, %f6, %f7, %f8}];"))
    with pytest.raises(ptxjit.PTXValidationError, match="takes 2 coordinates"):
        ptxjit.Module(base.format(body="tex.2d.v4.f32.f32 {%f1, %f2, %f3, %f4}, [%rd1, {%f5}];"))
    with pytest.raises(ptxjit.PTXValidationError, match="destination must be a vector of 4"):
        ptxjit.Module(base.format(body="tex.2d.v4.f32.f32 {%f1, %f2}, [%rd1, {%f5, %f6}];"))
    with pytest.raises(ptxjit.PTXValidationError, match="needs one of .trap, .clamp, .zero"):
        ptxjit.Module(base.format(body="suld.b.1d.b32 {%r2}, [%rd1, {%r1}];"))
    with pytest.raises(ptxjit.PTXValidationError, match="coordinates: %f5 is .f32"):
        ptxjit.Module(base.format(body="sust.b.1d.b32.trap [%rd1, {%f5}], {%f1};"))
    with pytest.raises(ptxjit.UnsupportedInstructionError, match="formatted surface stores"):
        ptxjit.Module(base.format(body="sust.p.1d.b32.trap [%rd1, {%r1}], {%r2};"))
    with pytest.raises(ptxjit.UnsupportedInstructionError, match="only the queries"):
        ptxjit.Module(base.format(body="txq.num_samples.b32 %r1, [%rd1];"))


# Verdicts of ptxas 13.0 (sm_90) on texture/surface forms, recorded by assembling each one: the ISA
# table (isa/texture.py) must agree (True: ptxas accepts).
PTXAS_VERDICTS = [
    ("tex.1d.v4.f32.f32 {%f1, %f2, %f3, %f4}, [%rd1, {%f5}];", True),
    ("tex.1d.v4.f32.f32 {%f1, %f2, %f3, %f4}, [%rd1, {%f5, %f6}];", True),
    ("tex.1d.v4.f32.f32 {%f1, %f2, %f3, %f4}, [%rd1, {%f5, %f6, %f7}];", False),
    ("tex.3d.v4.f32.f32 {%f1, %f2, %f3, %f4}, [%rd1, {%f5, %f6, %f7}];", False),
    ("tex.a1d.v4.f32.f32 {%f1, %f2, %f3, %f4}, [%rd1, {%r5, %f6, %f7}];", False),
    ("tex.a2d.v4.s32.f32 {%r1, %r2, %r3, %r4}, [%rd1, {%r5, %f6, %f7, %f8}];", True),
    ("tex.cube.v4.f32.s32 {%f1, %f2, %f3, %f4}, [%rd1, {%r5, %r6, %r7, %r8}];", False),
    ("tex.2dms.v4.f32.f32 {%f1, %f2, %f3, %f4}, [%rd1, {%r5, %f6, %f7, %f8}];", False),
    ("tex.2dms.v4.f32.s32 {%f1, %f2, %f3, %f4}, [%rd1, {%r5, %r6, %r7, %r8}];", True),
    ("tex.2d.v2.f32.f32 {%f1, %f2}, [%rd1, {%f5, %f6}];", False),
    ("tex.2d.v2.f16x2.f32 {%r1, %r2}, [%rd1, {%f5, %f6}];", True),
    ("tex.2d.v4.f16x2.f32 {%r1, %r2, %r3, %r4}, [%rd1, {%f5, %f6}];", False),
    ("tex.level.2d.v4.f32.s32 {%f1, %f2, %f3, %f4}, [%rd1, {%r5, %r6}], %f7;", False),
    ("tex.grad.2d.v4.f32.f32 {%f1, %f2, %f3, %f4}, [%rd1, {%f5, %f6}], {%f7, %f8}, {%f9, %f10};", True),
    ("tex.2d.v4.f32.f32 {%f1, %f2}, [%rd1, {%f5, %f6}];", False),
    ("tld4.a.a2d.v4.f32.f32 {%f1, %f2, %f3, %f4}, [%rd1, {%r5, %f6, %f7, %f8}];", True),
    ("tld4.r.2d.v4.f32.f32 {%f1, %f2, %f3, %f4}, [%rd1, {%f5}];", False),
    ("txq.level.width.b32 %r1, [%rd1], %r2;", True),
    ("txq.width.b32 %rd2, [%rd1];", False),
    ("suq.memory_layout.b32 %r1, [%rd1];", True),
    ("suld.b.1d.v2.b64.zero {%rd2, %rd3}, [%rd1, {%r5, %r6}];", True),
    ("suld.b.3d.b32.trap {%r1}, [%rd1, {%r5, %r6, %r7}];", False),
    ("suld.b.a2d.b32.trap {%r1}, [%rd1, {%r5, %r6, %r7, %r8}];", True),
    ("suld.b.2d.b32.trap {%f1}, [%rd1, {%r5, %r6}];", True),
    ("suld.b.2d.b32.trap {%r1}, [%rd1, {%f5, %f6}];", False),
    ("sust.b.2d.v4.b8.zero [%rd1, {%r5, %r6}], {%rs1, %rs2, %rs3, %rs4};", True),
    ("sust.p.2d.v4.b32.trap [%rd1, {%r5, %r6}], {%r1, %r2, %r3, %r4};", True),
    ("sust.p.2d.f32.trap [%rd1, {%r5, %r6}], {%f1};", False),
    ("sust.p.2d.b8.trap [%rd1, {%r5, %r6}], {%rs1};", False),
]


@pytest.mark.parametrize("body,valid", PTXAS_VERDICTS, ids=[b.split()[0] + f"-{i}" for i, (b, _) in
                                                             enumerate(PTXAS_VERDICTS)])
def test_isa_table_agrees_with_ptxas(body, valid):
    from ptxjit.frontend.parser import parse
    from ptxjit.isa import Context, check, lookup

    text = f""".version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 hp)
{{
    .reg .b64 %rd<4>;
    .reg .f32 %f<12>;
    .reg .b32 %r<12>;
    .reg .b16 %rs<6>;
    ld.param.u64 %rd1, [hp];
    {body}
    ret;
}}
"""
    m = parse(text, "t.ptx")
    fn = m.functions["k"]
    ins = fn.instructions[1]
    v = check(lookup(ins.opcode), ins, Context.for_function(m, fn))
    assert v.ok == valid, v.reason


def test_cupy_style_rawmodule_with_texture_objects():
    """The CuPy workflow: RawModule from CUDA source (NVRTC), a TextureObject argument."""
    if not ptxjit.cuda.nvrtc_available():
        pytest.skip("NVRTC is not available")
    src = (Path(__file__).parent / "data" / "texture" / "texture.cu").read_text()
    k = ptxjit.RawModule(code=src).get_function("sample2d")
    data = np.arange(20, dtype=f32).reshape(4, 5)
    tex, _ = array_texture(data, F32, 32, [CLAMP, CLAMP], linear=True)
    x, y = np.array([1.0, 2.25], f32), np.array([1.0, 3.0], f32)
    out = np.zeros((2, 4), f32)
    k((1,), (32,), (tex, x, y, out, np.int32(2)))
    want = ref_fetch(as_texels(data[..., None], 1, F32, 32, False)[None, None], [x, y], [CLAMP, CLAMP], True, False)
    np.testing.assert_allclose(out, want, rtol=1e-6, atol=1e-6)
