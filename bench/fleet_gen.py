#!/usr/bin/env python3
"""bench/fleet_gen.py OUTDIR: a synthetic fleet of `gpubase probe --quick --json` run files, with
planted faults and the ground truth, to measure `gpubase fleet merge` (speed, memory, precision
and recall).

Each GPU's run is the measured H200 probe run (default bench/results/h200-probe-v4.json) shaped
like a quick probe (the results quick mode skips are dropped, raw samples at quick mode's
counts) with every figure's samples drawn from the measured samples of that figure, keeping
their order in time: sample i is drawn from the measured samples i-2 .. i+2 (a GPU's burst
declines at its end, a copy loop has scattered slow samples: both stay where they were). The
spread between healthy GPUs is the spread those draws give; nothing about GPU-to-GPU variation
beyond that is invented.

Planted faults (each GPU at most one, chosen at random with a fixed seed):
  slow       1 % of GPUs: one judged figure 3-10 % worse (uniform), samples scaled
  link       0.25 %: PCIe link under load Gen4 x16 or Gen5 x8 (half the bandwidth), the pinned
             H2D/D2H/bidirectional figures halved with it
  throttled  0.25 %: one GEMM figure measured under HW thermal slowdown (status invalid, the
             NVML throttle bit set), 2-8 % lower
OUTDIR/runs/<node>/gpu<i>.json, and OUTDIR/truth.json: the faulty GPUs.

Usage: python3 bench/fleet_gen.py OUTDIR [--nodes 10000] [--gpus 8] [--seed 1] [--jobs N]
Then:  gpubase fleet merge --json -o OUTDIR/merge.json OUTDIR/runs
       python3 bench/fleet_gen.py --score OUTDIR   (precision and recall of merge.json)
"""
import argparse
import json
import math
import os
import random
import sys
from multiprocessing import Pool

HERE = os.path.dirname(os.path.abspath(__file__))
HW_THERMAL_SLOWDOWN = 0x40  # nvmlClocksThrottleReasonHwThermalSlowdown
LINK_KEYS = ("probe.pcie.link.gen_under_load", "probe.pcie.link.width_under_load")
PINNED_KEYS = ("probe.pcie.h2d.pinned.gbps", "probe.pcie.d2h.pinned.gbps",
               "probe.pcie.bidir.pinned.gbps")


