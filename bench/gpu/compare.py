#!/usr/bin/env python3
"""Set the cost model's predictions beside what bench/gpu/kernels.py measured.

usage: python3 bench/gpu/compare.py [DIR] [--gpu NAME] [--hexplan PATH]
  DIR   a kernels.py output folder (default bench/data/h200)
  NAME  the catalog GPU the tables were measured on (default h200)

Prints, for each whole forward step (step.csv) and each attention kernel
(attention.csv), the measured time, the cost model's (`hexplan estimate
--format json`: a step's kernel time is its step less the per-iteration
framework overhead, which a CUDA graph's replay does not have), and their
ratio.  The per-layer non-attention tables (mlp-*.csv, in vidur's layout)
are compared by bench/cost_accuracy.  Nothing here is fitted.
"""
import csv
import json
import os
import statistics
import subprocess
import sys

args = sys.argv[1:]
gpu, hexplan, folder = "h200", "./hexplan", "bench/data/h200"
i = 0
while i < len(args):
    if args[i] == "--gpu":
        gpu, i = args[i + 1], i + 2
    elif args[i] == "--hexplan":
        hexplan, i = args[i + 1], i + 2
    else:
        folder, i = args[i], i + 1


def estimate(model, tp, batch, inp, weights="bf16"):
    out = subprocess.run([hexplan, "estimate", "-m", model, "-g", gpu, "--tp", str(tp),
                          "--batch", str(batch), "--input", str(inp), "--output", "1",
                          "--weights", weights, "--format", "json"],
                         check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def layers(model):
    return {"llama-3.1-8b": 32, "llama-3.1-70b": 80}[model]


ratios = {}
print("whole steps (Llama-3.1-8B, TP 1, kernel time per step)")
print("%-8s %6s %8s %8s %12s %12s %7s" % ("phase", "batch", "tokens", "context", "measured_ms",
                                          "predicted_ms", "ratio"))
with open(os.path.join(folder, "step.csv")) as f:
    for r in csv.DictReader(f):
        B, q, L, ms = int(r["batch"]), int(r["q_tokens"]), int(r["context"]), float(r["ms"])
        e = estimate(r["model"], 1, B, L if q > 1 else L)
        nl = layers(r["model"])
        if r["phase"] == "decode":
            d = e["decode"]
            pred = d["step_ms"] - nl * d["per_layer_ms"]["overhead"]
        else:
            p = e["prefill"]
            pred = p["latency_ms"] - nl * p["per_layer_ms"]["overhead"]
        ratios.setdefault("step " + r["phase"], []).append(pred / ms)
        print("%-8s %6d %8d %8d %12.3f %12.3f %7.3f" % (r["phase"], B, q, L, ms, pred, pred / ms))

print("\nattention per layer (PyTorch SDPA; %s)" % "the backend column of attention.csv")
print("%-8s %9s %6s %8s %8s %12s %12s %7s" % ("phase", "heads", "batch", "tokens", "context",
                                              "measured_ms", "predicted_ms", "ratio"))
with open(os.path.join(folder, "attention.csv")) as f:
    for r in csv.DictReader(f):
        nh, nkv = int(r["n_head"]), int(r["n_kv_head"])
        model, tp = {(32, 8): ("llama-3.1-8b", 1), (8, 1): ("llama-3.1-70b", 8)}[(nh, nkv)]
        B, L, ms = int(r["batch"]), int(r["context"]), float(r["ms"])
        e = estimate(model, tp, B, L)
        if r["phase"] == "decode":
            pred = e["decode"]["per_layer_ms"]["attention"]
        else:
            pred = e["prefill"]["per_layer_ms"]["attention"]
        ratios.setdefault("attention %s %d/%d" % (r["phase"], nh, nkv), []).append(pred / ms)
        print("%-8s %4d/%-4d %6d %8d %8d %12.4f %12.4f %7.3f" % (r["phase"], nh, nkv, B,
                                                               int(r["q_tokens"]), L, ms, pred,
                                                               pred / ms))

MLP_MODEL = {"Meta-Llama-3-8B": "llama-3.1-8b", "Meta-Llama-3-70B": "llama-3.1-70b"}
ELEMENTWISE = ["input_layernorm", "attn_rope", "post_attention_layernorm", "mlp_act", "add"]
fp8 = os.path.join(folder, "fp8.csv")
if os.path.exists(fp8):
    print("\nFP8 weights and activations: a layer's non-attention time (its four FP8 GEMMs"
          " from fp8.csv,\nits norms, rotary, activation and add from the BF16 mlp.csv)")
    print("%-18s %3s %7s %12s %12s %7s" % ("model", "tp", "tokens", "measured_ms",
                                           "predicted_ms", "ratio"))
    bf = {}
    for name in MLP_MODEL:
        path = os.path.join(folder, "mlp-%s.csv" % name)
        if os.path.exists(path):
            with open(path) as f:
                for r in csv.DictReader(f):
                    bf[(name, int(r["num_tensor_parallel_workers"]), int(r["num_tokens"]))] = sum(
                        float(r["time_stats.%s.median" % o]) for o in ELEMENTWISE)
    with open(fp8) as f:
        for r in csv.DictReader(f):
            key = (r["model"], int(r["tp"]), int(r["num_tokens"]))
            if key not in bf:
                continue
            ms = float(r["gemm_ms"]) + bf[key]
            e = estimate(MLP_MODEL[r["model"]], key[1], 1, key[2], "fp8")
            pred = e["prefill"]["per_layer_ms"]["linear"]
            ratios.setdefault("fp8 layer", []).append(pred / ms)
            print("%-18s %3d %7d %12.4f %12.4f %7.3f" % (r["model"], key[1], key[2], ms, pred,
                                                        pred / ms))

moe = os.path.join(folder, "moe.csv")
if os.path.exists(moe):
    print("\nMoE: Qwen3-30B-A3B's non-attention layer on one GPU (128 experts, top 8)")
    print("%-14s %7s %12s %12s %7s %16s" % ("model", "tokens", "measured_ms", "predicted_ms",
                                            "ratio", "grouped_gemm_ms"))
    with open(moe) as f:
        for r in csv.DictReader(f):
            T, ms = int(r["num_tokens"]), float(r["ms"])
            e = estimate(r["model"], 1, 1, T)
            pred = e["prefill"]["per_layer_ms"]["linear"]
            ratios.setdefault("moe layer", []).append(pred / ms)
            print("%-14s %7d %12.4f %12.4f %7.3f %16.4f" % (r["model"], T, ms, pred, pred / ms,
                                                           float(r["grouped_gemm_ms"])))

fused = os.path.join(folder, "moe_fused.csv")
if os.path.exists(fused):
    print("\nMoE as the engines run it (moe_fused.csv): the layer's dense ops, routing and"
          " the fused\nexpert GEMMs; the sort's PyTorch kernels (align_ms) left out, one"
          " kernel in the engines")
    print("%-14s %7s %9s %9s %10s %12s %12s %7s" % ("model", "tokens", "dense_ms", "route_ms",
                                                     "expert_ms", "measured_ms", "predicted_ms",
                                                     "ratio"))
    with open(fused) as f:
        for r in csv.DictReader(f):
            T = int(r["num_tokens"])
            de, ro = float(r["dense_ms"]), float(r["routing_ms"])
            ex = float(r["experts_ms"]) - float(r["align_ms"])
            ms = de + ro + ex
            pred = estimate(r["model"], 1, 1, T)["prefill"]["per_layer_ms"]["linear"]
            ratios.setdefault("moe layer, fused", []).append(pred / ms)
            print("%-14s %7d %9.4f %9.4f %10.4f %12.4f %12.4f %7.3f" % (r["model"], T, de, ro, ex,
                                                                        ms, pred, pred / ms))

print("\nmedian predicted/measured")
for k, v in ratios.items():
    print("  %-26s %6.3f  (n %d, %.3f to %.3f)" % (k, statistics.median(v), len(v), min(v), max(v)))
