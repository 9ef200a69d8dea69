#!/usr/bin/env python3
"""Measure one GPU's kernel times in the shapes hexplan's cost model prices.

Writes, into OUTDIR (default ./kernels-out):

  mlp-<model>.csv   per-layer non-attention operator times in vidur's
                    mlp.csv layout (time_stats.<op>.median in ms, the
                    shape columns, num_tokens, num_tensor_parallel_workers),
                    for Llama-2-7B, Llama-2-70B, Llama-3-8B and Llama-3-70B
                    at TP 1, 2, 4, 8 (one GPU's shard); bench/cost_accuracy
                    reads them as it reads vidur's (OUTDIR as its
                    OWN_DIR/GPU, e.g. bench/data/h200).
  attention.csv     FlashAttention (PyTorch SDPA) prefill and decode times.
  step.csv          whole Llama-3.1-8B forward steps (32 layers and the LM
                    head, random weights) captured as one CUDA graph: decode
                    at a batch and context, and prefill of one prompt.
  peaks.txt         the GPU's measured dense BF16 matmul rate and memory
                    bandwidth, beside its name and the software versions.
  fp8.csv           the same layer's four GEMMs in FP8 (e4m3, per-tensor
                    scales, torch._scaled_mm) for Llama-3-8B and -70B.
  moe.csv           Qwen3-30B-A3B's non-attention layer on one GPU: its
                    projections and a top-8 of 128 expert MoE (router,
                    permutation, grouped GEMMs by torch._grouped_mm, weighted
                    combine), at 1-4,096 tokens.
  moe_fused.csv     the same MoE as the engines run it: the routed rows
                    sorted by expert and padded to the block, one Triton
                    GEMM per projection that gathers its rows and applies
                    the routing weight, a sum over the top 8; with the
                    routing (router GEMM, softmax, top-k) and the sort
                    (done here in PyTorch, one kernel in the engines) timed
                    apart.

Each time is the median over trials of one CUDA-graph replay of several
back-to-back launches (kernel time, no Python or launch overhead), with the
weights rotated over copies that together exceed the L2 cache so a GEMM
reads its weights from memory as it does in a real forward pass.  Fused
RMSNorm, rotary embedding and SiLU-and-mul are single Triton kernels (as
the serving engines' custom ops are); where Triton fails, PyTorch's own
operators are timed and the log says so.

usage: python3 bench/gpu/kernels.py [OUTDIR] [--quick] [--parts LIST]
  LIST: comma-separated of peaks, step, attention, mlp, fp8, moe, moe_engine
  (default all)
Needs a CUDA GPU and PyTorch (with Triton).  bench/README.md (cost_accuracy)
holds the numbers one H200 gave and how they compare with the cost model.
"""
import math
import os
import statistics
import sys
import time

import torch

OUT = sys.argv[1] if len(sys.argv) > 1 and not sys.argv[1].startswith("--") else "kernels-out"
PARTS = "peaks,step,attention,mlp,fp8,moe,moe_engine"
if "--parts" in sys.argv:
    PARTS = sys.argv[sys.argv.index("--parts") + 1]
QUICK = "--quick" in sys.argv
os.makedirs(OUT, exist_ok=True)
DEV = "cuda"
DT = torch.bfloat16
L2_ROTATE_BYTES = 256 << 20  # > the L2 of any current GPU (H100/H200: 50-60 MB)
T0 = time.time()
DEADLINE_S = float(os.environ.get("KERNELS_DEADLINE_S", "1e9"))  # no new model after this
LOG = open(os.path.join(OUT, "log.txt"), "w")


def log(*a):
    s = " ".join(str(x) for x in a)
    print(s, flush=True)
    LOG.write(s + "\n")
    LOG.flush()


MODELS = [
    # name, hidden, heads, kv heads, ffn, vocab
    ("Llama-2-7b-hf", 4096, 32, 32, 11008, 32000),
    ("Llama-2-70b-hf", 8192, 64, 8, 28672, 32000),
    ("Meta-Llama-3-8B", 4096, 32, 8, 14336, 128256),
    ("Meta-Llama-3-70B", 8192, 64, 8, 28672, 128256),
]
TOKENS = [1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 128, 160, 192, 224, 256, 320, 384,
          448, 512, 640, 768, 896, 1024] + list(range(1280, 4097, 256))
if QUICK:
    TOKENS = [1, 16, 128, 1024, 4096]
TPS = [1, 2, 4, 8]

