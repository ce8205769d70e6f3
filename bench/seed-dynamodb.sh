#!/usr/bin/env bash
#
# seed-dynamodb.sh — seeding throughput of `keyplan seed` against boto3's batch_writer
# and against the server's own ceiling, on one fresh dynalite, with the same items.
#
#   bench/seed-dynamodb.sh [SCALE]        # default 0.01: saas-control-plane, 20,100 items
#
#   KP_BENCH_RUNS=3          runs of each measurement (the medians are reported)
#   KP_BENCH_PORT=18300      the port of the benchmark's own dynalite (in memory)
#   KP_BENCH_IN_FLIGHT="1 4 8"   requests in flight for the raw loader
#   KP_BENCH_MODEL=examples/saas-control-plane/model.json
#   KP_BUILD=build           the build directory (keyplan and libkpcore.a)
#   KP_BENCH_BASELINE=PATH   another keyplan binary (e.g. an older commit's build) seeded
#                            the same way as tool "baseline", to compare two versions
#
# Steps: builds keyplan, compiles bench/ddb_raw_loader.c against build/libkpcore.a with
# the project's flags, installs boto3 into .deps/bench-venv (pip, once), starts its
# own dynalite on 127.0.0.1:$KP_BENCH_PORT (scripts/target-dynalite.sh install;
# never the integration tests' server), generates the model's data at SCALE with
# seed 1 and exports keyplan's items (`keyplan seed --dry-run --export-items`). A
# warm-up `keyplan seed` (not counted) creates the table whose DescribeTable becomes
# the CreateTable request the other tools use, and warms the server's JIT. Then,
# KP_BENCH_RUNS times, in an order that rotates from run to run, each into a table
# of its own that is deleted afterwards:
#   keyplan   `keyplan seed` end to end under /usr/bin/time (load and check the data,
#             transform, CreateTable, write, marker, read back every item);
#   boto3     bench/boto3_seed.py: read the export, TypeDeserializer, batch_writer;
#   raw N     bench/ddb_raw_loader.c: every BatchWriteItem body built beforehand, sent
#             through keyplan's client with N in flight (the ceiling).
# For every run it records wall seconds, client CPU, the server's CPU (from
# /proc/PID/stat) and the load average, into bench/out/seed-dynamodb/runs.ndjson, and
# prints a table of medians with the ratios. The machine's other work shows in the
# load average: on a shared machine, compare ratios of one run, not absolute numbers
# across runs. The server is stopped on exit, whatever happens.
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname -- "${BASH_SOURCE[0]}")/../scripts/lib.sh"
cd "$KP_ROOT"

case ${1:-} in -h|--help) kp_usage "${BASH_SOURCE[0]}"; exit 0 ;; esac
scale=${1:-0.01}
runs=${KP_BENCH_RUNS:-3}
port=${KP_BENCH_PORT:-18300}
in_flight=${KP_BENCH_IN_FLIGHT:-1 4 8}
model=$(kp_build_path "${KP_BENCH_MODEL:-examples/saas-control-plane/model.json}")
build=$(kp_build_path "${KP_BUILD:-build}")
out=$KP_ROOT/bench/out/seed-dynamodb
venv=$KP_ROOT/.deps/bench-venv
endpoint=http://127.0.0.1:$port
keyplan=$build/keyplan
baseline=${KP_BENCH_BASELINE:-}
[[ -z $baseline || -x $baseline ]] || kp_die "KP_BENCH_BASELINE=$baseline is not an executable" 2

[[ -f $model ]] || kp_die "no model at $model" 2
[[ -x /usr/bin/time ]] || kp_die "/usr/bin/time is missing (apt-get install time)" 2
kp_have python3 || kp_die "python3 is needed (for boto3 and the summary)" 2
mkdir -p "$out"

