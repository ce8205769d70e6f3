#!/usr/bin/env bash
#
# mongodb.sh — seeding throughput of `keyplan seed --db mongodb` against pymongo's
# insert_many (and mongoimport, where there is one), on the same FerretDB, with the same
# documents, one run of each tool per round.
#
#   bench/mongodb.sh [SCALE]            # default 0.01: saas-control-plane, 20,100 documents
#
#   KP_BENCH_RUNS=3             rounds (the medians are reported)
#   KP_BENCH_PORT=28300         the port of FerretDB when this script starts it; a FerretDB
#                               of this checkout that already runs is used where it listens
#   KP_BENCH_MODEL=examples/saas-control-plane/model.json
#   KP_BUILD=build              the build directory
#   KP_BENCH_MONGOIMPORT=PATH   a mongoimport binary; else the one on PATH, else the script
#                               tries `go install` from the Go module proxy and says why
#                               there is none
#
# Steps: builds keyplan, installs pymongo into .deps/bench-mongo-venv (pip, once), starts
# FerretDB with scripts/target-ferretdb.sh (stopped again on exit when it started it),
# generates the model's data with seed 1 and exports keyplan's documents (`keyplan seed
# --db mongodb --dry-run --export-items`: canonical Extended JSON, exactly the documents
# seed writes). A warm-up `keyplan seed` (not counted) creates the collections whose
# indexes (index_information) the other tools create before their clock starts. Then,
# per round, in an order that rotates, each tool into collections of its own prefix,
# dropped afterwards:
#   keyplan      `keyplan seed` end to end under /usr/bin/time (load and check the raw
#                NDJSON, transform, create collections and indexes, insert, marker, read
#                back); its write phase is reported apart;
#   pymongo      bench/pymongo_seed.py: decode the export (bson.json_util), insert_many
#                per collection; its own CPU, of the timed part;
#   mongoimport  one `mongoimport --mode insert` per collection file split from the export,
#                under /usr/bin/time (the process's CPU).
# For every run it records wall seconds, client CPU (user + sys), FerretDB's CPU (from
# /proc/PID/stat) and the load average into bench/out/mongodb/runs.ndjson, and prints a
# table of medians with the ratios.
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname -- "${BASH_SOURCE[0]}")/../scripts/lib.sh"
cd "$KP_ROOT"

case ${1:-} in -h|--help) kp_usage "${BASH_SOURCE[0]}"; exit 0 ;; esac
scale=${1:-0.01}
runs=${KP_BENCH_RUNS:-3}
port=${KP_BENCH_PORT:-28300}
model=$(kp_build_path "${KP_BENCH_MODEL:-examples/saas-control-plane/model.json}")
build=$(kp_build_path "${KP_BUILD:-build}")
out=$KP_ROOT/bench/out/mongodb
venv=$KP_ROOT/.deps/bench-mongo-venv
keyplan=$build/keyplan
database=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["model"])' "$model")

[[ -f $model ]] || kp_die "no model at $model" 2
[[ -x /usr/bin/time ]] || kp_die "/usr/bin/time is missing (apt-get install time)" 2
mkdir -p "$out"

# ---- tools ------------------------------------------------------------------------------
kp_log "building keyplan in ${build#"$KP_ROOT"/}"
cmake --build "$build" --target keyplan >"$out/build.log" 2>&1 || { tail -n 30 "$out/build.log" >&2; kp_die "the build failed"; }
if ! "$venv/bin/python" -c 'import pymongo' 2>/dev/null; then
    kp_log "installing pymongo into ${venv#"$KP_ROOT"/}"
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet pymongo
fi
pymongo_version=$("$venv/bin/python" -c 'import pymongo; print(pymongo.version)')

mongoimport=${KP_BENCH_MONGOIMPORT:-$(command -v mongoimport || true)}
mongoimport_note=
if [[ -z $mongoimport ]]; then
    # mongo-tools' release tags (100.x.y) are not Go module versions; ask the proxy anyway
    kp_log "no mongoimport here; trying go install github.com/mongodb/mongo-tools/mongoimport/main@latest"
    if GOBIN=$KP_ROOT/.deps/mongo-tools timeout 300 go install github.com/mongodb/mongo-tools/mongoimport/main@latest \
            >"$out/mongoimport-build.log" 2>&1; then
        mv -f "$KP_ROOT/.deps/mongo-tools/main" "$KP_ROOT/.deps/mongo-tools/mongoimport"
        mongoimport=$KP_ROOT/.deps/mongo-tools/mongoimport
    else
        mongoimport_note=$(grep -m 1 -o 'reading https://[^ ]*: [0-9]* [A-Za-z ]*' "$out/mongoimport-build.log" ||
            tail -n 1 "$out/mongoimport-build.log")
        kp_warn "mongoimport could not be built: $mongoimport_note (full output in ${out#"$KP_ROOT"/}/mongoimport-build.log); measuring without it"
    fi
fi

