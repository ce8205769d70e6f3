#!/usr/bin/env bash
#
# cassandra.sh — seeding throughput of `keyplan seed` against cqlsh's COPY FROM and against
# the node's own ceiling (a minimal pipelined loader), same node, same rows, one run.
#
#   bench/cassandra.sh [SCALE]          # default 0.01: saas-control-plane, about 60,000 rows
#
#   KP_BENCH_RUNS=1                 runs of each measurement (medians are reported)
#   KP_BENCH_IN_FLIGHT=256          requests in flight for the ceiling loader
#   KP_BENCH_MODEL=examples/saas-control-plane/model.json
#   KP_BUILD=build                  the build directory (keyplan and libkpcore.a)
#
# Steps: builds keyplan, compiles bench/cassandra_raw_loader.c against libkpcore.a with
# the project's flags, installs cqlsh (PyPI) into .deps/cassandra-py (once), starts the
# loopback node with scripts/target-cassandra.sh (or uses the one running on 19042),
# generates the model's data with seed 1 and exports keyplan's rows (`keyplan seed
# --dry-run --export-items`), which are also turned into one CSV per table (and one
# per table for the static rows) for COPY FROM — before any clock starts. Then, per run,
# each tool into a keyspace of its own (kpcql_bench_<tool>_...), dropped afterwards:
#   keyplan  `keyplan seed` end to end (load and check the data, transform, CREATE,
#            write with prepared INSERTs and many in flight, marker, read every row back);
#            its write phase is reported apart;
#   cqlsh    `cqlsh -f` of one COPY ... FROM per CSV (schema applied beforehand, untimed);
#   ceiling  bench/cassandra_raw_loader: every row's values bound beforehand, timed only
#            sending single-row prepared INSERTs with KP_BENCH_IN_FLIGHT in flight.
# It prints rows/s per tool, the node's CPU seconds during each (from /proc/PID/stat) and
# the ratios, and appends every run to bench/out/cassandra/runs.ndjson.
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname -- "${BASH_SOURCE[0]}")/../scripts/lib.sh"
cd "$KP_ROOT"

case ${1:-} in -h|--help) kp_usage "${BASH_SOURCE[0]}"; exit 0 ;; esac
scale=${1:-0.01}
runs=${KP_BENCH_RUNS:-1}
in_flight=${KP_BENCH_IN_FLIGHT:-256}
model=$(kp_build_path "${KP_BENCH_MODEL:-examples/saas-control-plane/model.json}")
build=$(kp_build_path "${KP_BUILD:-build}")
out=$KP_ROOT/bench/out/cassandra
venv=$KP_ROOT/.deps/cassandra-py
keyplan=$build/keyplan
mkdir -p "$out"

kp_log "building keyplan in ${build#"$KP_ROOT"/}"
cmake --build "$build" --target keyplan kpcore >"$out/build.log" 2>&1 || { tail -n 30 "$out/build.log" >&2; kp_die "the build failed"; }
cc -std=c11 -O2 -g -DNDEBUG -D_POSIX_C_SOURCE=200809L -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes \
    -Wno-unused-parameter -I"$KP_ROOT" $(pkg-config --cflags libcjson) \
    bench/cassandra_raw_loader.c "$build/libkpcore.a" $(pkg-config --libs libcjson openssl libcurl libmongoc-1.0) -lm \
    -o "$out/cassandra_raw_loader"
