#!/usr/bin/env python3
"""Write an example workload with a quality profile (hexplan-formats(5),
"quality"):

  python3 examples/workloads/quality-profile.py cascade > cascade.json
      the Qwen3 cascade 8B -> 32B -> 235B-A22B (--mode cascade, route)
  python3 examples/workloads/quality-profile.py bo > llama-8b-70b.json
      the Llama-3.1 8B and 70B pair of BOute (DESIGN §6, --mode bo)

The sample is synthetic but built the way judge scores behave: each request
has a latent difficulty d ~ N(0, 1), a little harder for long prompts;
model i scores 100 * sigmoid(a_i - b * d + e_i) with e_i ~ N(0, 0.6)
independent per model, so the models' scores are strongly but not perfectly
correlated (a request hard for the small model is usually hard for the
larger one, but not always).  a_i is set so the mean scores are about 72
(8B), 82 (32B) and 89 (235B-A22B) for the Qwen3 family and 74 (8B) and 91
(70B) for Llama-3.1, the orderings public chat benchmarks show.  Lengths are
lognormal like a chat trace (prompt p50 600, mean 800; output p50 100, mean
140) and match the workload's prompt_tokens/output_tokens.  The rates,
floors and SLOs are the examples' choices: the cascade's TTFT SLO of 30 s
leaves room for escalations; for bo, BOute's 100 req/s, a floor of 74 (the
8B model alone just meets it) and TTFT 3 s, TPOT 100 ms at p95.
Deterministic (one seed).
"""
import json
import math
import random
import sys

PRESETS = {
    "cascade": {"models": ["qwen3-8b", "qwen3-32b", "qwen3-235b-a22b"], "a": [1.4, 2.2, 3.4],
                "rate_rps": 20, "ttft_ms": 30000, "tpot_ms": 30, "floor": 80},
    "bo": {"models": ["llama-3.1-8b", "llama-3.1-70b"], "a": [1.3, 2.8],
           "rate_rps": 100, "ttft_ms": 3000, "tpot_ms": 100, "floor": 74},
}
if len(sys.argv) != 2 or sys.argv[1] not in PRESETS:
    sys.exit("usage: quality-profile.py cascade|bo")
P = PRESETS[sys.argv[1]]
rng = random.Random(20251130)
N = 400
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
    for a in P["a"]:
        x = a - B * d + rng.gauss(0, 0.6)
        scores.append(round(100 / (1 + math.exp(-x))))
    samples.append({"prompt_tokens": prompt, "output_tokens": output, "scores": scores})

doc = {
    "version": 1,
    "rate_rps": P["rate_rps"],
    "arrival": {"process": "poisson"},
    "prompt_tokens": {"dist": "lognormal", "mean": 800, "p50": 600, "max": 8000},
    "output_tokens": {"dist": "lognormal", "mean": 140, "p50": 100, "max": 800},
    "slo": {"ttft_ms": P["ttft_ms"], "tpot_ms": P["tpot_ms"], "percentile": 95, "attainment": 0.95},
}
# One sample per line keeps the file short and diffable.
lines = ["      " + json.dumps(s) for s in samples]
head = json.dumps(doc, indent=2)[:-2]
print(head + ",")
print('  "quality": {')
print('    "floor": %d,' % P["floor"])
print('    "models": ' + json.dumps(P["models"]) + ",")
print('    "samples": [')
print(",\n".join(lines))
print("    ]")
print("  }")
print("}")
