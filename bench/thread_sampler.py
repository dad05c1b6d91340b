#!/usr/bin/env python3
"""Where a command's threads spend their CPU: runs CMD and samples /proc/<pid>/task/<tid> every
--interval seconds (state, user and system CPU, the kernel wait channel and the system call a
thread is in), then prints, per thread name, the CPU over the window and, for the busiest
thread, what it was doing second by second.

    python3 bench/thread_sampler.py [--interval 0.05] [--skip-s 0] [--json OUT] -- CMD ARGS...

The window is the whole run unless --mark names a line the command prints on stderr or stdout
(e.g. "timed"): then it starts at the first line containing it. Linux only; a thread that ends
between two samples keeps the CPU it had at the last one.
"""
import argparse
import collections
import json
import os
import subprocess
import sys
import threading
import time

HZ = os.sysconf("SC_CLK_TCK")
SYSCALLS = {0: "read", 1: "write", 7: "poll", 16: "ioctl", 23: "select", 24: "sched_yield",
            35: "nanosleep", 202: "futex", 230: "clock_nanosleep", 232: "epoll_wait",
            270: "pselect6", 271: "ppoll", 281: "epoll_pwait", 441: "epoll_pwait2"}


def read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


def parse_stat(stat):
    """(name, state, utime, stime) from a /proc/<pid>/task/<tid>/stat line; the name may hold
    spaces and parentheses.

    >>> parse_stat("4242 (gb-load 3) S 1 2 3 4 5 6 7 8 9 10 150 25 0 0")
    ('gb-load 3', 'S', 150, 25)
    >>> parse_stat("7 (a (b) c) R 1 2 3 4 5 6 7 8 9 10 3 4 0")
    ('a (b) c', 'R', 3, 4)
    """
    name = stat[stat.index("(") + 1:stat.rindex(")")]
    rest = stat[stat.rindex(")") + 2:].split()
    return name, rest[0], int(rest[11]), int(rest[12])


def syscall_name(text):
    """What /proc/<pid>/task/<tid>/syscall says the thread is in: a system call's name (its
    number where unnamed), "running", "user" (blocked outside a call) or "?" (unreadable).

    >>> syscall_name("202 0x7f 0x80 0x0 0x0 0x0 0x0 0x7ffc 0x7f12")
    'futex'
    >>> syscall_name("running")
    'running'
    >>> syscall_name("-1 0x7ffc 0x55")
    'user'
    >>> syscall_name("999 0x1")
    'sys999'
    >>> syscall_name("")
    '?'
    """
    sc = text.split()
    if not sc:
        return "?"
    if sc[0] == "running":
        return "running"
    if sc[0].lstrip("-").isdigit():
        n = int(sc[0])
        return "user" if n < 0 else SYSCALLS.get(n, f"sys{n}")
    return sc[0]


def sample_task(pid, tid):
    stat = read(f"/proc/{pid}/task/{tid}/stat")
    if not stat:
        return None
    name, state, utime, stime = parse_stat(stat)
    wchan = (read(f"/proc/{pid}/task/{tid}/wchan") or "").strip() or "-"
    call = syscall_name(read(f"/proc/{pid}/task/{tid}/syscall") or "")
    return name, state, utime, stime, wchan, call


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--interval", type=float, default=0.05)
    ap.add_argument("--mark", default="", help="the window starts at the first output line with it")
    ap.add_argument("--skip-s", type=float, default=0.0, help="seconds of the window to leave out")
    ap.add_argument("--json", default="")
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cmd = a.cmd[1:] if a.cmd and a.cmd[0] == "--" else a.cmd
    if not cmd:
        ap.error("no command")
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            errors="replace", bufsize=1)
    marked = threading.Event()
    if not a.mark:
        marked.set()

    def pump():
        for line in proc.stdout:
            sys.stdout.write(line)
            if a.mark and a.mark in line:
                marked.set()

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    t_mark = None
    first, last = {}, {}  # tid -> (name, utime, stime) at the window's start / latest sample
    per_second = collections.defaultdict(lambda: collections.Counter())  # second -> what main did
    main_cpu = collections.defaultdict(lambda: [0, 0])  # second -> [utime, stime] ticks
    states = collections.defaultdict(collections.Counter)  # thread name -> state counts
    prev_main = None
    t_first = t_last = None  # the window's first and last samples: the CPU is counted between
    while proc.poll() is None:
        time.sleep(a.interval)
        if not marked.is_set():
            continue
        now = time.monotonic()
        if t_mark is None:
            t_mark = now
        in_window = now - t_mark >= a.skip_s
        try:
            tids = os.listdir(f"/proc/{proc.pid}/task")
        except OSError:
            break
        if in_window:
            t_first = t_first if t_first is not None else now
            t_last = now
        for tid in tids:
            s = sample_task(proc.pid, tid)
            if not s:
                continue
            name, state, ut, st, wchan, call = s
            if not in_window:
                continue
            first.setdefault(tid, (name, ut, st))
            last[tid] = (name, ut, st)
            states[name][state] += 1
            if tid == str(proc.pid):
                sec = int(now - t_mark)
                per_second[sec][f"{state} {call} {wchan}"] += 1
                if prev_main:
                    main_cpu[sec][0] += ut - prev_main[0]
                    main_cpu[sec][1] += st - prev_main[1]
                prev_main = (ut, st)
    proc.wait()
    reader.join(timeout=2)
    span = (t_last - t_first) if t_first is not None else 0
    by_name = collections.defaultdict(lambda: [0, 0, 0])
    for tid, (name, ut, st) in last.items():
        f = first[tid]
        key = "main" if tid == str(proc.pid) else name
        by_name[key][0] += ut - f[1]
        by_name[key][1] += st - f[2]
        by_name[key][2] += 1
    out = {"exit": proc.returncode, "window_s": span, "threads": {}, "main_by_second": []}
    print(f"\n== threads over {span:.1f} s (exit {proc.returncode}); % of one core, user + system")
    for key, (ut, st, n) in sorted(by_name.items(), key=lambda kv: -(kv[1][0] + kv[1][1])):
        u, s = 100 * ut / HZ / span if span else 0, 100 * st / HZ / span if span else 0
        out["threads"][key] = {"threads": n, "user_pct": u, "sys_pct": s}
        print(f"  {key:16s} x{n:<3d} {u + s:7.1f} %  (user {u:6.1f}, sys {s:6.1f})")
    print("== the main thread, second by second: CPU and its three most frequent states")
    for sec in sorted(per_second):
        ut, st = main_cpu[sec]
        top = per_second[sec].most_common(3)
        total = sum(per_second[sec].values())
        row = {"second": sec, "user_pct": 100 * ut / HZ, "sys_pct": 100 * st / HZ,
               "states": {k: v / total for k, v in top}}
        out["main_by_second"].append(row)
        print(f"  {sec:3d}s  user {row['user_pct']:5.0f} sys {row['sys_pct']:5.0f}  " +
              ", ".join(f"{k} {100 * v / total:.0f}%" for k, v in top))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
