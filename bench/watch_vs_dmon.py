#!/usr/bin/env python3
"""Compares gpubase watch's GPU utilization series with `nvidia-smi dmon` run side by side.

usage: watch_vs_dmon.py NAME SERIES.jsonl DMON.txt [NAME SERIES.jsonl DMON.txt ...] --out F.json

dmon must have been run as `nvidia-smi dmon -s u -d 1 -o DT` (date and time columns). gpubase's
series covers the job from launch to exit, and dmon runs from before the launch to after the exit,
so the window is the whole span of gpubase's series: both the ramp up and the ramp down are in it.
(An earlier version cut 5 s off each end of the overlap: with dmon outliving the job that kept the
ramp up but dropped the ramp down, and a series lagging by a second lost ~3 points for it.)
Each gpubase interval is paired with the dmon second nearest its end (<= 1 s), then:
  mean_diff : mean of (gpubase - dmon) over the pairs (the figure judged: within 3 points)
  mae       : mean |gpubase - dmon| over the pairs
  lag_s / mae_at_lag : the shift of gpubase's series (-3..+3 s) with the smallest MAE, and that MAE
"""
import datetime
import json
import sys


def read_series(path, column="gpu_util_pct"):
    rows = []
    with open(path) as f:
        for line in f:
            j = json.loads(line)
            if j.get("time_unix_s") is not None and j.get(column) is not None:
                rows.append((j["time_unix_s"], j[column]))
    return rows


def read_dmon(path):
    cols, rows = None, []
    with open(path) as f:
        for line in f:
            if line.startswith("#"):
                if cols is None:
                    cols = line[1:].split()
                continue
            parts = line.split()
            if not cols or len(parts) != len(cols):
                continue
            rec = dict(zip(cols, parts))
            if rec.get("sm", "-") == "-":
                continue
            t = datetime.datetime.strptime(rec["Date"] + rec["Time"], "%Y%m%d%H:%M:%S")
            rows.append((t.timestamp(), float(rec["sm"])))  # local time, as dmon prints it
    return rows


def compare(series, dmon, now=None):
    by_second = {round(t): v for t, v in dmon}

    def pairs_at(rows, lag):
        out = []
        for t, v in rows:
            k = round(t) + lag
            if k in by_second:
                out.append((v, by_second[k]))
        return out

    def mean(xs):
        return sum(xs) / len(xs) if xs else None

    pairs = pairs_at(series, 0)
    if not pairs:
        return {"error": "no overlapping samples"}
    diffs = [a - b for a, b in pairs]
    lags = {lag: mean([abs(a - b) for a, b in pairs_at(series, lag)]) for lag in range(-3, 4)}
    lag = min((l for l in lags if lags[l] is not None), key=lambda l: lags[l])
    now_pairs = pairs_at(now or [], 0)
    return {
        "window_s": round(series[-1][0] - series[0][0], 1),
        "pairs": len(pairs),
        "gpubase_mean_pct": round(mean([a for a, _ in pairs]), 2),
        "dmon_mean_pct": round(mean([b for _, b in pairs]), 2),
        "mean_diff_points": round(mean(diffs), 2),
        "mae_points": round(mean([abs(d) for d in diffs]), 2),
        "lag_s": lag,
        "mae_at_lag_points": round(lags[lag], 2),
        # the device's current figure read by gpubase at each interval (the call dmon makes)
        "util_now_mean_diff_points":
            round(mean([a - b for a, b in now_pairs]), 2) if now_pairs else None,
        "within_3_points": abs(mean(diffs)) <= 3.0,
    }


def main():
    args = sys.argv[1:]
    out = None
    if "--out" in args:
        i = args.index("--out")
        out = args[i + 1]
        del args[i:i + 2]
    result = {}
    for i in range(0, len(args), 3):
        name, series, dmon = args[i:i + 3]
        result[name] = compare(read_series(series), read_dmon(dmon),
                               read_series(series, "gpu_util_now_pct"))
        print(name, json.dumps(result[name]))
    if out:
        with open(out, "w") as f:
            json.dump(result, f, indent=2)


if __name__ == "__main__":
    main()