# ---------------------------------------------------------------- Triton ops
TRITON = True
try:
    import triton
    import triton.language as tl

    @triton.jit
    def _rms_k(X, W, Y, H, eps, BLOCK: tl.constexpr):
        row = tl.program_id(0).to(tl.int64)
        offs = tl.arange(0, BLOCK)
        m = offs < H
        x = tl.load(X + row * H + offs, mask=m, other=0.0).to(tl.float32)
        var = tl.sum(x * x, axis=0) / H
        r = 1.0 / tl.sqrt(var + eps)
        w = tl.load(W + offs, mask=m, other=0.0).to(tl.float32)
        tl.store(Y + row * H + offs, (x * r * w).to(Y.dtype.element_ty), mask=m)

    @triton.jit
    def _silu_k(X, Y, F, BLOCK: tl.constexpr):
        row = tl.program_id(0).to(tl.int64)
        col = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
        m = col < F
        g = tl.load(X + row * 2 * F + col, mask=m, other=0.0).to(tl.float32)
        u = tl.load(X + row * 2 * F + F + col, mask=m, other=0.0).to(tl.float32)
        y = g / (1.0 + tl.exp(-g)) * u
        tl.store(Y + row * F + col, y.to(Y.dtype.element_ty), mask=m)

    @triton.jit
    def _rope_k(QKV, POS, COS, SIN, stride, HALF: tl.constexpr):
        t = tl.program_id(0).to(tl.int64)
        h = tl.program_id(1)
        p = tl.load(POS + t).to(tl.int64)
        o = tl.arange(0, HALF)
        c = tl.load(COS + p * HALF + o)
        s = tl.load(SIN + p * HALF + o)
        base = QKV + t * stride + h * 2 * HALF
        x1 = tl.load(base + o).to(tl.float32)
        x2 = tl.load(base + HALF + o).to(tl.float32)
        tl.store(base + o, (x1 * c - x2 * s).to(QKV.dtype.element_ty))
        tl.store(base + HALF + o, (x2 * c + x1 * s).to(QKV.dtype.element_ty))
except Exception as e:  # pragma: no cover - depends on the machine
    TRITON = False
    log("triton unavailable:", repr(e))


def rms(x, w, y):
    if TRITON:
        T, H = x.shape
        _rms_k[(T,)](x, w, y, H, 1e-5, BLOCK=triton.next_power_of_2(H), num_warps=8)
    else:
        torch.mul(torch.nn.functional.rms_norm(x, (x.shape[1],), eps=1e-5), w, out=y)


def silu_mul(x, y):
    if TRITON:
        T, F = y.shape
        _silu_k[(T, triton.cdiv(F, 1024))](x, y, F, BLOCK=1024, num_warps=4)
    else:
        F = y.shape[1]
        torch.mul(torch.nn.functional.silu(x[:, :F]), x[:, F:], out=y)


