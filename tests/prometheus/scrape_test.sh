#!/usr/bin/env bash
# tests/prometheus/scrape_test.sh GPUBASE: `gpubase watch --prometheus 127.0.0.1:0` scraped with
# curl while it watches a short CPU job (several scrapes, a 404), the scraped text and the
# --prometheus-textfile file checked by `promtool check metrics` (Debian: prometheus), then a
# second watch stopped with Ctrl-C closes its port. Exit 77 (skipped) without curl or promtool.
set -uo pipefail
GPUBASE=${1:?usage: scrape_test.sh GPUBASE}
for tool in curl promtool; do
  if ! command -v "$tool" >/dev/null; then
    echo "skipped: $tool not installed (Debian: apt install curl prometheus)"
    exit 77
  fi
done
TMP=$(mktemp -d)
SECONDS=0
trap 'kill $WATCH 2>/dev/null; rm -rf "$TMP"' EXIT
export GPUBASE_HOME=$TMP/home
fail() { echo "FAIL: $*"; echo "--- gpubase stderr:"; cat "$TMP/err" 2>/dev/null; exit 1; }

# The URL gpubase prints on stderr (port 0: a free port).
wait_for_url() {
  for _ in $(seq 100); do
    url=$(sed -n 's/^gpubase: Prometheus metrics at \(http:[^ ]*\)$/\1/p' "$TMP/err")
    [[ -n $url ]] && return 0
    kill -0 "$WATCH" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}

# 1. A CPU job (a shell loop) sampled every 0.2 s, until the test makes the file it waits for
#    (--duration 60 bounds it should the test die first).
"$GPUBASE" watch --prometheus 127.0.0.1:0 --prometheus-textfile "$TMP/gpubase.prom" \
  --interval 0.2 --duration 60 --view none --no-save --no-perf -- \
  sh -c 'while [ ! -e "$0" ]; do i=0; while [ $i -lt 20000 ]; do i=$((i + 1)); done; done' \
  "$TMP/stop" >"$TMP/report" 2>"$TMP/err" &
WATCH=$!
wait_for_url || fail "no metrics address on stderr"
echo "serving at $url"
sleep 1  # a few samples in
for i in 1 2 3; do
  curl -sf --max-time 5 "$url" >"$TMP/scrape$i" || fail "scrape $i of $url failed"
  sleep 0.3
done
code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "${url%/metrics}/other")
[[ $code == 404 ]] || fail "GET /other answered $code, not 404"
grep -q '^gpubase_cpu_core_busy_ratio{core="0"} ' "$TMP/scrape3" || fail "no per-core figure"
grep -q '^# TYPE gpubase_watch_samples_total counter$' "$TMP/scrape3" || fail "no samples counter"
grep -q '^gpubase_job_running 1$' "$TMP/scrape3" || fail "the job is not shown running"
s1=$(sed -n 's/^gpubase_watch_samples_total //p' "$TMP/scrape1")
s3=$(sed -n 's/^gpubase_watch_samples_total //p' "$TMP/scrape3")
((s3 > s1)) || fail "samples counter did not grow between scrapes ($s1 -> $s3)"
promtool check metrics <"$TMP/scrape3" || fail "promtool rejects the scraped text"
touch "$TMP/stop"
wait "$WATCH"
rc=$?
[[ $rc == 0 ]] || fail "gpubase watch exited $rc"
[[ -f $TMP/gpubase.prom ]] || fail "no textfile written"
promtool check metrics <"$TMP/gpubase.prom" || fail "promtool rejects the textfile"
grep -q '^gpubase_job_running 0$' "$TMP/gpubase.prom" || fail "the textfile's last state is not the job's end"
ls -a "$TMP" | grep -q '\.tmp$' && fail "a temporary file was left behind"
curl -s --max-time 2 "$url" >/dev/null && fail "the port is still open after the watch ended"
echo "($SECONDS s) ok: 3 scrapes, 404, promtool clean on the scrape and the textfile ($s3 samples)"

# 2. Ctrl-C: the server closes with the watch.
: >"$TMP/err"
"$GPUBASE" watch --prometheus 127.0.0.1:0 --interval 0.2 --view none --no-save --no-perf \
  --grace 1 -- sleep 30 >/dev/null 2>"$TMP/err" &
WATCH=$!
wait_for_url || fail "no metrics address on stderr (second watch)"
curl -sf --max-time 5 "$url" >/dev/null || fail "scrape before Ctrl-C failed"
kill -INT "$WATCH"
for _ in $(seq 100); do kill -0 "$WATCH" 2>/dev/null || break; sleep 0.1; done
kill -0 "$WATCH" 2>/dev/null && fail "gpubase watch still runs 10 s after Ctrl-C"
wait "$WATCH"
curl -s --max-time 2 "$url" >/dev/null && fail "the port is still open after Ctrl-C"
echo "($SECONDS s) ok: Ctrl-C ended the watch and closed $url"
