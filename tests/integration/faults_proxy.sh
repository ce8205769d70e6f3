#!/usr/bin/env bash
#
# faults_proxy.sh BUILD_DIR — seed and verify through tests/fault_proxy, a loopback
# proxy between keyplan and each real server that injects delays, connections dropped
# before a response, truncated responses and the database's own throttling / overload
# errors (fault_proxy.c says which, per protocol), for every database the registry
# lists.
#   1. seed through the proxy (fault rate KP_FAULT_RATE, default 0.05 of requests):
#      it completes, or stops non-zero with a message and the same command completes it;
#      then an independent reader, straight to the server, finds exactly the items
#      transform makes (faults_readback.py) — none lost, none duplicated;
#   2. verify through the proxy: exit 0, or 1 where every failed check is a request
#      count (retries are requests), never a response that differs;
#   3. through a proxy that drops every request after the handshake, seed and verify
#      both exit 3 with a message — never 0: verify never reports a pass it did not see.
# KP_TEST_SEED replays the proxy's random choices (printed). Appends a JSON line per
# database to BUILD/faults-results.ndjson.
set -uo pipefail
here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
root=$(cd -- "$here/../.." && pwd)
build=$(cd -- "${1:-$root/build}" && pwd)
keyplan=${KP_KEYPLAN:-$build/keyplan}
proxy=$build/tests/fault_proxy
work=$(mktemp -d "${TMPDIR:-/tmp}/kp-faults-proxy.XXXXXX")
: >"$work/proxy.pids"
# start_proxy runs in $(...), a subshell: the pids go through a file for the cleanup
cleanup() { local p; while read -r p; do kill "$p" 2>/dev/null; done <"$work/proxy.pids"; rm -rf "$work"; }
trap cleanup EXIT
# shellcheck source=tests/integration/faults_lib.sh
source "$here/faults_lib.sh"
faults_init faults_proxy
[[ -x $proxy ]] || { echo "FAIL: tests/fault_proxy was not built"; exit 1; }