def rope(qkv, pos, cos, sin, nrot, hd):
    if TRITON:
        T = qkv.shape[0]
        _rope_k[(T, nrot)](qkv, pos, cos, sin, qkv.stride(0), HALF=hd // 2, num_warps=1)
    else:
        half = hd // 2
        v = qkv[:, : nrot * hd].view(-1, nrot, 2, half)
        c = cos[pos].unsqueeze(1)
        s = sin[pos].unsqueeze(1)
        x1, x2 = v[:, :, 0].float(), v[:, :, 1].float()
        v[:, :, 0] = (x1 * c - x2 * s).to(qkv.dtype)
        v[:, :, 1] = (x2 * c + x1 * s).to(qkv.dtype)


def check_triton():
    """Compare the Triton ops with PyTorch once; fall back if they differ."""
    global TRITON
    if not TRITON:
        return
    try:
        T, H, F, hd, nrot = 7, 4096, 1000, 128, 3
        x = torch.randn(T, H, device=DEV, dtype=DT)
        w = torch.randn(H, device=DEV, dtype=DT)
        y = torch.empty_like(x)
        rms(x, w, y)
        ref = (torch.nn.functional.rms_norm(x.float(), (H,), eps=1e-5) * w.float()).to(DT)
        ok = torch.allclose(y.float(), ref.float(), rtol=2e-2, atol=2e-2)
        a = torch.randn(T, 2 * F, device=DEV, dtype=DT)
        b = torch.empty(T, F, device=DEV, dtype=DT)
        silu_mul(a, b)
        ref = (torch.nn.functional.silu(a[:, :F].float()) * a[:, F:].float()).to(DT)
        ok = ok and torch.allclose(b.float(), ref.float(), rtol=2e-2, atol=2e-2)
        q = torch.randn(T, (nrot + 1) * hd, device=DEV, dtype=DT)
        q0 = q.clone()
        pos = torch.arange(T, device=DEV, dtype=torch.int32)
        ang = torch.arange(64, device=DEV).float()[None, :] * 0.01 * torch.arange(16, device=DEV).float()[:, None]
        cos, sin = ang.cos().contiguous(), ang.sin().contiguous()
        rope(q, pos, cos, sin, nrot, hd)
        v = q0[:, : nrot * hd].view(T, nrot, 2, 64).float()
        c, s = cos[pos.long()].unsqueeze(1), sin[pos.long()].unsqueeze(1)
        r1, r2 = v[:, :, 0] * c - v[:, :, 1] * s, v[:, :, 1] * c + v[:, :, 0] * s
        got = q[:, : nrot * hd].view(T, nrot, 2, 64).float()
        ok = ok and torch.allclose(got[:, :, 0], r1, rtol=2e-2, atol=2e-2)
        ok = ok and torch.allclose(got[:, :, 1], r2, rtol=2e-2, atol=2e-2)
        ok = ok and torch.equal(q[:, nrot * hd:], q0[:, nrot * hd:])
        torch.cuda.synchronize()
        if not ok:
            TRITON = False
            log("triton ops differ from PyTorch: timing PyTorch's operators")
    except Exception as e:
        TRITON = False
        log("triton ops failed (%r): timing PyTorch's operators" % (e,))


# ---------------------------------------------------------------- timing
def time_graph(fns, budget_ms=3.0, trials=5):
    """Median ms of one call, over TRIALS replays of a CUDA graph that runs
    the callables FNS (variants over rotated buffers) back to back."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for f in fns:
            f()
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    for f in fns:
        f()
    b.record()
    b.synchronize()
    one = max(a.elapsed_time(b) / len(fns), 1e-3)
    reps = max(len(fns), min(64, int(math.ceil(budget_ms / one))))
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for i in range(reps):
            fns[i % len(fns)]()
    g.replay()
    torch.cuda.synchronize()
    ts = []
    for _ in range(trials):
        a.record()
        g.replay()
        b.record()
        b.synchronize()
        ts.append(a.elapsed_time(b) / reps)
    del g
    return statistics.median(ts)


def copies_for(nbytes):
    return max(1, min(16, int(math.ceil(L2_ROTATE_BYTES / max(nbytes, 1)))))


def gemm_op(T, K, N):
    """mm of [T, K] by a [K, N] weight (stored [N, K] as a linear layer's)."""
    nc = copies_for(K * N * 2)
    ws = [torch.randn(N, K, device=DEV, dtype=DT) * 0.02 for _ in range(nc)]
    x = torch.randn(T, K, device=DEV, dtype=DT)
    y = torch.empty(T, N, device=DEV, dtype=DT)
    fns = [(lambda w=w: torch.mm(x, w.t(), out=y)) for w in ws]
    ms = time_graph(fns)
    del ws, x, y
    return ms


def layer_ops(T, H, nh, nkv, F, tp):
    hd = H // nh
    nhl, nkvl = nh // tp, max(1, nkv // tp)
    qkv_n = (nhl + 2 * nkvl) * hd
    out = {}
    # activations rotated too where they are large
    x = torch.randn(T, H, device=DEV, dtype=DT)
    w = torch.randn(H, device=DEV, dtype=DT)
    y = torch.empty_like(x)
    ms = time_graph([lambda: rms(x, w, y)])
    out["input_layernorm"] = ms
    out["post_attention_layernorm"] = ms
    out["attn_pre_proj"] = gemm_op(T, H, qkv_n)
    qkv = torch.randn(T, qkv_n, device=DEV, dtype=DT)
    pos = (torch.arange(T, device=DEV, dtype=torch.int32) % 4096).contiguous()
    ang = torch.arange(hd // 2, device=DEV).float()[None, :] * torch.arange(4096, device=DEV).float()[:, None] * 1e-3
    cos, sin = ang.cos().contiguous(), ang.sin().contiguous()
    out["attn_rope"] = time_graph([lambda: rope(qkv, pos, cos, sin, nhl + nkvl, hd)])
    out["attn_post_proj"] = gemm_op(T, nhl * hd, H)
    out["mlp_up_proj"] = gemm_op(T, H, 2 * F // tp)
    g = torch.randn(T, 2 * F // tp, device=DEV, dtype=DT)
    a = torch.empty(T, F // tp, device=DEV, dtype=DT)
    out["mlp_act"] = time_graph([lambda: silu_mul(g, a)])
    out["mlp_down_proj"] = gemm_op(T, F // tp, H)
    r = torch.randn(T, H, device=DEV, dtype=DT)
    out["add"] = time_graph([lambda: torch.add(x, r, out=y)])
    del x, y, qkv, g, a, r
    return out


OPS = ["input_layernorm", "attn_pre_proj", "attn_rope", "attn_post_proj",
       "post_attention_layernorm", "mlp_up_proj", "mlp_act", "mlp_down_proj", "add"]


def mlp_tables():
    for name, H, nh, nkv, F, vocab in MODELS:
        if time.time() - T0 > DEADLINE_S:
            log("mlp %s skipped: past %d s" % (name, DEADLINE_S))
            continue
        path = os.path.join(OUT, "mlp-%s.csv" % name)
        t0 = time.time()
        with open(path, "w") as f:
            f.write(",".join(["time_stats.%s.median" % o for o in OPS] +
                             ["n_head", "n_kv_head", "n_embd", "n_expanded_embd", "vocab_size",
                              "use_gated_mlp", "num_tokens", "num_tensor_parallel_workers"]) + "\n")
            for tp in TPS:
                for T in TOKENS:
                    o = layer_ops(T, H, nh, nkv, F, tp)
                    f.write(",".join(["%.5f" % o[k] for k in OPS] +
                                     [str(nh), str(nkv), str(H), str(F), str(vocab), "True",
                                      str(T), str(tp)]) + "\n")
                f.flush()
        torch.cuda.empty_cache()
        log("mlp %s: %.1f s" % (name, time.time() - t0))


# ---------------------------------------------------------------- attention
def sdpa_ctx():
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
        sdpa_kernel([SDPBackend.FLASH_ATTENTION])
        return (lambda: sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION]),
                "flash|efficient")
    except Exception:
        import contextlib
        return contextlib.nullcontext, "default"


def attn_call(q, k, v, causal):
    return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal,
                                                            enable_gqa=k.shape[1] != q.shape[1])


def time_attn(q, k, v, causal, ctx, backend, budget_ms=3.0):
    """Time attention under the FlashAttention/efficient backends; where
    neither takes the shape, under PyTorch's choice (the backend column says)."""
    try:
        with ctx():
            return time_graph([lambda: attn_call(q, k, v, causal)], budget_ms), backend
    except Exception as e:
        log("attention %s under %s failed (%s): default backend" % (tuple(q.shape), backend, str(e)[:120]))
        return time_graph([lambda: attn_call(q, k, v, causal)], budget_ms), "default"


def attention_table():
    path = os.path.join(OUT, "attention.csv")
    ctx, backend = sdpa_ctx()
    with open(path, "w") as f:
        f.write("phase,n_head,n_kv_head,head_dim,batch,q_tokens,context,ms,backend\n")
        for nh, nkv in [(32, 8), (8, 1)]:  # Llama-3 8B at TP1; 70B's shard at TP8
            hd = 128
            for T in [128, 512, 1024, 2048, 4096]:
                q = torch.randn(1, nh, T, hd, device=DEV, dtype=DT)
                k = torch.randn(1, nkv, T, hd, device=DEV, dtype=DT)
                v = torch.randn(1, nkv, T, hd, device=DEV, dtype=DT)
                ms, be = time_attn(q, k, v, True, ctx, backend)
                f.write("prefill,%d,%d,%d,1,%d,%d,%.5f,%s\n" % (nh, nkv, hd, T, T, ms, be))
            for B in [1, 8, 32, 128]:
                for L in [512, 2048, 4096]:
                    q = torch.randn(B, nh, 1, hd, device=DEV, dtype=DT)
                    k = torch.randn(B, nkv, L, hd, device=DEV, dtype=DT)
                    v = torch.randn(B, nkv, L, hd, device=DEV, dtype=DT)
                    ms, be = time_attn(q, k, v, False, ctx, backend)
                    f.write("decode,%d,%d,%d,%d,1,%d,%.5f,%s\n" % (nh, nkv, hd, B, L, ms, be))
            f.flush()
    torch.cuda.empty_cache()
    log("attention done")


# ---------------------------------------------------------------- whole steps
class Llama:
    """Llama-3.1-8B's shapes with random weights, one GPU."""

    def __init__(self, H=4096, nh=32, nkv=8, F=14336, L=32, vocab=128256):
        self.H, self.nh, self.nkv, self.F, self.L, self.vocab = H, nh, nkv, F, L, vocab
        self.hd = H // nh
        s = 0.02
        mk = lambda *sh: torch.randn(*sh, device=DEV, dtype=DT) * s
        self.layers = [dict(n1=torch.ones(H, device=DEV, dtype=DT), n2=torch.ones(H, device=DEV, dtype=DT),
                            qkv=mk((nh + 2 * nkv) * self.hd, H), o=mk(H, nh * self.hd),
                            up=mk(2 * F, H), down=mk(H, F)) for _ in range(L)]
        self.norm = torch.ones(H, device=DEV, dtype=DT)
        self.head = mk(vocab, H)
        ang = torch.arange(self.hd // 2, device=DEV).float()[None, :] * torch.arange(8192, device=DEV).float()[:, None] * 1e-3
        self.cos, self.sin = ang.cos().contiguous(), ang.sin().contiguous()

    def step(self, B, q_tokens, ctx, kv):
        """One forward step: B sequences, each Q_TOKENS new tokens over a
        context of CTX (KV already in KV), returns a callable."""
        H, nh, nkv, hd, F = self.H, self.nh, self.nkv, self.hd, self.F
        T = B * q_tokens
        x = torch.randn(T, H, device=DEV, dtype=DT)
        h = torch.empty_like(x)
        qkv = torch.empty(T, (nh + 2 * nkv) * hd, device=DEV, dtype=DT)
        att = torch.empty(T, nh * hd, device=DEV, dtype=DT)
        up = torch.empty(T, 2 * F, device=DEV, dtype=DT)
        act = torch.empty(T, F, device=DEV, dtype=DT)
        tmp = torch.empty_like(x)
        logits = torch.empty(B, self.vocab, device=DEV, dtype=DT)
        pos = (torch.arange(q_tokens, device=DEV, dtype=torch.int32) + (ctx - q_tokens)).repeat(B).contiguous()
        causal = q_tokens > 1

        def run():
            for i, w in enumerate(self.layers):
                rms(x, w["n1"], h)
                torch.mm(h, w["qkv"].t(), out=qkv)
                rope(qkv, pos, self.cos, self.sin, nh + nkv, hd)
                q = qkv[:, : nh * hd].view(B, q_tokens, nh, hd).transpose(1, 2)
                k, v = kv[i]
                # the new tokens' K/V would be written into the cache here;
                # the cache already holds CTX tokens
                o = attn_call(q, k, v, causal)
                att.copy_(o.transpose(1, 2).reshape(T, nh * hd))
                torch.mm(att, w["o"].t(), out=tmp)
                x.add_(tmp)
                rms(x, w["n2"], h)
                torch.mm(h, w["up"].t(), out=up)
                silu_mul(up, act)
                torch.mm(act, w["down"].t(), out=tmp)
                x.add_(tmp)
            last = x.view(B, q_tokens, H)[:, -1].contiguous()
            rms(last, self.norm, h[:B])
            torch.mm(h[:B], self.head.t(), out=logits)
        return run


def step_table():
    path = os.path.join(OUT, "step.csv")
    m = Llama()
    ctx_m, backend = sdpa_ctx()
    with open(path, "w") as f:
        f.write("model,phase,batch,q_tokens,context,ms,backend\n")
        cases = [("decode", B, 1, L) for B in [1, 16, 64, 128] for L in [1024]] + \
                [("decode", 64, 1, 4096)] + \
                [("prefill", 1, T, T) for T in [512, 2048, 4096]]
        for phase, B, qt, L in cases:
            kv = [(torch.randn(B, m.nkv, L, m.hd, device=DEV, dtype=DT),
                   torch.randn(B, m.nkv, L, m.hd, device=DEV, dtype=DT)) for _ in range(m.L)]
            if qt > 1:  # causal prefill over its own tokens
                kv = [(k[:, :, :qt], v[:, :, :qt]) for k, v in kv]
            try:
                with ctx_m():
                    ms, be = time_graph([m.step(B, qt, L, kv)], budget_ms=20), backend
            except Exception as e:
                log("step under %s failed (%s): default backend" % (backend, str(e)[:120]))
                ms, be = time_graph([m.step(B, qt, L, kv)], budget_ms=20), "default"
            f.write("llama-3.1-8b,%s,%d,%d,%d,%.4f,%s\n" % (phase, B, qt, L, ms, be))
            f.flush()
            log("step %s B=%d q=%d ctx=%d: %.3f ms" % (phase, B, qt, L, ms))
            del kv
            torch.cuda.empty_cache()


# ---------------------------------------------------------------- fp8
FP8 = torch.float8_e4m3fn


def fp8_layer(T, H, nh, nkv, F, tp):
    """Per-layer GEMM ms with FP8 weights and activations (e4m3,
    per-tensor scales, BF16 out).  The activation's quantization is left
    out: the engines fuse it into the norm or activation kernel before the
    GEMM.  _scaled_mm wants rows in multiples of 16: a smaller batch is
    padded, as the engines' FP8 path pads."""
    hd = H // nh
    nhl, nkvl = nh // tp, max(1, nkv // tp)
    M = max(16, (T + 15) // 16 * 16)
    one = torch.ones((), device=DEV, dtype=torch.float32)
    out = {}

    def gemm(K, N):
        nc = copies_for(K * N)
        ws = [(torch.randn(N, K, device=DEV, dtype=DT) * 0.02).to(FP8) for _ in range(nc)]
        q = (torch.randn(M, K, device=DEV, dtype=DT) * 0.5).to(FP8)
        return time_graph([(lambda w=w: torch._scaled_mm(q, w.t(), scale_a=one, scale_b=one,
                                                           out_dtype=DT)) for w in ws])

    out["attn_pre_proj"] = gemm(H, (nhl + 2 * nkvl) * hd)
    out["attn_post_proj"] = gemm(nhl * hd, H)
    out["mlp_up_proj"] = gemm(H, 2 * F // tp)
    out["mlp_down_proj"] = gemm(F // tp, H)
    return out


def fp8_table():
    path = os.path.join(OUT, "fp8.csv")
    toks = [1, 16, 64, 256, 1024, 4096]
    with open(path, "w") as f:
        f.write("model,tp,num_tokens,attn_pre_proj,attn_post_proj,mlp_up_proj,mlp_down_proj,gemm_ms\n")
        for name, H, nh, nkv, F, vocab in MODELS[2:]:
            for tp in TPS:
                for T in toks:
                    o = fp8_layer(T, H, nh, nkv, F, tp)
                    f.write("%s,%d,%d,%.5f,%.5f,%.5f,%.5f,%.5f\n" % (
                        name, tp, T, o["attn_pre_proj"], o["attn_post_proj"], o["mlp_up_proj"],
                        o["mlp_down_proj"], sum(o.values())))
            f.flush()
    torch.cuda.empty_cache()
    log("fp8 done")


# ---------------------------------------------------------------- moe
class QwenDense:
    """Qwen3-30B-A3B's layer ops around its MoE, on one GPU: the input norm,
    QKV with its per-head q/k norm, rotary, the output projection and its
    residual add (run), then the post-attention norm into h."""

    def __init__(self, T, H=2048, nh=32, nkv=4, hd=128):
        mk = lambda *sh: torch.randn(*sh, device=DEV, dtype=DT) * 0.02
        self.T, self.nh, self.nkv, self.hd = T, nh, nkv, hd
        self.x = torch.randn(T, H, device=DEV, dtype=DT)
        self.h, self.tmp = torch.empty_like(self.x), torch.empty_like(self.x)
        self.n1 = torch.ones(H, device=DEV, dtype=DT)
        self.qn = torch.ones(hd, device=DEV, dtype=DT)
        self.w_qkv, self.w_o = mk((nh + 2 * nkv) * hd, H), mk(H, nh * hd)
        self.qkv = torch.empty(T, (nh + 2 * nkv) * hd, device=DEV, dtype=DT)
        self.att = torch.randn(T, nh * hd, device=DEV, dtype=DT)
        self.pos = (torch.arange(T, device=DEV, dtype=torch.int32) % 4096).contiguous()
        ang = torch.arange(hd // 2, device=DEV).float()[None, :] * torch.arange(4096, device=DEV).float()[:, None] * 1e-3
        self.cos, self.sin = ang.cos().contiguous(), ang.sin().contiguous()

    def run(self):
        T, nh, nkv, hd = self.T, self.nh, self.nkv, self.hd
        rms(self.x, self.n1, self.h)
        torch.mm(self.h, self.w_qkv.t(), out=self.qkv)
        v = self.qkv.view(T, nh + 2 * nkv, hd)
        v[:, : nh + nkv] = torch.nn.functional.rms_norm(v[:, : nh + nkv], (hd,), self.qn, 1e-6)
        rope(self.qkv, self.pos, self.cos, self.sin, nh + nkv, hd)
        torch.mm(self.att, self.w_o.t(), out=self.tmp)
        self.x.add_(self.tmp)
        rms(self.x, self.n1, self.h)


def moe_block(T, H=2048, nh=32, nkv=4, hd=128, E=128, k=8, Fm=768):
    """Qwen3-30B-A3B's non-attention layer on one GPU, as a callable."""
    mk = lambda *sh: torch.randn(*sh, device=DEV, dtype=DT) * 0.02
    d = QwenDense(T, H, nh, nkv, hd)
    x, h = d.x, d.h
    w_r = mk(E, H)
    w_gu = mk(E, 2 * Fm, H).transpose(-2, -1)  # [E, H, 2Fm], column-major per expert
    w_d = mk(E, H, Fm).transpose(-2, -1)  # [E, Fm, H]
    act = torch.empty(T * k, Fm, device=DEV, dtype=DT)
    ones = torch.ones(T * k, device=DEV, dtype=torch.int32)

    def run():
        d.run()
        logits = torch.mm(h, w_r.t())
        topv, topi = torch.topk(logits, k, dim=1)
        wts = torch.softmax(topv.float(), dim=1).view(-1)
        flat = topi.view(-1)
        order = torch.argsort(flat, stable=True)
        counts = torch.zeros(E, device=DEV, dtype=torch.int32).scatter_add_(0, flat, ones)
        offs = torch.cumsum(counts, 0, dtype=torch.int32)
        src = order // k
        xs = h.index_select(0, src)
        gu = torch._grouped_mm(xs, w_gu, offs=offs)
        silu_mul(gu, act)
        dn = torch._grouped_mm(act, w_d, offs=offs)
        dn = dn * wts[order].unsqueeze(1).to(DT)
        y = torch.zeros(T, H, device=DEV, dtype=DT).index_add_(0, src, dn)
        x.add_(y)
    return run


# The engines' MoE: one Triton GEMM per projection over the routed rows
# sorted by expert and padded to the block size (the design vLLM's and
# SGLang's fused_moe use), the gather of a token's row and the routing
# weight folded into the GEMMs, then a sum over the top-k.  Written here
# from that description; the block shapes follow vLLM's tuned H200 table
# for 128 experts of width 768 (its configs/E=128,N=768,device_name=
# NVIDIA_H200.json).
if TRITON:
    @triton.jit
    def _moe_gemm(A, B, C, SORTED, EXPERT, NPAD, W, N, K, num_valid,
                  stride_am, stride_be, stride_bn, stride_bk, stride_cm,
                  TOPK: tl.constexpr, GATHER: tl.constexpr, MUL_W: tl.constexpr,
                  BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
        pid_m = tl.program_id(0)
        pid_n = tl.program_id(1)
        if pid_m * BM >= tl.load(NPAD):
            return
        offs_m = pid_m * BM + tl.arange(0, BM)
        tok = tl.load(SORTED + offs_m)
        valid = tok < num_valid
        tok = tl.where(valid, tok, 0)
        e = tl.load(EXPERT + pid_m).to(tl.int64)
        if GATHER:
            arow = tok // TOPK
        else:
            arow = tok
        offs_n = pid_n * BN + tl.arange(0, BN)
        offs_k = tl.arange(0, BK)
        a_ptrs = A + arow.to(tl.int64)[:, None] * stride_am + offs_k[None, :]
        b_ptrs = B + e * stride_be + offs_n[None, :] * stride_bn + offs_k[:, None] * stride_bk
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, tl.cdiv(K, BK)):
            kmask = offs_k < K - k * BK
            a = tl.load(a_ptrs, mask=valid[:, None] & kmask[None, :], other=0.0)
            b = tl.load(b_ptrs, mask=kmask[:, None] & (offs_n[None, :] < N), other=0.0)
            acc += tl.dot(a, b)
            a_ptrs += BK
            b_ptrs += BK * stride_bk
        if MUL_W:
            acc = acc * tl.load(W + tok, mask=valid, other=0.0)[:, None]
        c_ptrs = C + tok.to(tl.int64)[:, None] * stride_cm + offs_n[None, :]
        tl.store(c_ptrs, acc.to(C.dtype.element_ty), mask=valid[:, None] & (offs_n[None, :] < N))


def moe_cfg(T):
    """Block shapes by tokens, after vLLM's tuned H200 table (E=128, N=768)."""
    if T <= 32:
        return dict(BM=16, BN=64, BK=128, num_warps=4, num_stages=3)
    if T <= 128:
        return dict(BM=16, BN=128, BK=128, num_warps=4, num_stages=2)
    if T <= 256:
        return dict(BM=32, BN=256, BK=128, num_warps=4, num_stages=2)
    if T <= 512:
        return dict(BM=64, BN=128, BK=64, num_warps=4, num_stages=3)
    return dict(BM=128, BN=256, BK=64, num_warps=8, num_stages=4)


def moe_align(topi, E, BM):
    """vLLM's moe_align_block_size in PyTorch: the routed (token, slot)
    indices sorted by expert, each expert's run padded to BM with the
    sentinel T*k; the expert of every block; the padded total."""
    flat = topi.reshape(-1)
    n = flat.numel()
    cap = n + E * (BM - 1)
    counts = torch.zeros(E, device=DEV, dtype=torch.int64).scatter_add_(0, flat, torch.ones_like(flat))
    padded = (counts + BM - 1) // BM * BM
    pstart = torch.cumsum(padded, 0) - padded
    ustart = torch.cumsum(counts, 0) - counts
    order = torch.argsort(flat, stable=True)
    ex = flat[order]
    dest = pstart[ex] + (torch.arange(n, device=DEV) - ustart[ex])
    sorted_ids = torch.full((cap,), n, device=DEV, dtype=torch.int32)
    sorted_ids.scatter_(0, dest, order.to(torch.int32))
    pend = torch.cumsum(padded, 0)
    blocks = torch.arange(cap // BM + 1, device=DEV) * BM
    expert_ids = torch.searchsorted(pend, blocks, right=True).clamp_(max=E - 1).to(torch.int32)
    return sorted_ids, expert_ids, pend[-1:].to(torch.int32)


def fused_moe(h, topi, topw, w1, w2, cfg, out_rows, act, y):
    """h [T, H]; w1 [E, 2Fm, H]; w2 [E, H, Fm]; writes y [T, H]."""
    T, H = h.shape
    E, F2, _ = w1.shape
    k = topi.shape[1]
    BM = cfg["BM"]
    sorted_ids, expert_ids, npad = moe_align(topi, E, BM)
    grid_m = sorted_ids.numel() // BM
    kw = dict(BM=BM, BN=cfg["BN"], BK=cfg["BK"], num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
    _moe_gemm[(grid_m, triton.cdiv(F2, cfg["BN"]))](
        h, w1, out_rows, sorted_ids, expert_ids, npad, topw, F2, H, T * k,
        h.stride(0), w1.stride(0), w1.stride(1), w1.stride(2), out_rows.stride(0),
        TOPK=k, GATHER=True, MUL_W=False, **kw)
    silu_mul(out_rows, act)
    c2 = torch.empty(T * k, H, device=DEV, dtype=DT)
    _moe_gemm[(grid_m, triton.cdiv(H, cfg["BN"]))](
        act, w2, c2, sorted_ids, expert_ids, npad, topw, H, act.shape[1], T * k,
        act.stride(0), w2.stride(0), w2.stride(1), w2.stride(2), c2.stride(0),
        TOPK=k, GATHER=False, MUL_W=True, **kw)
    torch.sum(c2.view(T, k, H), dim=1, out=y)


def dense_part(T, H=2048, nh=32, nkv=4, hd=128):
    """Qwen3-30B-A3B's non-attention, non-MoE ops of a layer: norms, QKV
    with its per-head q/k norm, rotary, output projection, adds."""
    d = QwenDense(T, H, nh, nkv, hd)

    def run():
        d.run()
        d.x.add_(d.tmp)
    return run


def moe_engine_table():
    """Qwen3-30B-A3B's MoE as the engines run it, beside the model."""
    path = os.path.join(OUT, "moe_fused.csv")
    E, Fm, H, k = 128, 768, 2048, 8
    torch.manual_seed(1)
    w1 = torch.randn(E, 2 * Fm, H, device=DEV, dtype=DT) * 0.02
    w2 = torch.randn(E, H, Fm, device=DEV, dtype=DT) * 0.02
    wr = torch.randn(E, H, device=DEV, dtype=DT) * 0.02
    # correctness once, against PyTorch, on 37 tokens
    T = 37
    h = torch.randn(T, H, device=DEV, dtype=DT)
    topw, topi = torch.topk(torch.softmax((h @ wr.t()).float(), 1), k, dim=1)
    rows = torch.empty(T * k, 2 * Fm, device=DEV, dtype=DT)
    act = torch.empty(T * k, Fm, device=DEV, dtype=DT)
    y = torch.empty(T, H, device=DEV, dtype=DT)
    fused_moe(h, topi, topw.reshape(-1).contiguous(), w1, w2, moe_cfg(T), rows, act, y)
    ref = torch.zeros(T, H, device=DEV, dtype=torch.float32)
    for t in range(T):
        for j in range(k):
            e = int(topi[t, j])
            g = h[t].float() @ w1[e].float().t()
            a = torch.nn.functional.silu(g[:Fm]) * g[Fm:]
            ref[t] += topw[t, j] * (a @ w2[e].float().t())
    err = ((y.float() - ref).abs().max() / ref.abs().max()).item()
    log("fused moe vs PyTorch: max error %.4f of the largest output" % err)
    with open(path, "w") as f:
        f.write("model,num_tokens,dense_ms,routing_ms,experts_ms,align_ms,relative_error\n")
        for T in [1, 4, 16, 64, 256, 1024, 4096]:
            cfg = moe_cfg(T)
            h = torch.randn(T, H, device=DEV, dtype=DT)
            logits = torch.empty(T, E, device=DEV, dtype=DT)
            topw, topi = torch.topk(torch.softmax((h @ wr.t()).float(), 1), k, dim=1)
            topw = topw.reshape(-1).contiguous()
            rows = torch.empty(T * k, 2 * Fm, device=DEV, dtype=DT)
            act = torch.empty(T * k, Fm, device=DEV, dtype=DT)
            y = torch.empty(T, H, device=DEV, dtype=DT)
            ms = time_graph([lambda: fused_moe(h, topi, topw, w1, w2, cfg, rows, act, y)])
            al = time_graph([lambda: moe_align(topi, E, cfg["BM"])])
            ro = time_graph([lambda: torch.topk(torch.softmax(torch.mm(h, wr.t(), out=logits).float(), 1), k, dim=1)])
            de = time_graph([dense_part(T)])
            f.write("qwen3-30b-a3b,%d,%.5f,%.5f,%.5f,%.5f,%.4f\n" % (T, de, ro, ms, al, err))
            f.flush()
            log("fused moe T=%d: %.4f ms with the align (alone %.4f), routing %.4f" % (T, ms, al, ro))


def moe_table():
    path = os.path.join(OUT, "moe.csv")
    with open(path, "w") as f:
        f.write("model,num_tokens,ms,grouped_gemm_ms\n")
        for T in [1, 4, 16, 64, 256, 1024, 4096]:
            ms = time_graph([moe_block(T)], budget_ms=5)
            # the two grouped GEMMs alone, on an even split of the T*8 rows
            E, Fm, H, k = 128, 768, 2048, 8
            rows = T * k
            cnt = torch.tensor([rows // E + (1 if e < rows % E else 0) for e in range(E)], device=DEV)
            offs = torch.cumsum(cnt, 0).to(torch.int32)
            xs = torch.randn(rows, H, device=DEV, dtype=DT)
            a = torch.randn(rows, Fm, device=DEV, dtype=DT)
            wg = (torch.randn(E, 2 * Fm, H, device=DEV, dtype=DT) * 0.02).transpose(-2, -1)
            wd = (torch.randn(E, H, Fm, device=DEV, dtype=DT) * 0.02).transpose(-2, -1)
            gms = time_graph([lambda: (torch._grouped_mm(xs, wg, offs=offs), torch._grouped_mm(a, wd, offs=offs))])
            f.write("qwen3-30b-a3b,%d,%.5f,%.5f\n" % (T, ms, gms))
            f.flush()
            log("moe T=%d: %.4f ms (grouped GEMMs %.4f)" % (T, ms, gms))
            torch.cuda.empty_cache()


# ---------------------------------------------------------------- peaks
def peaks():
    with open(os.path.join(OUT, "peaks.txt"), "w") as f:
        p = torch.cuda.get_device_properties(0)
        f.write("gpu %s, %d SMs, %.1f GiB, torch %s, cuda %s, triton %s\n" %
                (p.name, p.multi_processor_count, p.total_memory / 2**30, torch.__version__,
                 torch.version.cuda, TRITON and triton.__version__))
        n = 8192
        a = torch.randn(n, n, device=DEV, dtype=DT)
        b = torch.randn(n, n, device=DEV, dtype=DT)
        c = torch.empty(n, n, device=DEV, dtype=DT)
        ms = time_graph([lambda: torch.mm(a, b, out=c)], budget_ms=30)
        f.write("bf16 mm %dx%dx%d: %.3f ms, %.1f TFLOP/s\n" % (n, n, n, ms, 2 * n**3 / ms / 1e9))
        src = torch.empty(1 << 31, device=DEV, dtype=torch.uint8)
        dst = torch.empty_like(src)
        ms = time_graph([lambda: dst.copy_(src)], budget_ms=20)
        f.write("copy 2 GiB: %.3f ms, %.1f GB/s read+write\n" % (ms, 2 * src.numel() / ms / 1e6))
        del src, dst
        # a weight-streaming GEMV: batch 1 against a 1 GiB weight
        w = torch.randn(16384, 32768, device=DEV, dtype=DT)
        x = torch.randn(1, 32768, device=DEV, dtype=DT)
        y = torch.empty(1, 16384, device=DEV, dtype=DT)
        ms = time_graph([lambda: torch.mm(x, w.t(), out=y)], budget_ms=20)
        f.write("gemv 1x32768 by 1 GiB weight: %.3f ms, %.1f GB/s\n" % (ms, w.numel() * 2 / ms / 1e6))
    log(open(os.path.join(OUT, "peaks.txt")).read())


if __name__ == "__main__":
    t0 = T0
    torch.manual_seed(0)
    check_triton()
    log("triton ops:", TRITON)
    for part in (peaks, step_table, attention_table, mlp_tables, fp8_table, moe_table,
                 moe_engine_table):
        if part.__name__.replace("_tables", "").replace("_table", "") not in PARTS.split(","):
            continue
        try:
            part()
        except Exception as e:  # keep what the other parts measure
            import traceback
            log("%s failed: %s" % (part.__name__, traceback.format_exc()))
        torch.cuda.empty_cache()
    log("total %.1f s" % (time.time() - t0))
