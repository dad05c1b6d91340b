#!/usr/bin/env python3
"""Compares gpubase watch's GPU utilization series with `nvidia-smi dmon` run side by side.

usage: watch_vs_dmon.py NAME SERIES.jsonl DMON.txt [NAME SERIES.jsonl DMON.txt ...] --out F.json

dmon must have been run as `nvidia-smi dmon -s u -d 1 -o DT` (date and time columns). Both
series are cut to the time they overlap, less 5 s at each end (start-up and shutdown), then:
  mean_diff : mean(gpubase) - mean(dmon) over that window (the figure judged: within 3 points)
  mae       : mean |gpubase - dmon| over the samples paired by time (nearest dmon second, <= 1 s)
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


def compare(series, dmon, now=None, trim=5.0):
    lo = max(series[0][0], dmon[0][0]) + trim
    hi = min(series[-1][0], dmon[-1][0]) - trim
    s = [v for t, v in series if lo <= t <= hi]
    d = [v for t, v in dmon if lo <= t <= hi]
    pairs = []
    for t, v in series:
        if not lo <= t <= hi:
            continue
        near = min(dmon, key=lambda r: abs(r[0] - t))
        if abs(near[0] - t) <= 1.0:
            pairs.append((v, near[1]))
    if not s or not d:
        return {"error": "no overlapping samples"}
    ms, md = sum(s) / len(s), sum(d) / len(d)
    n = [v for t, v in (now or []) if lo <= t <= hi]
    return {
        # the device's current figure read by gpubase at each interval (what dmon reads)
        "gpubase_util_now_mean_pct": round(sum(n) / len(n), 2) if n else None,
        "window_s": round(hi - lo, 1),
        "gpubase_samples": len(s),
        "dmon_samples": len(d),
        "gpubase_mean_pct": round(ms, 2),
        "dmon_mean_pct": round(md, 2),
        "mean_diff_points": round(ms - md, 2),
        "mae_points": round(sum(abs(a - b) for a, b in pairs) / len(pairs), 2) if pairs else None,
        "within_3_points": abs(ms - md) <= 3.0,
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
