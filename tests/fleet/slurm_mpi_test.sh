#!/usr/bin/env bash
# tests/fleet/slurm_mpi_test.sh GPUBASE: runs gpubase through a real Slurm and a real OpenMPI on
# this machine and merges what they wrote.
#   - starts munged, slurmctld and slurmd on localhost (one node, two CPUs, a generated
#     slurm.conf in a temporary folder, ports 16817/16818 unless GB_SLURM_PORT is set);
#   - `srun -n 2 gpubase probe --json -o DIR/%N-%r.json`: two run files, ranks 0 and 1, the job
#     id and host from Slurm, the host facts real (GPU results skipped without a GPU);
#   - `mpirun -n 2 --oversubscribe gpubase probe --json ...`: ranks from OpenMPI's variables;
#   - `gpubase fleet merge` of each folder: every run read, grouped, nothing unreadable.
# Exit 77 (ctest: skipped) when slurm-wlm, munge or openmpi-bin is missing or a daemon cannot
# start here (e.g. no root), with the reason. Every daemon it starts is stopped by its pid.
set -uo pipefail
GPUBASE=${1:?usage: slurm_mpi_test.sh GPUBASE}
GPUBASE=$(readlink -f "$GPUBASE")

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; for f in "$T"/*.log "$T"/*.out; do [[ -f $f ]] && { echo "--- $f"; tail -20 "$f"; }; done; exit 1; }

for tool in munged slurmctld slurmd srun sinfo mpirun python3; do
  command -v "$tool" >/dev/null 2>&1 || skip "$tool not installed (slurm-wlm, munge, openmpi-bin)"
done
[[ $(id -u) -eq 0 ]] || skip "slurmd needs root to start job steps as their user"

T=$(mktemp -d)
chmod 755 "$T"  # munged wants its socket's folder reachable by everyone
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null; done
  rm -rf "$T"
}
trap cleanup EXIT
t0=$SECONDS

# munge: our own key and socket, nothing of the system's touched.
dd if=/dev/urandom of="$T/munge.key" bs=1024 count=1 status=none
chmod 400 "$T/munge.key"
munged -F -f --socket="$T/munge.sock" --key-file="$T/munge.key" --log-file="$T/munged.log" \
  --pid-file="$T/munged.pid" --seed-file="$T/munged.seed" >"$T/munged.out" 2>&1 &
PIDS+=($!)
for _ in $(seq 1 50); do [[ -S $T/munge.sock ]] && break; sleep 0.1; done
[[ -S $T/munge.sock ]] || skip "munged did not start: $(tail -3 "$T/munged.out")"

HOST=$(hostname -s)
PORT=${GB_SLURM_PORT:-16817}
mkdir -p "$T/state" "$T/spool"
cat >"$T/slurm.conf" <<EOF
ClusterName=gbtest
SlurmctldHost=$HOST
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$PORT
SlurmdPort=$((PORT + 1))
AuthType=auth/munge
AuthInfo=socket=$T/munge.sock
CredType=cred/munge
StateSaveLocation=$T/state
SlurmdSpoolDir=$T/spool
SlurmctldPidFile=$T/slurmctld.pid
SlurmdPidFile=$T/slurmd.pid
SlurmctldLogFile=$T/slurmctld.log
SlurmdLogFile=$T/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
NodeName=$HOST CPUs=2 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF=$T/slurm.conf
slurmctld -D -f "$SLURM_CONF" >"$T/slurmctld.out" 2>&1 &
PIDS+=($!)
slurmd -D -f "$SLURM_CONF" -N "$HOST" >"$T/slurmd.out" 2>&1 &
PIDS+=($!)
idle=0
for _ in $(seq 1 60); do
  sinfo -h -o %t 2>/dev/null | grep -q idle && { idle=1; break; }
  sleep 0.5
done
((idle)) || skip "the local Slurm did not come up: $(tail -2 "$T/slurmctld.out" "$T/slurmd.out" | tr '\n' ' ')"
echo "slurm up in $((SECONDS - t0)) s"

# A probe without a GPU exits 3 (GPU sections skipped); with one, 0 or 1. Either way a run file.
check_probe_rc() { [[ $1 -eq 0 || $1 -eq 1 || $1 -eq 3 ]] || fail "$2 exited $1"; }

# --- Slurm: srun -n 2 --------------------------------------------------------------------------
mkdir -p "$T/slurm-runs"
timeout 300 srun -n 2 --kill-on-bad-exit=0 "$GPUBASE" probe --json -q \
  -o "$T/slurm-runs/%N-%r.json" >"$T/srun.out" 2>&1
check_probe_rc $? "srun -n 2 gpubase probe"
for r in 0 1; do [[ -f $T/slurm-runs/$HOST-$r.json ]] || fail "srun: no $HOST-$r.json ($(ls "$T/slurm-runs"))"; done

# --- OpenMPI: mpirun -n 2 -------------------------------------------------------------------------
mkdir -p "$T/mpi-runs"
unset SLURM_CONF
timeout 300 mpirun -n 2 --oversubscribe --allow-run-as-root "$GPUBASE" probe --json -q \
  -o "$T/mpi-runs/%N-%r.json" >"$T/mpirun.out" 2>&1
check_probe_rc $? "mpirun -n 2 gpubase probe"
for r in 0 1; do [[ -f $T/mpi-runs/$HOST-$r.json ]] || fail "mpirun: no $HOST-$r.json ($(ls "$T/mpi-runs"))"; done

# --- the runs say who ran them ----------------------------------------------------------------
python3 - "$T" "$HOST" <<'PY' || fail "run facts"
import json, sys
t, host = sys.argv[1], sys.argv[2]
def facts(path):
    run = json.load(open(path))
    return {f["key"]: f["value"] for f in run["environment"]}
for launcher, scheduler in (("slurm", "slurm"), ("mpi", "openmpi")):
    jobs = set()
    for rank in (0, 1):
        f = facts(f"{t}/{launcher}-runs/{host}-{rank}.json")
        assert f["run.scheduler"] == scheduler, (launcher, f["run.scheduler"])
        assert f["run.host"] == host, (launcher, f["run.host"])
        assert f["run.rank"] == rank, (launcher, f["run.rank"])
        assert f["run.world_size"] == 2, (launcher, f.get("run.world_size"))
        assert f["host.logical_cores"] >= 1, "host facts are real"
        jobs.add(f["run.job_id"])
    assert len(jobs) == 1, (launcher, "one job id for both ranks", jobs)
    print(f"{launcher}: ranks 0 and 1 of job {jobs.pop()} on {host}")
PY

# --- fleet merge of each folder --------------------------------------------------------------
for d in slurm-runs mpi-runs; do
  "$GPUBASE" fleet merge -q --json -o "$T/$d.merge.json" "$T/$d"
  rc=$?
  [[ $rc -eq 0 || $rc -eq 1 ]] || fail "fleet merge $d exited $rc"
  python3 - "$T/$d.merge.json" "$rc" <<'PY' || fail "fleet merge $d"
import json, sys
m, rc = json.load(open(sys.argv[1])), int(sys.argv[2])
assert m["run_files"] == 2 and not m["unreadable"], m
# Without a GPU both runs are flagged (no_gpu) and the merge exits 1; with GPUs, rc follows flags.
assert (rc == 1) == (m["flagged_count"] > 0), (rc, m["flagged_count"])
kinds = sorted(p["kind"] for g in m["flagged"] for p in g["problems"])
print(f"merge: {m['gpus']} GPUs, {m['runs_without_gpu']} runs without a GPU, flagged {kinds}")
PY
done
echo "PASS in $((SECONDS - t0)) s"