# ---- tools ------------------------------------------------------------------------------
kp_log "building keyplan in ${build#"$KP_ROOT"/}"
cmake --build "$build" --target keyplan kpcore >"$out/build.log" 2>&1 || { tail -n 30 "$out/build.log" >&2; kp_die "the build failed"; }
# the project's compile flags (CMakeLists.txt), against the library keyplan links
cc -std=c11 -O2 -g -DNDEBUG -D_POSIX_C_SOURCE=200809L -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes \
    -Wno-unused-parameter -I"$KP_ROOT" $(pkg-config --cflags libcjson libcurl) \
    bench/ddb_raw_loader.c "$build/libkpcore.a" $(pkg-config --libs libcjson libcurl) -lm -o "$out/ddb_raw_loader"
if ! "$venv/bin/python" -c 'import boto3' 2>/dev/null; then
    kp_log "installing boto3 into ${venv#"$KP_ROOT"/}"
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet boto3
fi
boto3_version=$("$venv/bin/python" -c 'import boto3; print(boto3.__version__)')
scripts/target-dynalite.sh install >/dev/null

# ---- the server ---------------------------------------------------------------------------
server_pid=
stop_server() {
    [[ -n $server_pid ]] || return 0
    kill -TERM "$server_pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
    kp_log "stopped dynalite (pid $server_pid)"
    server_pid=
}
trap stop_server EXIT
trap 'exit 130' INT TERM

ddb() {   # ddb OPERATION JSON — one request to the benchmark's server, the answer on stdout
    local now
    now=$(date -u +%Y%m%dT%H%M%SZ)
    curl -s --max-time 30 -X POST "$endpoint/" -H "X-Amz-Target: DynamoDB_20120810.$1" \
        -H 'Content-Type: application/x-amz-json-1.0' -H "X-Amz-Date: $now" \
        -H "Authorization: AWS4-HMAC-SHA256 Credential=x/${now%%T*}/us-east-1/dynamodb/aws4_request, SignedHeaders=host, Signature=0" \
        --data "$2"
}

if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
    kp_die "port $port is taken; set KP_BENCH_PORT to a free one" 2
fi
node .deps/dynalite/node_modules/dynalite/cli.js --host 127.0.0.1 --port "$port" \
    --createTableMs 0 --deleteTableMs 0 --updateTableMs 0 </dev/null >"$out/dynalite.log" 2>&1 &
server_pid=$!
ready=0
for _ in $(seq 150); do
    if ddb ListTables '{}' 2>/dev/null | grep -q TableNames; then ready=1; break; fi
    kill -0 "$server_pid" 2>/dev/null || { cat "$out/dynalite.log" >&2; kp_die "dynalite exited at start"; }
    sleep 0.2