# ---- the server ---------------------------------------------------------------------------
started_here=0
if ! scripts/target-ferretdb.sh status >/dev/null 2>&1; then
    scripts/target-ferretdb.sh start --port "$port" >/dev/null
    started_here=1
fi
stop_server() { ((started_here)) && scripts/target-ferretdb.sh stop >/dev/null 2>&1; started_here=0; }
trap stop_server EXIT
trap 'exit 130' INT TERM
url=$(scripts/target-ferretdb.sh url)
server_pid=$(cat .deps/run/ferretdb.pid)
kp_log "FerretDB at $url (pid $server_pid); database '$database'"
ticks=$(getconf CLK_TCK)
server_cpu() { awk -v t="$ticks" '{ printf "%.3f", ($14 + $15) / t }' "/proc/$server_pid/stat"; }
loadavg() { cut -d' ' -f1 /proc/loadavg; }

# ---- the data ------------------------------------------------------------------------------
data=$out/data-$scale
items=$out/items-$scale.ndjson
rm -rf "$data" "$out/import"
"$keyplan" generate "$model" --out "$data" --scale "$scale" --seed 1 >/dev/null
"$keyplan" seed "$model" --db mongodb --data "$data" --scale "$scale" --dry-run --quiet \
    --export-items "$items" >/dev/null
count=$(wc -l <"$items")
# one file of bare documents per collection, for mongoimport
mkdir -p "$out/import"
python3 - "$items" "$out/import" <<'PY'
import json, sys
files = {}
for line in open(sys.argv[1], encoding="utf-8"):
    row = json.loads(line)
    f = files.get(row["table"]) or files.setdefault(row["table"], open(f"{sys.argv[2]}/{row['table']}.json", "w"))
    f.write(json.dumps(row["item"], separators=(",", ":")) + "\n")
PY
kp_log "$count documents ($(($(wc -c <"$items") / 1024)) KiB exported) from $(basename "$(dirname "$model")") at scale $scale"

seed() {   # seed PREFIX — keyplan seed into PREFIX, JSON report in $out/seed.json, times in $out/seed.time
    /usr/bin/time -f '%e %U %S' -o "$out/seed.time" "$keyplan" seed "$model" --db mongodb --data "$data" \
        --scale "$scale" --target "mongodb=$url" --prefix "$1" --format json --quiet >"$out/seed.json" 2>"$out/seed.err"
}
teardown() {
    "$keyplan" teardown "$model" --db mongodb --scale "$scale" --target "mongodb=$url" --prefix "$1" \
        >/dev/null 2>&1 || kp_warn "teardown of prefix $1 failed"
}

# warm-up: the indexes for the other tools
seed warm
"$venv/bin/python" - "$url" "$database" "$items" >"$out/schema.json" <<'PY'
import json, sys
from pymongo import MongoClient
db = MongoClient(sys.argv[1])[sys.argv[2]]
tables = list(dict.fromkeys(json.loads(l)["table"] for l in open(sys.argv[3])))
schema = {}
for t in tables:
    info = db["warm" + t].index_information()
    schema[t] = [{"name": n, "key": [[f, d] for f, d in i["key"]], "unique": bool(i.get("unique"))}
                 for n, i in info.items() if n != "_id_"]
json.dump(schema, sys.stdout)
PY
teardown warm

# ---- the runs ------------------------------------------------------------------------------
results=$out/runs.ndjson
: >"$results"
tools=(keyplan pymongo)
[[ -n $mongoimport ]] && tools+=(mongoimport)
kp_log "$runs rounds of: ${tools[*]} (load average now $(cut -d' ' -f1-3 /proc/loadavg))"
for ((run = 1; run <= runs; run++)); do
    n=${#tools[@]}
    for ((i = 0; i < n; i++)); do
        tool=${tools[$(((i + run - 1) % n))]}
        prefix=r$run$tool
        load_before=$(loadavg)
        cpu_before=$(server_cpu)
        case $tool in
            keyplan)
                seed "$prefix" || { cat "$out/seed.err" >&2; kp_die "keyplan seed failed"; }
                line=$(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))["databases"][0]