rate=${KP_FAULT_RATE:-0.05}
name=saas-control-plane scale=${KP_FAULT_SCALE:-0.002}
model=$root/examples/$name/model.json data=$work/data
"$keyplan" generate "$model" --out "$data" --scale "$scale" --seed 13 >/dev/null || { echo "FAIL: generate"; exit 1; }
records=$(cat "$data"/*.ndjson | grep -c .)
mapfile -t dbs < <(registered_dbs)
echo "databases: ${dbs[*]}; $records records of $name; fault rate $rate (MongoDB: 5 times that)"

# start_proxy PROTOCOL UPSTREAM RATE STATS [SPARE] — prints the port it listens on
start_proxy() {
    local port spare=${5:-1}
    for port in $(seq $((20000 + RANDOM % 20000)) 1 65000); do
        "$proxy" --listen "$port" --upstream "$2" --protocol "$1" --rate "$3" --seed "$seed" --spare "$spare" --stats "$4" >"$work/proxy.log" 2>&1 &
        local pid=$!
        sleep 0.2
        if kill -0 "$pid" 2>/dev/null && grep -q listening "$work/proxy.log"; then echo "$pid" >>"$work/proxy.pids"; echo "$port"; return 0; fi
        wait "$pid" 2>/dev/null
    done
    return 1
}
stat_of() { awk -v k="$1" '$1 == k {print $2}' "$2"; }

for db in "${dbs[@]}"; do
    url=$(start_target "$db") || { bad "$db: the local server did not start"; continue; }
    case $db in
        dynamodb) protocol=http upstream=${url#http://} ;;
        mongodb) protocol=mongo upstream=${url#mongodb://}; upstream=${upstream%%/*} ;;
        cassandra) protocol=cql upstream=$url ;;
    esac
    via() { case $db in dynamodb) echo "http://127.0.0.1:$1" ;; mongodb) echo "mongodb://127.0.0.1:$1/" ;; *) echo "127.0.0.1:$1" ;; esac; }
 # MongoDB's bulks are few and large (500 documents a command): a higher rate to hit some
    db_rate=$rate
    [[ $db == mongodb ]] && db_rate=$(python3 -c "print(min(1, 5 * $rate))")
    port=$(start_proxy "$protocol" "$upstream" "$db_rate" "$work/stats-$db") || { bad "$db: the fault proxy did not start"; continue; }
    through=(--target "$db=$(via "$port")")
    prefix=kprel-p$$-
    export_items "$db" "$model" "$data" "$scale" "$prefix" "$work/expected.nd" || { bad "$db: export-items"; continue; }

    # 1. seed through the proxy
    ferret_log=$root/.deps/run/ferretdb.log
    ferret_lines=$(wc -l <"$ferret_log" 2>/dev/null || echo 0)
    attempts=0 status=1
    while ((attempts < 5)); do
        attempts=$((attempts + 1))
        "$keyplan" seed "$model" --db "$db" --data "$data" --scale "$scale" "${through[@]}" --prefix "$prefix" --quiet >"$work/seed.out" 2>&1
        status=$?
        ((status == 0)) && break
        if ((status != 3)) || ! grep -qi 'rerun\|resume\|server\|MongoDB\|DynamoDB\|Cassandra' "$work/seed.out"; then
            bad "$db: seed through the proxy exited $status without a server message"; cat "$work/seed.out"; break
        fi
        echo "    seed attempt $attempts stopped (exit 3): $(grep -m1 -i error "$work/seed.out" | cut -c1-200)"
    done
    # (grep reads the whole log: `grep -q` would leave at the first match, and tail, killed by
    # SIGPIPE while writing the rest, would fail the pipeline under pipefail — it did in CI)
    # FerretDB 1.24 itself can panic ("runtime error: slice bounds out of range") on every
    # createIndexes of a collection after a connection was cut in the middle of one: a
    # server defect no client can get past. Then the allowed outcome is the other one
    # the issue names: every attempt failed with a clear message, nothing reported success.
    server_defect=0
    if ((status != 0)) && [[ $db == mongodb ]] &&
        tail -n +"$((ferret_lines + 1))" "$ferret_log" 2>/dev/null | grep 'runtime error' >/dev/null; then
        server_defect=1
        ok "$db: every seed attempt ended with exit 3 and a message; FerretDB panicked on the server side (runtime error in its log, a FerretDB defect after a cut connection), and keyplan never reported success"
    elif ((status == 0)); then ok "$db: seed through the proxy completed after $attempts run(s)"
    else bad "$db: seed through the proxy did not complete in 5 runs"; tail -5 "$work/seed.out"; fi
    if ((server_defect)); then
        rb_missing=0 rb_duplicated=0 rb_extra=0     # nothing was acknowledged, so nothing acknowledged was lost
    elif readback "$db" "$url" "$name" "$work/expected.nd" >"$work/rb.out"; then ok "$db: an independent reader finds exactly the $records records' items"
    else cat "$work/rb.out"; bad "$db: the server differs from the source data after a seed through faults"; fi
    lost=$rb_missing duplicated=$rb_duplicated extra=$rb_extra

    # 2. verify through the proxy
    "$keyplan" verify "$model" --db "$db" --data "$data" --scale "$scale" "${through[@]}" --prefix "$prefix" \
        --samples 5 --pages 5 --seed "$seed" >"$work/verify.out" 2>&1
    vstatus=$?
    fails=$(grep -c ' FAIL ' "$work/verify.out")
    # a retried request is a request: a first page's count or a page's bound on requests
    claims=$(grep -cE 'the plan claims .* measured|read [0-9]+ requests; the plan.s bound' "$work/verify.out")
    if ((server_defect)); then
        if ((vstatus == 2 || vstatus == 3)); then ok "$db: verify of the unseeded target exits $vstatus, no pass"
        else bad "$db: verify of a target the seed never completed exited $vstatus"; tail -5 "$work/verify.out"; fi
    elif ((vstatus == 0)); then ok "$db: verify through the proxy passed every pattern"
    elif ((vstatus == 1 && fails > 0 && fails == claims)); then
        ok "$db: verify through the proxy: $fails pattern(s) failed on request counts only (retries are requests), no response differed"
    else bad "$db: verify through the proxy exited $vstatus"; tail -15 "$work/verify.out"; fi
    injected=0
    for k in delay drop truncate throttle 5xx; do injected=$((injected + $(stat_of "$k" "$work/stats-$db"))); done
    summary=$(for k in delay drop truncate throttle 5xx; do printf '%s=%s ' "$k" "$(stat_of "$k" "$work/stats-$db")"; done)

    # 3. a server that never answers: no pass, no success
    dead=$(start_proxy "$protocol" "$upstream" 1 "$work/stats-dead-$db" 0) || { bad "$db: the dropping proxy did not start"; continue; }
    "$keyplan" verify "$model" --db "$db" --data "$data" --scale "$scale" --target "$db=$(via "$dead")" --prefix "$prefix" \
        --samples 2 --pages 5 --seed "$seed" >"$work/dead.out" 2>&1
    dstatus=$?
    if ((dstatus == 3)); then ok "$db: verify through a proxy that drops every request exits 3: $(grep -m1 -i error "$work/dead.out" | cut -c1-160)"
    else bad "$db: verify through a proxy that drops every request exited $dstatus (expected 3)"; tail -5 "$work/dead.out"; fi
    "$keyplan" seed "$model" --db "$db" --data "$data" --scale "$scale" --target "$db=$(via "$dead")" --prefix "${prefix}dead-" \
        --quiet >"$work/dead.out" 2>&1
    dstatus=$?
    if ((dstatus == 3)); then ok "$db: seed through a proxy that drops every request exits 3: $(grep -m1 -i error "$work/dead.out" | cut -c1-160)"
    else bad "$db: seed through a proxy that drops every request exited $dstatus (expected 3)"; tail -5 "$work/dead.out"; fi

    "$keyplan" teardown "$model" --db "$db" --target "$db=$url" --prefix "$prefix" >/dev/null 2>&1
    "$keyplan" teardown "$model" --db "$db" --target "$db=$url" --prefix "${prefix}dead-" >/dev/null 2>&1
    echo "faults_proxy: $db requests=$(stat_of requests "$work/stats-$db") faults=$injected ($summary) seed_runs=$attempts lost=$lost duplicated=$duplicated extra=$extra verify_exit=$vstatus seed=$seed"
    record_result "\"db\":\"$db\",\"fault\":\"proxy: $summary\",\"runs\":$attempts,\"faults\":$injected,\"records\":$records,\"lost\":$lost,\"duplicated\":$duplicated,\"extra\":$extra,\"verify_exit\":$vstatus"
done

echo "faults_proxy: $passed passed, $failed failed"
[[ $failed == 0 ]]
