#!/usr/bin/env python3
"""Write examples/workloads/cascade.json: a chat workload with the quality
profile of the Qwen3 cascade 8B -> 32B -> 235B-A22B (hexplan-formats(5),
"quality").

The sample is synthetic but built the way judge scores behave: each request
has a latent difficulty d ~ N(0, 1), a little harder for long prompts;
model i scores 100 * sigmoid(a_i - b * d + e_i) with e_i ~ N(0, 0.6)
independent per model, so the models' scores are strongly but not perfectly
correlated (a request hard for the 8B model is usually hard for the 32B one,
but not always).  a_i is set so the mean scores are about 72 (8B), 82 (32B)
and 89 (235B-A22B), the ordering public chat benchmarks show for the family.
Lengths are lognormal like a chat trace (prompt p50 600, mean 800; output
p50 100, mean 140) and match the workload's prompt_tokens/output_tokens.
Deterministic: python3 examples/workloads/cascade-profile.py > cascade.json
"""
import json
import math
import random

rng = random.Random(20251130)
N = 400
MODELS = ["qwen3-8b", "qwen3-32b", "qwen3-235b-a22b"]
A = [1.4, 2.2, 3.4]
B = 1.25


def lognormal(mean, p50, cap):
    mu = math.log(p50)
    sigma = math.sqrt(2 * math.log(mean / p50))
    return mu, sigma, cap


PROMPT = lognormal(800, 600, 8000)
OUTPUT = lognormal(140, 100, 800)

samples = []
for _ in range(N):
    zp = rng.gauss(0, 1)
    prompt = min(PROMPT[2], max(1, round(math.exp(PROMPT[0] + PROMPT[1] * zp))))
    output = min(OUTPUT[2], max(1, round(math.exp(OUTPUT[0] + OUTPUT[1] * rng.gauss(0, 1)))))
    d = 0.9 * rng.gauss(0, 1) + 0.3 * zp
    scores = []
    for a in A:
        x = a - B * d + rng.gauss(0, 0.6)
        scores.append(round(100 / (1 + math.exp(-x))))
    samples.append({"prompt_tokens": prompt, "output_tokens": output, "scores": scores})

doc = {
    "version": 1,
    "rate_rps": 20,
    "arrival": {"process": "poisson"},
    "prompt_tokens": {"dist": "lognormal", "mean": 800, "p50": 600, "max": 8000},
    "output_tokens": {"dist": "lognormal", "mean": 140, "p50": 100, "max": 800},
    "slo": {"ttft_ms": 30000, "tpot_ms": 30, "percentile": 95, "attainment": 0.95},
    "quality": {"floor": 80, "models": MODELS, "samples": samples},
}
# One sample per line keeps the file short and diffable.
text = json.dumps(doc, indent=2)
lines = []
for s in samples:
    lines.append("      " + json.dumps(s))
head = json.dumps({k: v for k, v in doc.items() if k != "quality"}, indent=2)[:-2]
print(head + ",")
print('  "quality": {')
print('    "floor": 80,')
print('    "models": ' + json.dumps(MODELS) + ",")
print('    "samples": [')
print(",\n".join(lines))
print("    ]")
print("  }")
print("}")
