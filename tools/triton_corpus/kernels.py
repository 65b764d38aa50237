"""Triton kernels of the corpus: the usual tutorial shapes, written for small problem sizes.

Compiled without a GPU by generate.py (for sm_80 and sm_90); never launched through Triton here.
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def vector_add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)


@triton.jit
def softmax(out_ptr, in_ptr, in_row_stride, out_row_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(in_ptr + row * in_row_stride + cols, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    den = tl.sum(num, axis=0)
    tl.store(out_ptr + row * out_row_stride + cols, num / den, mask=mask)


@triton.jit
def matmul(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,
           BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
           ACC_TYPE: tl.constexpr, INPUT_PRECISION: tl.constexpr):
    """C = A @ B, row-major A (M x K), B (K x N), C (M x N); grouped program order as in the tutorial."""
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m

    offs_am = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_bn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_am[:, None] * stride_am + offs_k[None, :]
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_bn[None, :]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=ACC_TYPE)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_K, other=0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0)
        acc = tl.dot(a, b, acc, input_precision=INPUT_PRECISION, out_dtype=ACC_TYPE)
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K * stride_bk
    c = acc.to(c_ptr.dtype.element_ty)
    offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c_ptrs = c_ptr + offs_cm[:, None] * stride_cm + offs_cn[None, :]
    tl.store(c_ptrs, c, mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))


@triton.jit
def layer_norm_fwd(x_ptr, y_ptr, w_ptr, b_ptr, mean_ptr, rstd_ptr, stride, N, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    y_ptr += row * stride
    x_ptr += row * stride
    _mean = tl.zeros([BLOCK], dtype=tl.float32)
    for off in range(0, N, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        a = tl.load(x_ptr + cols, mask=cols < N, other=0.0).to(tl.float32)
        _mean += a
    mean = tl.sum(_mean, axis=0) / N
    _var = tl.zeros([BLOCK], dtype=tl.float32)
    for off in range(0, N, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + cols, mask=cols < N, other=0.0).to(tl.float32)
        x = tl.where(cols < N, x - mean, 0.0)
        _var += x * x
    var = tl.sum(_var, axis=0) / N
    rstd = 1 / tl.sqrt(var + eps)
    tl.store(mean_ptr + row, mean)
    tl.store(rstd_ptr + row, rstd)
    for off in range(0, N, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        mask = cols < N
        w = tl.load(w_ptr + cols, mask=mask)
        b = tl.load(b_ptr + cols, mask=mask)
        x = tl.load(x_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        x_hat = (x - mean) * rstd
        tl.store(y_ptr + cols, x_hat * w + b, mask=mask)


@triton.jit
def attention_fwd(q_ptr, k_ptr, v_ptr, o_ptr, sm_scale, seq_len, stride_h, stride_s,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, HEAD_DIM: tl.constexpr):
    """Non-causal flash attention forward, fp16 in/out, fp32 online softmax; grid (seq/BLOCK_M, heads)."""
    start_m = tl.program_id(0)
    head = tl.program_id(1)
    q_ptr += head * stride_h
    k_ptr += head * stride_h
    v_ptr += head * stride_h
    o_ptr += head * stride_h
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(q_ptr + offs_m[:, None] * stride_s + offs_d[None, :])
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32) + 1.0
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    qk_scale = sm_scale * 1.44269504
    for start_n in range(0, seq_len, BLOCK_N):
        kt = tl.load(k_ptr + (start_n + offs_n)[None, :] * stride_s + offs_d[:, None])
        qk = tl.dot(q, kt)
        m_ij = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
        qk = qk * qk_scale - m_ij[:, None]
        p = tl.math.exp2(qk)
        l_ij = tl.sum(p, 1)
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + l_ij
        acc = acc * alpha[:, None]
        v = tl.load(v_ptr + (start_n + offs_n)[:, None] * stride_s + offs_d[None, :])
        acc = tl.dot(p.to(tl.float16), v, acc)
        m_i = m_ij
    acc = acc / l_i[:, None]
    tl.store(o_ptr + offs_m[:, None] * stride_s + offs_d[None, :], acc.to(tl.float16))


@triton.jit
def row_sum(x_ptr, out_ptr, n_rows, n_cols, stride, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    pid = tl.program_id(0)
    rows = pid * BLOCK_R + tl.arange(0, BLOCK_R)
    acc = tl.zeros([BLOCK_R, BLOCK_C], dtype=tl.float32)
    for off in range(0, n_cols, BLOCK_C):
        cols = off + tl.arange(0, BLOCK_C)
        m = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
        acc += tl.load(x_ptr + rows[:, None] * stride + cols[None, :], mask=m, other=0.0)
    tl.store(out_ptr + rows, tl.sum(acc, axis=1), mask=rows < n_rows)


@triton.jit
def atomics(x_ptr, bins_ptr, total_ptr, wsum_ptr, hist_ptr, n, BLOCK: tl.constexpr):
    """total += sum(x) (one fp32 atomic per program); wsum[bin] += x (fp32, per element);
    hist[bin] += 1 (int32, per element)."""
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    b = tl.load(bins_ptr + offs, mask=mask, other=0)
    tl.atomic_add(total_ptr, tl.sum(x, axis=0))
    tl.atomic_add(wsum_ptr + b, x, mask=mask)
    tl.atomic_add(hist_ptr + b, 1, mask=mask)