def quick_samples(key, n_full):
    """How many samples quick mode takes for this figure (src/bench/gpu/probe_*.cpp), or None
    when quick mode does not produce it."""
    if key.startswith("probe.gemm."):
        if ".sustained." in key or key.count("x") >= 2:
            return None  # sustained and other shapes: full mode only
        return 10
    if key.startswith("probe.memory."):
        return 8
    if key.startswith("probe.pcie."):
        if key in PINNED_KEYS or key in LINK_KEYS:
            return max(1, round(n_full * 300 / 500))  # headline plan: 300 ms instead of 500 ms
        return n_full
    if key.startswith("probe.latency."):
        return {"probe.latency.launch_host.us": 5, "probe.latency.graph_per_kernel.us": 5}.get(
            key, 200)
    if key.startswith("probe.host."):
        if key in ("probe.host.copy.gbps", "probe.host.triad.gbps"):
            return 5
        return max(1, n_full // 2)  # contention loops: 200 ms instead of 400 ms
    return n_full


def stats(samples):
    s = sorted(samples)
    n = len(s)
    median = s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2
    mean = sum(s) / n
    sd = math.sqrt(sum((x - mean) ** 2 for x in s) / (n - 1)) if n > 1 else 0.0
    return {"n": n, "median": median, "mean": mean, "min": s[0], "max": s[-1], "stddev": sd,
            "cv": sd / mean if mean else 0.0}


def load_template(path):
    with open(path) as f:
        run = json.load(f)
    results = []
    for r in run["results"]:
        n = quick_samples(r["key"], len(r.get("samples") or []))
        if n is None:
            continue
        r = dict(r)
        r["_pool"] = list(r.get("samples") or [])
        r["_n"] = n
        results.append(r)
    run["results"] = results
    return run


def judged_keys(template):
    return [r["key"] for r in template["results"]
            if r["status"] in ("pass", "warn", "fail") and r["key"] not in LINK_KEYS
            and r["key"] != "probe.pcie.replay_delta" and r.get("value")]


def plan_faults(nodes, gpus, seed, keys):
    rng = random.Random(seed)
    faults = {}
    total = nodes * gpus
    ids = rng.sample(range(total), k=round(total * 0.015))
    n_slow = round(total * 0.01)
    n_link = round(total * 0.0025)
    for j, gid in enumerate(ids):
        if j < n_slow:
            faults[gid] = {"kind": "slow", "key": rng.choice(keys),
                           "fraction": rng.uniform(0.03, 0.10)}
        elif j < n_slow + n_link:
            faults[gid] = {"kind": "link", "link": rng.choice([(4, 16), (5, 8)])}
        else:
            faults[gid] = {"kind": "throttled",
                           "key": rng.choice(["probe.gemm.bf16.tflops", "probe.gemm.fp16.tflops",
                                              "probe.gemm.tf32.tflops", "probe.gemm.fp8.tflops"]),
                           "fraction": rng.uniform(0.02, 0.08)}
    return faults


def host_name(node):
    return "gpu%05d" % node


def make_run(template, node, gpu, nodes, gpus, fault, rng):
    host = host_name(node)
    rank = node * gpus + gpu
    env = [{"key": "run.host", "label": "host", "value": host},
           {"key": "run.scheduler", "label": "launched by", "value": "slurm"},
           {"key": "run.job_id", "label": "job id", "value": "910203"},
           {"key": "run.rank", "label": "rank", "value": float(rank), "unit": "", "decimals": 0},
           {"key": "run.local_rank", "label": "local rank", "value": float(gpu), "unit": "",
            "decimals": 0},
           {"key": "run.world_size", "label": "world size", "value": float(nodes * gpus),
            "unit": "", "decimals": 0},
           {"key": "run.node_list", "label": "nodes",
            "value": "gpu[%05d-%05d]" % (0, nodes - 1)}]
    for f in template["environment"]:
        f = dict(f)
        if f["key"] == "gpu.index":
            f["value"] = str(gpu)
        elif f["key"] == "gpu.uuid":
            f["value"] = "GPU-%08x-%04x-%04x-%04x-%012x" % (
                rng.getrandbits(32), rng.getrandbits(16), rng.getrandbits(16),
                rng.getrandbits(16), rng.getrandbits(48))
        elif f["key"] == "gpu.pci_bus_id":
            f["value"] = "0000:%02X:00.0" % (0x18 + 0x10 * gpu)
        env.append(f)
    results = []
    kind = fault["kind"] if fault else None
    for t in template["results"]:
        r = {k: v for k, v in t.items() if not k.startswith("_")}
        pool, n = t["_pool"], t["_n"]
        if pool:
            last = len(pool) - 1
            samples = [pool[rng.randint(max(0, min(i, last) - 2), min(last, i + 2))]
                       for i in range(n)]
            scale = 1.0
            if kind == "slow" and r["key"] == fault["key"]:
                scale = 1 - fault["fraction"] if r["higher_is_better"] else 1 + fault["fraction"]
            if kind == "throttled" and r["key"] == fault["key"]:
                scale = 1 - fault["fraction"]
                tel = dict(r.get("telemetry") or {})
                tel["throttle_reasons"] = int(tel.get("throttle_reasons") or 0) | HW_THERMAL_SLOWDOWN
                r["telemetry"] = tel
                r["status"] = "invalid"
                r["reason"] = "the GPU slowed itself down while this ran (HwThermalSlowdown)"
            if kind == "link":
                gen, width = fault["link"]
                if r["key"] == "probe.pcie.link.gen_under_load":
                    samples = [float(gen)] * n
                elif r["key"] == "probe.pcie.link.width_under_load":
                    samples = [float(width)] * n
                elif r["key"] in PINNED_KEYS:
                    scale = 0.5
            samples = [x * scale for x in samples]
            r["samples"] = samples
            r["stats"] = stats(samples)
            r["value"] = r["stats"]["median"]
            for ref in r.get("references") or []:
                if ref.get("value"):
                    ref = ref  # ratio follows the new value
                    ref["ratio"] = r["value"] / ref["value"]
        results.append(r)
    run = {k: v for k, v in template.items() if k not in ("environment", "results")}
    run["environment"] = env
    run["results"] = results
    return run


class FastWriter:
    """Writes healthy and `slow` GPUs' runs from the template rendered once (json.dumps with
    indent 2, as gpubase writes its runs) with slots for what differs per GPU: the identity
    facts, each figure's samples, stats, value and reference ratios. Link and throttled faults
    change statuses and telemetry: those few runs go through make_run and json.dumps."""

    def __init__(self, template):
        self.template = template
        run = {k: v for k, v in template.items() if k not in ("environment", "results")}
        env = [{"key": "@@ENV@@"}] + [
            f for f in template["environment"]
            if f["key"] not in ("gpu.index", "gpu.uuid", "gpu.pci_bus_id")]
        env.append({"key": "gpu.index", "label": "CUDA device", "value": "@@IDX@@"})
        env.append({"key": "gpu.uuid", "label": "UUID", "value": "@@UUID@@"})
        results = []
        for i, t in enumerate(template["results"]):
            r = {k: v for k, v in t.items() if not k.startswith("_")}
            if t["_pool"]:
                r["value"] = "@@V%d@@" % i
                r["stats"] = "@@T%d@@" % i
                r["samples"] = "@@S%d@@" % i
                r["references"] = [dict(ref, ratio="@@R%d_%d@@" % (i, j)) if ref.get("value")
                                   else ref for j, ref in enumerate(r.get("references") or [])]
            results.append(r)
        run["environment"] = env
        run["results"] = results
        text = json.dumps(run, indent=2)
        self.parts = []  # static text and slot names, alternating
        pos = 0
        while True:
            a = text.find('"@@', pos)
            if a < 0:
                self.parts.append(text[pos:])
                break
            b = text.index('@@"', a + 3)
            name = text[a + 3:b]
            if name == "ENV":  # the whole {"key": "@@ENV@@"} object
                a = text.rindex("{", 0, a)
                b = text.index("}", b) - 2
            line_start = text.rindex("\n", 0, a) + 1
            indent = len(text[line_start:a]) - len(text[line_start:a].lstrip(" "))
            self.parts.append(text[pos:a])
            self.parts.append((name, indent))
            pos = b + 3
        self.env_indent = None

    @staticmethod
    def block(items, indent):
        pad = " " * (indent + 2)
        return "[\n" + ",\n".join(pad + i for i in items) + "\n" + " " * indent + "]"

    @staticmethod
    def obj(d, indent):
        pad = " " * (indent + 2)
        return "{\n" + ",\n".join(pad + json.dumps(k) + ": " + json.dumps(v)
                                   for k, v in d.items()) + "\n" + " " * indent + "}"

    def render(self, node, gpu, nodes, gpus, fault, rng):
        host = host_name(node)
        rank = node * gpus + gpu
        env = [{"key": "run.host", "label": "host", "value": host},
               {"key": "run.scheduler", "label": "launched by", "value": "slurm"},
               {"key": "run.job_id", "label": "job id", "value": "910203"},
               {"key": "run.rank", "label": "rank", "value": float(rank), "unit": "",
                "decimals": 0},
               {"key": "run.local_rank", "label": "local rank", "value": float(gpu), "unit": "",
                "decimals": 0},
               {"key": "run.world_size", "label": "world size", "value": float(nodes * gpus),
                "unit": "", "decimals": 0},
               {"key": "run.node_list", "label": "nodes",
                "value": "gpu[%05d-%05d]" % (0, nodes - 1)}]
        slots = {"IDX": json.dumps(str(gpu)),
                 "UUID": json.dumps("GPU-%08x-%04x-%04x-%04x-%012x" % (
                     rng.getrandbits(32), rng.getrandbits(16), rng.getrandbits(16),
                     rng.getrandbits(16), rng.getrandbits(48)))}
        for i, t in enumerate(self.template["results"]):
            pool, n = t["_pool"], t["_n"]
            if not pool:
                continue
            last = len(pool) - 1
            samples = [pool[rng.randint(max(0, min(j, last) - 2), min(last, j + 2))]
                       for j in range(n)]
            if fault and fault["kind"] == "slow" and t["key"] == fault["key"]:
                scale = 1 - fault["fraction"] if t["higher_is_better"] else 1 + fault["fraction"]
                samples = [x * scale for x in samples]
            st = stats(samples)
            slots["V%d" % i] = repr(st["median"])
            slots["T%d" % i] = st
            slots["S%d" % i] = samples
            for j, ref in enumerate(t.get("references") or []):
                if ref.get("value"):
                    slots["R%d_%d" % (i, j)] = repr(st["median"] / ref["value"])
        out = []
        for p in self.parts:
            if isinstance(p, str):
                out.append(p)
                continue
            name, indent = p
            v = slots.get(name)
            if name == "ENV":
                out.append((",\n" + " " * indent).join(self.obj(f, indent) for f in env))
            elif name.startswith("S"):
                out.append(self.block([repr(x) for x in v], indent))
            elif name.startswith("T"):
                out.append(self.obj(v, indent))
            else:
                out.append(v)
        return "".join(out)


def write_node(args):
    out, node, nodes, gpus, seed, node_faults = args
    fast = write_node.fast
    rng = random.Random(seed * 1_000_003 + node)
    d = os.path.join(out, "runs", host_name(node))
    os.makedirs(d, exist_ok=True)
    for gpu in range(gpus):
        fault = node_faults.get(gpu)
        if fault and fault["kind"] != "slow":
            text = json.dumps(make_run(fast.template, node, gpu, nodes, gpus, fault, rng), indent=2)
        else:
            text = fast.render(node, gpu, nodes, gpus, fault, rng)
        with open(os.path.join(d, "gpu%d.json" % gpu), "w") as f:
            f.write(text)
    return node


def init_worker(template_path):
    write_node.fast = FastWriter(load_template(template_path))


def generate(a):
    template = load_template(a.template)
    keys = judged_keys(template)
    faults = plan_faults(a.nodes, a.gpus, a.seed, keys)
    by_node = {}
    for gid, f in faults.items():
        by_node.setdefault(gid // a.gpus, {})[gid % a.gpus] = f
    os.makedirs(a.outdir, exist_ok=True)
    truth = [{"host": host_name(gid // a.gpus), "gpu_index": str(gid % a.gpus), **f}
             for gid, f in sorted(faults.items())]
    for t in truth:
        if "link" in t:
            t["link"] = "Gen%d x%d" % tuple(t["link"])
    with open(os.path.join(a.outdir, "truth.json"), "w") as f:
        json.dump({"nodes": a.nodes, "gpus_per_node": a.gpus, "seed": a.seed,
                   "template": os.path.relpath(a.template, a.outdir), "judged_keys": keys,
                   "faults": truth}, f, indent=1)
    work = [(a.outdir, node, a.nodes, a.gpus, a.seed, by_node.get(node, {}))
            for node in range(a.nodes)]
    done = 0
    with Pool(a.jobs, initializer=init_worker, initargs=(a.template,)) as pool:
        for _ in pool.imap_unordered(write_node, work, chunksize=16):
            done += 1
            if done % 500 == 0:
                print("fleet_gen: %d of %d nodes" % (done, a.nodes), file=sys.stderr)
    print("fleet_gen: %d run files, %d planted faults, under %s" %
          (a.nodes * a.gpus, len(truth), a.outdir), file=sys.stderr)


def score(outdir, merge_json):
    with open(os.path.join(outdir, "truth.json")) as f:
        truth = {(t["host"], t["gpu_index"]): t for t in json.load(f)["faults"]}
    with open(merge_json) as f:
        merged = json.load(f)
    flagged = {(g["host"], g["gpu_index"]) for g in merged["flagged"]}
    hit = flagged & set(truth)
    precision = len(hit) / len(flagged) if flagged else 1.0
    recall = len(hit) / len(truth) if truth else 1.0
    by_kind = {}
    for k, t in truth.items():
        d = by_kind.setdefault(t["kind"], [0, 0])
        d[0] += 1
        d[1] += k in flagged
    missed = sorted((t for k, t in truth.items() if k not in flagged),
                    key=lambda t: t.get("fraction", 1))
    print(json.dumps({"gpus": merged["gpus"], "planted": len(truth), "flagged": len(flagged),
                      "true_positives": len(hit), "precision": precision, "recall": recall,
                      "by_kind": {k: {"planted": v[0], "found": v[1]} for k, v in by_kind.items()},
                      "false_positives": sorted(flagged - set(truth))[:10],
                      "missed": missed[:10]}, indent=1))
    return precision, recall


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("outdir")
    p.add_argument("--nodes", type=int, default=10000)
    p.add_argument("--gpus", type=int, default=8)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    p.add_argument("--template", default=os.path.join(HERE, "results", "h200-probe-v4.json"))
    p.add_argument("--score", action="store_true",
                   help="score OUTDIR/merge.json (written by fleet merge --json) against the truth")
    a = p.parse_args()
    if a.score:
        score(a.outdir, os.path.join(a.outdir, "merge.json"))
    else:
        generate(a)


if __name__ == "__main__":
    main()
