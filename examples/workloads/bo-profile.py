#!/usr/bin/env python3
"""Write examples/workloads/llama-8b-70b.json: a chat workload with the quality
profile of the Llama-3.1 8B and 70B pair of BOute (DESIGN §6, --mode bo) (hexplan-formats(5),
"quality").

The sample is synthetic but built the way judge scores behave: each request
has a latent difficulty d ~ N(0, 1), a little harder for long prompts;
model i scores 100 * sigmoid(a_i - b * d + e_i) with e_i ~ N(0, 0.6)
independent per model, so the models' scores are strongly but not perfectly
correlated (a request hard for the 8B model is usually hard for the 70B one,
but not always).  a_i is set so the mean scores are about 74 (8B) and 91
(70B), the gap public chat benchmarks show between the two.  BOute's
setting: 100 req/s; the floor of 74 (the 8B model alone just meets it) and the SLO (TTFT 3 s, TPOT 100 ms at
p95) are this example's choice.
Lengths are lognormal like a chat trace (prompt p50 600, mean 800; output
p50 100, mean 140) and match the workload's prompt_tokens/output_tokens.
Deterministic: python3 examples/workloads/bo-profile.py > llama-8b-70b.json
"""
import json
import math
import random

rng = random.Random(20251130)
N = 400
MODELS = ["llama-3.1-8b", "llama-3.1-70b"]
A = [1.3, 2.8]
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
    "rate_rps": 100,
    "arrival": {"process": "poisson"},
    "prompt_tokens": {"dist": "lognormal", "mean": 800, "p50": 600, "max": 8000},
    "output_tokens": {"dist": "lognormal", "mean": 140, "p50": 100, "max": 800},
    "slo": {"ttft_ms": 3000, "tpot_ms": 100, "percentile": 95, "attainment": 0.95},
    "quality": {"floor": 74, "models": MODELS, "samples": samples},
}
# One sample per line keeps the file short and diffable.
text = json.dumps(doc, indent=2)
lines = []
for s in samples:
    lines.append("      " + json.dumps(s))
head = json.dumps({k: v for k, v in doc.items() if k != "quality"}, indent=2)[:-2]
print(head + ",")
print('  "quality": {')
print('    "floor": 74,')
print('    "models": ' + json.dumps(MODELS) + ",")
print('    "samples": [')
print(",\n".join(lines))
print("    ]")
print("  }")
print("}")
