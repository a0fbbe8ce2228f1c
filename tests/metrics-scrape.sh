#!/bin/bash
# SPDX-License-Identifier: MIT
# make check-prometheus: a real Prometheus (Debian's prometheus package)
# scrapes rdmabrokerd's [metrics] listener once and finds the broker's
# series through its own query API; skipped (77) without prometheus or
# curl. Bounded: at most CHECK_PROMETHEUS_SECONDS (default 60) of waiting.
set -u
daemon=${RDMABROKERD:-./rdmabrokerd}
ctl=${RDMABROKERCTL:-./rdmabrokerctl}
limit=${CHECK_PROMETHEUS_SECONDS:-60}
for c in prometheus curl; do
	if ! command -v "$c" >/dev/null; then
		echo "check-prometheus: $c is not installed (apt-get install prometheus curl); skipped"
		exit 77
	fi
done
tmp=$(mktemp -d) || exit 99
dpid= ppid=
cleanup() {
	[[ -n $ppid ]] && kill "$ppid" 2>/dev/null
	[[ -n $dpid ]] && kill "$dpid" 2>/dev/null
	wait
	rm -rf "$tmp"
}
trap cleanup EXIT

# A port nobody listens on (a few tries: another process may take it
# between the look and the bind).
free_port() {
	local p
	for _ in $(seq 50); do
		p=$((20000 + RANDOM % 40000))
		ss -Hltn "sport = :$p" 2>/dev/null | grep -q . || { echo "$p"; return; }
	done
	return 1
}

# wait_for SECS CMD...: until CMD succeeds, at most SECS.
wait_for() {
	local end=$((SECONDS + $1))
	shift
	until "$@"; do
		((SECONDS < end)) || return 1
		sleep 0.2
	done
}

for try in 1 2 3; do
	mport=$(free_port) || exit 99
	printf '[metrics]\nlisten = 127.0.0.1:%s\n' "$mport" >"$tmp/rdmabroker.conf"
	"$daemon" --device soft --socket "$tmp/sock" --runtime-dir "$tmp" \
		--config "$tmp/rdmabroker.conf" 2>>"$tmp/daemon.log" &
	dpid=$!
	wait_for 10 test -S "$tmp/sock" && break
	kill "$dpid" 2>/dev/null
	wait "$dpid" 2>/dev/null
	dpid=
done
if [[ -z $dpid ]]; then
	echo "FAIL: rdmabrokerd did not start:"
	cat "$tmp/daemon.log"
	exit 1
fi
# A client with a context, so that a domain has figures.
RDMABROKER_SOCKET=$tmp/sock "$ctl" status >/dev/null || exit 1

cat >"$tmp/prometheus.yml" <<YML
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: rdmabroker
    static_configs:
      - targets: ['127.0.0.1:$mport']
YML
for try in 1 2 3; do
	pport=$(free_port) || exit 99
	prometheus --config.file="$tmp/prometheus.yml" \
		--storage.tsdb.path="$tmp/data" \
		--web.listen-address="127.0.0.1:$pport" \
		>"$tmp/prometheus.log" 2>&1 &
	ppid=$!
	wait_for 20 curl -sf "http://127.0.0.1:$pport/-/ready" -o /dev/null && break
	kill "$ppid" 2>/dev/null
	wait "$ppid" 2>/dev/null
	ppid=
done
if [[ -z $ppid ]]; then
	echo "FAIL: prometheus did not start:"
	tail -n 20 "$tmp/prometheus.log"
	exit 1
fi

# query EXPR: the JSON answer of Prometheus's instant query.
query() {
	curl -sf --get "http://127.0.0.1:$pport/api/v1/query" \
		--data-urlencode "query=$1"
}
scraped() {
	query 'up{job="rdmabroker"}' | grep -q '"value":\[[0-9.]*,"1"\]'
}
if ! wait_for "$limit" scraped; then
	echo "FAIL: Prometheus did not scrape the broker in ${limit}s:"
	query 'up' || true
	curl -s "http://127.0.0.1:$pport/api/v1/targets" || true
	tail -n 20 "$tmp/prometheus.log"
	exit 1
fi
status=0
for expr in 'rdmabroker_build_info' \
	'rdmabroker_device_dm_size_bytes{device="soft0"}' \
	'rdmabroker_requests_total{type="status"}' \
	'scrape_samples_scraped{job="rdmabroker"} > 20'; do
	out=$(query "$expr")
	if grep -q '"result":\[\]' <<<"$out" || ! grep -q '"status":"success"' <<<"$out"; then
		echo "FAIL: Prometheus has no $expr: $out"
		status=1
	else
		echo "PASS: $expr: $(grep -o '"value":\[[^]]*\]' <<<"$out" | head -n 1)"
	fi
done
exit $status