done
((ready)) || { tail -n 30 "$out/dynalite.log" >&2; kp_die "dynalite did not answer ListTables within 30 s"; }
kp_log "dynalite $(sed -n 's/^ *"version": *"\([^"]*\)".*/\1/p' .deps/dynalite/node_modules/dynalite/package.json | head -n 1) at $endpoint (pid $server_pid, in memory)"
ticks=$(getconf CLK_TCK)
server_cpu() { awk -v t="$ticks" '{ printf "%.3f", ($14 + $15) / t }' "/proc/$server_pid/stat"; }
loadavg() { cut -d' ' -f1 /proc/loadavg; }
# share of the last 10 s in which runnable tasks waited for a CPU (Linux PSI; -1 without it)
pressure() { sed -n 's/^some avg10=\([0-9.]*\).*/\1/p' /proc/pressure/cpu 2>/dev/null | grep . || echo -1; }

# ---- the data ------------------------------------------------------------------------------
data=$out/data-$scale
items=$out/items-$scale.ndjson
rm -rf "$data"
"$keyplan" generate "$model" --out "$data" --scale "$scale" --seed 1 >/dev/null
"$keyplan" seed "$model" --db dynamodb --data "$data" --scale "$scale" --dry-run --quiet \
    --export-items "$items" >/dev/null
count=$(wc -l <"$items")
kp_log "$count items ($(($(wc -c <"$items") / 1024)) KiB exported) from $(basename "$(dirname "$model")") at scale $scale"

seed() {   # seed PREFIX [BINARY] — keyplan seed into PREFIX, JSON report in $out/seed.json, times in $out/seed.time
    /usr/bin/time -f '%e %U %S' -o "$out/seed.time" "${2:-$keyplan}" seed "$model" --db dynamodb --data "$data" \
        --scale "$scale" --target "dynamodb=$endpoint" --prefix "$1" --format json --quiet >"$out/seed.json"
}
teardown() {
    "$keyplan" teardown "$model" --db dynamodb --scale "$scale" --target "dynamodb=$endpoint" --prefix "$1" \
        >/dev/null 2>&1 || kp_warn "teardown of prefix $1 failed"
}

# warm-up: the schema for the other tools, and the server's JIT
seed warm
table=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["databases"][0]["containers"][0]["name"])' "$out/seed.json")
ddb DescribeTable "{\"TableName\":\"warm$table\"}" | python3 -c '
import json, sys
t = json.load(sys.stdin)["Table"]
out = {"TableName": sys.argv[1], "AttributeDefinitions": t["AttributeDefinitions"], "KeySchema": t["KeySchema"],
       "BillingMode": "PAY_PER_REQUEST"}
for k in ("LocalSecondaryIndexes", "GlobalSecondaryIndexes"):
    if t.get(k):
        out[k] = [{"IndexName": i["IndexName"], "KeySchema": i["KeySchema"], "Projection": i["Projection"]} for i in t[k]]
json.dump(out, sys.stdout)' "$table" >"$out/schema.json"
teardown warm

# ---- the runs ------------------------------------------------------------------------------
results=$out/runs.ndjson
: >"$results"
tools=(keyplan boto3)
[[ -n $baseline ]] && tools+=(baseline)
for k in $in_flight; do tools+=("raw$k"); done
kp_log "$runs runs of: ${tools[*]} (load average now $(cut -d' ' -f1-3 /proc/loadavg))"
for ((run = 1; run <= runs; run++)); do
    n=${#tools[@]}
    for ((i = 0; i < n; i++)); do
        tool=${tools[$(((i + run - 1) % n))]}
        prefix=r$run$tool
        load_before=$(loadavg)
        pressure_before=$(pressure)
        cpu_before=$(server_cpu)
        case $tool in
            keyplan|baseline)
                if [[ $tool == keyplan ]]; then seed "$prefix"; else seed "$prefix" "$baseline"; fi
                line=$(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))["databases"][0]
wall, user, system = (float(x) for x in open(sys.argv[2]).read().split()[-3:])
assert d["complete"] and d["items_read_back"] == d["items"], d
items = d["items"]
r = {"items": items, "seconds": wall, "items_per_s": items / wall, "cpu_user": user, "cpu_sys": system}
if "phases" in d:   # older keyplan builds do not report them
    r.update(write_seconds=d["phases"]["write"], write_items_per_s=items / d["phases"]["write"], phases=d["phases"])