if [[ ! -x $venv/bin/cqlsh ]]; then
    kp_log "installing cqlsh into ${venv#"$KP_ROOT"/}"
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet cqlsh cassandra-driver
fi
scripts/target-cassandra.sh start >/dev/null
url=$(scripts/target-cassandra.sh url)
host=${url%:*} port=${url##*:}
server_pid=$(cat .deps/run/cassandra.pid)
ticks=$(getconf CLK_TCK)
server_cpu() { awk -v t="$ticks" '{ printf "%.3f", ($14 + $15) / t }' "/proc/$server_pid/stat"; }
cqlsh() { "$venv/bin/cqlsh" "$host" "$port" --request-timeout=60 "$@"; }

# ---- the data, the export, the CSVs (untimed) ---------------------------------------------------
data=$out/data-$scale
items=$out/items-$scale.ndjson
rm -rf "$data" "$out/csv"
"$keyplan" generate "$model" --out "$data" --scale "$scale" --seed 1 >/dev/null
"$keyplan" seed "$model" --db cassandra --data "$data" --scale "$scale" --dry-run --quiet --export-items "$items" >/dev/null
rows=$(wc -l <"$items")
kp_log "$rows rows from $(basename "$(dirname "$model")") at scale $scale"
mkdir -p "$out/csv"
python3 - "$items" "$out/csv" <<'EOF'
import csv, json, os, re, sys
items, folder = sys.argv[1], sys.argv[2]
tables = {}
ts = re.compile(r"^(\d{4}-\d\d-\d\d)T(\d\d:\d\d:\d\d(\.\d+)?)Z$")
def cell(v):
    if v is None: return ""
    if isinstance(v, bool): return "True" if v else "False"
    if isinstance(v, str):
        m = ts.match(v)
        return "%s %s+0000" % (m.group(1), m.group(2)) if m else v
    return json.dumps(v)
with open(items) as f:
    for line in f:
        j = json.loads(line)
        item = j["item"]
        static = item.pop("$static", False)
        tables.setdefault((j["table"], static), []).append(item)
def literal(v):
    if v is None: return "null"
    if isinstance(v, bool): return "true" if v else "false"
    if isinstance(v, str): return "'" + v.replace("'", "''") + "'"
    return json.dumps(v)
for (table, static), rows in tables.items():
    if static:
        # COPY FROM needs every primary key column: a partition's static row is an INSERT
        with open(os.path.join(folder, table + "__static.cql"), "w") as out:
            for r in rows:
                out.write('INSERT INTO "%%KS%%"."%s" (%s) VALUES (%s);\n' % (table, ", ".join('"%s"' % c for c in r),
                          ", ".join(literal(r[c]) for c in r)))
        continue
    cols = []
    for r in rows:
        for c in r:
            if c not in cols: cols.append(c)
    name = "%s%s" % (table, "__static" if static else "")
    with open(os.path.join(folder, name + ".csv"), "w", newline="") as out:
        w = csv.writer(out, doublequote=False, escapechar="\\")   # cqlsh's reader: backslash escapes
        w.writerow(cols)
        for r in rows: w.writerow([cell(r.get(c)) for c in cols])
    with open(os.path.join(folder, name + ".cols"), "w") as out:
        out.write(", ".join('"%s"' % c for c in cols))
EOF

keyspace_of() { python3 -c 'import json,re,sys
n=sys.argv[2]+json.load(open(sys.argv[1]))["model"]
print(re.sub(r"[^a-z0-9]+", "_", re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", n).lower()).strip("_"))' "$model" "$1"; }

schema() {   # schema PREFIX — the emitted schema, applied with cqlsh (untimed)
    rm -rf "$out/emit"
    "$keyplan" emit "$model" --db cassandra --scale "$scale" --prefix "$1" --out "$out/emit" >/dev/null
    cqlsh -f "$out/emit/cassandra/schema.cql"
}
drop() { cqlsh -e "DROP KEYSPACE IF EXISTS $(keyspace_of "$1");" >/dev/null 2>&1 || true; }
now() { date +%s.%N; }

results=$out/results.ndjson
: >"$results"
for run in $(seq "$runs"); do
    # keyplan
    p=kpcql_bench_k${run}_; drop "$p"
    c0=$(server_cpu); t0=$(now)
    "$keyplan" seed "$model" --db cassandra --data "$data" --scale "$scale" --target "cassandra=$url" --prefix "$p" \
        --format json --quiet >"$out/seed.json"
    t1=$(now); c1=$(server_cpu)
    write_s=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["databases"][0]["phases"]["write"])' "$out/seed.json")
    echo "{\"run\":$run,\"tool\":\"keyplan\",\"rows\":$rows,\"seconds\":$(echo "$t1 - $t0" | bc),\"write_seconds\":$write_s,\"server_cpu\":$(echo "$c1 - $c0" | bc)}" >>"$results"
    drop "$p"
    # cqlsh COPY FROM
    p=kpcql_bench_c${run}_; drop "$p"; schema "$p"
    ks=$(keyspace_of "$p")
    : >"$out/copy.cql"
    for f in "$out"/csv/*.csv; do
        t=$(basename "$f" .csv)
        echo "COPY $ks.\"$t\" ($(cat "${f%.csv}.cols")) FROM '$f' WITH HEADER = true;" >>"$out/copy.cql"
    done
    for f in "$out"/csv/*__static.cql; do
        [[ -f $f ]] && sed "s/%KS%/$ks/" "$f" >>"$out/copy.cql"
    done
    c0=$(server_cpu); t0=$(now)
    cqlsh -f "$out/copy.cql" >"$out/copy.out" 2>&1 || { cat "$out/copy.out" >&2; kp_die "cqlsh COPY FROM failed"; }
    t1=$(now); c1=$(server_cpu)
    copied=$(sed -n 's/^\([0-9]*\) rows imported.*/\1/p' "$out/copy.out" | paste -sd+ | bc)
    statics=$(cat "$out"/csv/*__static.cql 2>/dev/null | grep -c . || true)
    copied=$((copied + statics))
    [[ $copied == "$rows" ]] || kp_warn "cqlsh imported $copied rows, expected $rows (see $out/copy.out)"
    echo "{\"run\":$run,\"tool\":\"cqlsh\",\"rows\":$copied,\"seconds\":$(echo "$t1 - $t0" | bc),\"server_cpu\":$(echo "$c1 - $c0" | bc)}" >>"$results"
    drop "$p"
    # the ceiling
    p=kpcql_bench_r${run}_; drop "$p"; schema "$p"
    c0=$(server_cpu)
    line=$("$out/cassandra_raw_loader" "$url" "$(keyspace_of "$p")" "$items" "$in_flight" 2)
    c1=$(server_cpu)
    secs=$(echo "$line" | awk '{print $4}')
    echo "{\"run\":$run,\"tool\":\"ceiling\",\"rows\":$rows,\"seconds\":$secs,\"server_cpu\":$(echo "$c1 - $c0" | bc)}" >>"$results"
    drop "$p"
done
cat "$results" >>"$out/runs.ndjson"

python3 - "$results" "$in_flight" <<'EOF'
import json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
def med(tool, key):
    v = [r[key] for r in runs if r["tool"] == tool and key in r]
    return statistics.median(v) if v else None
rows = runs[0]["rows"]
k, kw, c, x = med("keyplan", "seconds"), med("keyplan", "write_seconds"), med("cqlsh", "seconds"), med("ceiling", "seconds")
print("%-28s %10s %9s %12s" % ("tool", "rows/s", "wall s", "server CPU s"))
print("%-28s %10.0f %9.2f %12.2f" % ("keyplan seed (end to end)", rows / k, k, med("keyplan", "server_cpu")))
print("%-28s %10.0f %9.2f %12s" % ("keyplan seed (write phase)", rows / kw, kw, "-"))
print("%-28s %10.0f %9.2f %12.2f" % ("cqlsh COPY FROM", rows / c, c, med("cqlsh", "server_cpu")))
print("%-28s %10.0f %9.2f %12.2f" % ("ceiling, %s in flight" % sys.argv[2], rows / x, x, med("ceiling", "server_cpu")))
print("keyplan / cqlsh = %.2fx end to end (%.2fx write phase); keyplan / ceiling = %.0f %% end to end, %.0f %% write phase"
      % (c / k, c / kw, 100 * x / k, 100 * x / kw))
EOF
