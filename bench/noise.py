"""Allan deviation of the per-second log rate of `protobench load -O json`
results (bench/noise.sh). Prints, per result, sigma(tau) and
sigma(tau) * sqrt(tau) (constant for white noise), and what a paired ratio
of two protocols measured back to back would need for a +-10% interval."""
import json
import math
import sys

# t(0.975, df), two-sided 95%
T975 = {1: 12.71, 2: 4.30, 3: 3.18, 4: 2.78, 5: 2.57, 6: 2.45, 7: 2.36, 8: 2.31, 9: 2.26, 10: 2.23,
        11: 2.20, 12: 2.18, 13: 2.16, 14: 2.14, 15: 2.13, 16: 2.12, 17: 2.11, 18: 2.10, 19: 2.09,
        20: 2.09, 24: 2.06, 29: 2.05, 39: 2.02}


def t975(df):
    """t(0.975, df), from the table's nearest df at or below (conservative)."""
    return T975[max(k for k in T975 if k <= df)] if df < 40 else 2.02


def allan(y, m):
    """Non-overlapping Allan deviation of series y at m samples per mean."""
    means = [sum(y[i:i + m]) / m for i in range(0, len(y) - m + 1, m)]
    if len(means) < 3:
        return None
    d = [(b - a) ** 2 for a, b in zip(means, means[1:])]
    return math.sqrt(sum(d) / (2 * len(d)))


for path in sys.argv[1:]:
    r = json.load(open(path))
    whole = r["duration_ns"] // 1_000_000_000
    rates = [p["successes"] for p in r["timeline"] if p["second"] < whole]
    y = [math.log(v) for v in rates if v > 0]
    print(f"{r['plan']['protocol']} {r['plan'].get('workload')}: {len(y)} s, mean {sum(rates) / len(rates):,.0f} calls/s")
    print("  tau_s  allan_dev  x_sqrt_tau")
    for m in (1, 2, 4, 8, 16):
        a = allan(y, m)
        if a is not None:
            print(f"  {m:5d}  {a:9.3f}  {a * math.sqrt(m):10.3f}")
    a1 = allan(y, 1)
    if a1 is None:
        continue
    # A ratio of two back-to-back 1 s windows: E[(y2 - y1)^2] = 2 avar(1),
    # so its log has sd sqrt(2) * sigma(1) when both sides are alike.
    sd = math.sqrt(2) * a1
    need = next(n for n in range(2, 10_000) if t975(n - 1) * sd / math.sqrt(n) <= math.log(1.1))
    print(f"  ratio of two 1 s windows: sd of its log ~ {sd:.3f}; pairs for a +-10% interval: {need}")
