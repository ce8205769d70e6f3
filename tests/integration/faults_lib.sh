# faults_lib.sh — shared by tests/integration/faults_*.sh (sourced, never run alone):
# which databases the registry lists, their local servers, the expected items
# (`keyplan seed --dry-run --export-items`), the independent content check
# (faults_readback.py: a Python Scan for DynamoDB, tests/fault_mongo_dump for MongoDB)
# and the machine-readable results file.
#
# The caller sets: root, build, keyplan, work; and calls faults_init NAME.
# Results: one JSON line per test and database appended to $KP_FAULT_RESULTS
# (default BUILD/faults-results.ndjson), which docs/reliability.md's table is read from.

faults_init() {
    fault_test=$1
    results=${KP_FAULT_RESULTS:-$build/faults-results.ndjson}
    seed=${KP_TEST_SEED:-$(( (RANDOM << 15) | RANDOM ))}
    RANDOM=$seed
    echo "$fault_test: random seed $seed (KP_TEST_SEED=$seed replays it)"
    passed=0 failed=0
}
ok() { echo "ok: $*"; passed=$((passed + 1)); }
bad() { echo "FAIL: $*"; failed=$((failed + 1)); }

# the databases the registry lists (a backend that lands later joins by itself);
# KP_FAULT_DBS narrows them
registered_dbs() {
    local db model=$root/examples/saas-control-plane/model.json
    for db in ${KP_FAULT_DBS:-dynamodb mongodb cassandra}; do
        "$keyplan" advise "$model" --db "$db" >/dev/null 2>&1 && echo "$db"
    done
}

# start_target DB — the shared server on its standard port (never restarted here); prints its URL
start_target() {
    case $1 in
        dynamodb) "$root/scripts/target-dynalite.sh" start >&2 && "$root/scripts/target-dynalite.sh" url ;;
        mongodb) "$root/scripts/target-ferretdb.sh" start >&2 && "$root/scripts/target-ferretdb.sh" url ;;
        cassandra) "$root/scripts/target-cassandra.sh" start >&2 && "$root/scripts/target-cassandra.sh" url ;;
        *) return 1 ;;
    esac
}

# export_items DB MODEL DATA SCALE PREFIX OUT — what transform makes, in seeding order
export_items() {
    "$keyplan" seed "$2" --db "$1" --data "$3" --scale "$4" --prefix "$5" --dry-run --quiet --export-items "$6" >/dev/null
}

# readback DB URL DATABASE EXPORT — the independent content check (for a database without
# an independent reader, it uses the caller's model, data, scale and prefix); prints its lines,
# sets rb_missing, rb_extra, rb_duplicated; returns 0 when the server holds exactly EXPORT
readback() {
    local db=$1 url=$2 database=$3 export=$4 out rc tables
    case $db in
        dynamodb) out=$(python3 "$here/faults_readback.py" dynamodb "$url" "$export" 2>&1); rc=$? ;;
        mongodb)
            mapfile -t tables < <(python3 -c 'import json,sys
seen=[]
for l in open(sys.argv[1]):
    t=json.loads(l)["table"]
    if t not in seen: seen.append(t); print(t)' "$export")
            if "$build/tests/fault_mongo_dump" "$url" "$database" "${tables[@]}" >"$work/dump.nd" 2>"$work/dump.err"; then
                out=$(python3 "$here/faults_readback.py" dump "$work/dump.nd" "$export" 2>&1); rc=$?
            else
                out="the independent reader failed: $(cat "$work/dump.err")"; rc=3
            fi ;;
        *)  # no independent reader for this database yet: keyplan's own read-back (the same
            # seed command on a complete target only reads back and compares every container's
            # count and content checksum with what transform made) — a real check, not an
            # independent one; said so in the output
            if "$keyplan" seed "$model" --db "$db" --data "$data" --scale "$scale" --target "$db=$url" \
                --prefix "$prefix" --format json >"$work/rb.json" 2>"$work/rb.err"; then
                out="keyplan's own read-back (no independent reader for $db yet): counts and checksums equal"$'\n'"readback ok items=? missing=0 extra=0 duplicated=0"; rc=0
            else
                out="keyplan's own read-back (no independent reader for $db yet) differs: $(cat "$work/rb.err")"$'\n'"readback MISMATCH"; rc=1
            fi ;;
    esac
    echo "$out" | sed 's/^/    /'
    local last=${out##*$'\n'}
    rb_missing=$(sed -n 's/.*missing=\([0-9]*\).*/\1/p' <<<"$last")
    rb_extra=$(sed -n 's/.*extra=\([0-9]*\).*/\1/p' <<<"$last")
    rb_duplicated=$(sed -n 's/.*duplicated=\([0-9]*\).*/\1/p' <<<"$last")
    [[ -n $rb_missing ]] || rb_missing=-1
    [[ -n $rb_extra ]] || rb_extra=-1
    [[ -n $rb_duplicated ]] || rb_duplicated=-1
    return $rc
}

# record_result JSON-FIELDS — one line into the results file, stamped and seeded
record_result() {
    mkdir -p "$(dirname -- "$results")"
    printf '{"test":"%s","seed":%s,"at":"%s",%s}\n' "$fault_test" "$seed" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$1" >>"$results"
}

# rand_between LO HI — a number from bash's seeded RANDOM
rand_between() { echo $(( $1 + RANDOM % ($2 - $1 + 1) )); }

# sleep_ms N
sleep_ms() { sleep "$(( $1 / 1000 )).$(printf '%03d' $(( $1 % 1000 )))"; }

# now_ms
now_ms() { date +%s%3N; }