wall, user, system = (float(x) for x in open(sys.argv[2]).read().split()[-3:])
assert d["complete"] and d["items_read_back"] == d["items"], d
items = d["items"]
print(json.dumps({"items": items, "seconds": wall, "items_per_s": items / wall, "cpu_user": user, "cpu_sys": system,
                  "write_seconds": d["phases"]["write"], "write_items_per_s": items / d["phases"]["write"],
                  "phases": d["phases"]}))' "$out/seed.json" "$out/seed.time")
                teardown "$prefix" ;;
            pymongo)
                line=$("$venv/bin/python" bench/pymongo_seed.py --uri "$url" --database "$database" --items "$items" \
                    --schema "$out/schema.json" --prefix "$prefix") ;;
            mongoimport)
                "$venv/bin/python" bench/pymongo_seed.py --uri "$url" --database "$database" --items "$items" \
                    --schema "$out/schema.json" --prefix "$prefix" --setup-only
                # shellcheck disable=SC2016  # expanded by the inner sh
                /usr/bin/time -f '%e %U %S' -o "$out/import.time" sh -c '
                    bin=$1 uri=$2 prefix=$3; shift 3
                    for f; do
                        c=$(basename "$f" .json)
                        "$bin" --uri "$uri" --collection "$prefix$c" --file "$f" --mode insert --quiet || exit
                    done' sh "$mongoimport" "$url$database" "$prefix" "$out"/import/*.json
                line=$("$venv/bin/python" - "$url" "$database" "$prefix" "$out/import" "$out/import.time" <<'PY'
import glob, json, os, sys
from pymongo import MongoClient
db = MongoClient(sys.argv[1])[sys.argv[2]]
items = 0
for f in glob.glob(sys.argv[4] + "/*.json"):
    name = sys.argv[3] + os.path.basename(f)[:-5]
    want = sum(1 for _ in open(f))
    held = db[name].count_documents({})
    assert held == want, f"{name} holds {held} documents, not {want}"
    items += want
    db.drop_collection(name)
wall, user, system = (float(x) for x in open(sys.argv[5]).read().split()[-3:])
print(json.dumps({"items": items, "seconds": wall, "items_per_s": items / wall, "cpu_user": user, "cpu_sys": system}))
PY
                ) ;;
        esac
        cpu_after=$(server_cpu)
        line=$(python3 -c '
import json, sys
r = json.loads(sys.argv[1])
r.update(run=int(sys.argv[2]), tool=sys.argv[3], server_cpu=round(float(sys.argv[5]) - float(sys.argv[4]), 3),
         load_before=float(sys.argv[6]), load_after=float(sys.argv[7]))
print(json.dumps(r))' "$line" "$run" "$tool" "$cpu_before" "$cpu_after" "$load_before" "$(loadavg)")
        printf '%s\n' "$line" >>"$results"
        kp_log "run $run $tool: $(python3 -c '
import json, sys
r = json.loads(sys.argv[1])
print("{:,.0f} documents/s, {:.2f} s, client CPU {:.2f} s, server CPU {:.2f} s, load {}".format(
    r["items_per_s"], r["seconds"], r["cpu_user"] + r["cpu_sys"], r["server_cpu"], r["load_before"]))' "$line")"
    done
done

# ---- the summary ---------------------------------------------------------------------------
python3 - "$results" "$count" "$pymongo_version" "$(nproc)" "$mongoimport_note" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
count, pymongo_version, cores, note = int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
tools = list(dict.fromkeys(r["tool"] for r in rows))
med = lambda t, k: statistics.median(r[k] for r in rows if r["tool"] == t and k in r)
print(f"\n{count} documents, {len([r for r in rows if r['tool'] == tools[0]])} rounds, medians; pymongo {pymongo_version}; "
      f"{cores} cores; load average {min(r['load_before'] for r in rows):.1f}-{max(r['load_after'] for r in rows):.1f}")
print(f"{'tool':<12} {'docs/s':>8} {'wall s':>8} {'write docs/s':>13} {'client CPU s':>13} {'server CPU s':>13}")
for t in tools:
    write = f"{med(t, 'write_items_per_s'):>13,.0f}" if any("write_items_per_s" in r for r in rows if r["tool"] == t) else f"{'-':>13}"
    print(f"{t:<12} {med(t, 'items_per_s'):>8,.0f} {med(t, 'seconds'):>8.2f} {write} "
          f"{med(t, 'cpu_user') + med(t, 'cpu_sys'):>13.2f} {med(t, 'server_cpu'):>13.2f}")
if note:
    print(f"mongoimport: not measured ({note})")
by_run = {}
for r in rows:
    by_run.setdefault(r["run"], {})[r["tool"]] = r
def paired(f):
    v = [f(x) for x in by_run.values() if all(t in x for t in tools)]
    return statistics.median(v) if v else float("nan")
cpu = lambda r: r["cpu_user"] + r["cpu_sys"]
for peer in tools[1:]:
    print(f"keyplan / {peer}: {paired(lambda x: x['keyplan']['items_per_s'] / x[peer]['items_per_s']):.2f}x end to end"
          + (f", {paired(lambda x: x['keyplan']['write_items_per_s'] / x[peer]['write_items_per_s']):.2f}x write phases"
             if "write_items_per_s" in rows[[r['tool'] for r in rows].index(peer)] else "")
          + f"; client CPU {paired(lambda x: cpu(x['keyplan']) / cpu(x[peer])):.2f}x (median of per-round ratios)")
ph = {k: statistics.median(r["phases"][k] for r in rows if r["tool"] == "keyplan") for k in ("prepare", "setup", "write", "read_back")}
print("keyplan phases (median s): " + ", ".join(f"{k} {v:.2f}" for k, v in ph.items()) +
      "; the rest of the wall time is loading the model and data")
PY