print(json.dumps(r))' "$out/seed.json" "$out/seed.time")
                teardown "$prefix" ;;
            boto3)
                line=$("$venv/bin/python" bench/boto3_seed.py --endpoint "$endpoint" --items "$items" \
                    --schema "$out/schema.json" --prefix "$prefix") ;;
            raw*)
                line=$("$out/ddb_raw_loader" --endpoint "$endpoint" --items "$items" --schema "$out/schema.json" \
                    --prefix "$prefix" --in-flight "${tool#raw}") ;;
        esac
        cpu_after=$(server_cpu)
        line=$(python3 -c '
import json, sys
r = json.loads(sys.argv[1])
r.update(run=int(sys.argv[2]), tool=sys.argv[3], server_cpu=round(float(sys.argv[5]) - float(sys.argv[4]), 3),
         load_before=float(sys.argv[6]), load_after=float(sys.argv[7]), cpu_pressure_before=float(sys.argv[8]))
print(json.dumps(r))' "$line" "$run" "$tool" "$cpu_before" "$cpu_after" "$load_before" "$(loadavg)" "$pressure_before")
        printf '%s\n' "$line" >>"$results"
        kp_log "run $run $tool: $(python3 -c '
import json, sys
r = json.loads(sys.argv[1])
print("{:,.0f} items/s, {:.2f} s, client CPU {:.2f} s, server CPU {:.2f} s, load {}, CPU pressure {}%".format(
    r["items_per_s"], r["seconds"], r["cpu_user"] + r["cpu_sys"], r["server_cpu"], r["load_before"],
    r["cpu_pressure_before"]))' "$line")"
    done
done

# ---- the summary ---------------------------------------------------------------------------
python3 - "$results" "$count" "$boto3_version" "$(nproc)" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
count, boto3_version, cores = int(sys.argv[2]), sys.argv[3], sys.argv[4]
tools = list(dict.fromkeys(r["tool"] for r in rows))
med = lambda t, k: statistics.median(r[k] for r in rows if r["tool"] == t and k in r)
print(f"\n{count} items, {len([r for r in rows if r['tool'] == tools[0]])} runs each, medians; boto3 {boto3_version}; "
      f"{cores} cores; load average {min(r['load_before'] for r in rows):.1f}-{max(r['load_after'] for r in rows):.1f}, "
      f"CPU pressure (some avg10) {min(r['cpu_pressure_before'] for r in rows):.0f}-{max(r['cpu_pressure_before'] for r in rows):.0f}%")
print(f"{'tool':<10} {'items/s':>9} {'wall s':>8} {'write items/s':>14} {'client CPU s':>13} {'server CPU s':>13}")
for t in tools:
    if t.startswith("raw"):
        write = f"{med(t, 'items_per_s'):>14,.0f}"
    elif any("write_items_per_s" in r for r in rows if r["tool"] == t):
        write = f"{med(t, 'write_items_per_s'):>14,.0f}"
    else:
        write = f"{'-':>14}"
    print(f"{t:<10} {med(t, 'items_per_s'):>9,.0f} {med(t, 'seconds'):>8.2f} {write} "
          f"{med(t, 'cpu_user') + med(t, 'cpu_sys'):>13.2f} {med(t, 'server_cpu'):>13.2f}")
raw = [t for t in tools if t.startswith("raw")]
ceiling_tool = max(raw, key=lambda t: med(t, "items_per_s")) if raw else None
kp, kpw = med("keyplan", "items_per_s"), med("keyplan", "write_items_per_s")
if "baseline" in tools:
    print(f"keyplan / baseline: {kp / med('baseline', 'items_per_s'):.2f}x end to end")
if "boto3" in tools:
    print(f"keyplan / boto3: {kp / med('boto3', 'items_per_s'):.2f}x end to end "
          f"(write phases: {kpw / med('boto3', 'write_items_per_s'):.2f}x)")
if ceiling_tool:
    c = med(ceiling_tool, "items_per_s")
    print(f"keyplan / ceiling ({ceiling_tool}, {c:,.0f} items/s): {kp / c:.0%} end to end, {kpw / c:.0%} write phase")
# the same ratios run by run (tools of one run ran minutes apart at most), then their median:
# steadier than ratios of medians when the machine's other load drifts
by_run = {}
for r in rows:
    by_run.setdefault(r["run"], {})[r["tool"]] = r
def paired(f):
    v = [f(x) for x in by_run.values() if all(t in x for t in tools)]
    return statistics.median(v) if v else float("nan")
ceiling_of = lambda x: x[ceiling_tool]["items_per_s"]
parts = []
if "boto3" in tools:
    parts.append(f"keyplan/boto3 {paired(lambda x: x['keyplan']['items_per_s'] / x['boto3']['items_per_s']):.2f}x")
if raw:
    parts.append(f"keyplan/ceiling {paired(lambda x: x['keyplan']['items_per_s'] / ceiling_of(x)):.0%} end to end, "
                 f"{paired(lambda x: x['keyplan']['write_items_per_s'] / ceiling_of(x)):.0%} write phase")
if "baseline" in tools:
    parts.append(f"keyplan/baseline {paired(lambda x: x['keyplan']['items_per_s'] / x['baseline']['items_per_s']):.2f}x")
print(f"median of per-run ratios (ceiling: {ceiling_tool} of the same run): " + "; ".join(parts))
ph = {k: statistics.median(r["phases"][k] for r in rows if r["tool"] == "keyplan") for k in ("prepare", "setup", "write", "read_back")}
print("keyplan phases (median s): " + ", ".join(f"{k} {v:.2f}" for k, v in ph.items()) +
      f"; the rest of the wall time is loading the model and data")
PY
