#!/usr/bin/env bash
#
# export.sh BUILD_DIR — `keyplan seed --export` against the real servers: for each
# database, the files are loaded by another client than keyplan (boto3's BatchWriteItem
# with the DynamoDB JSON lines ImportTable reads, pymongo with the Extended JSON lines
# mongoimport reads, cqlsh COPY with the CSV files DSBulk reads — static rows, which COPY
# refuses, with cassandra-driver from the same CSV dialect), into the schema `keyplan
# emit` writes; then `keyplan verify` must pass on what arrived: every pattern, and every
# container read back with exactly the items and checksums the data predicts. (That a
# failed export leaves no file behind is tests/unit/test_export.c.)
set -uo pipefail
here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
root=$(cd -- "$here/../.." && pwd)
build=$(cd -- "${1:-$root/build}" && pwd)
keyplan=$build/keyplan
passed=0 failed=0
ok() { echo "ok: $*"; passed=$((passed + 1)); }
bad() { echo "FAIL: $*"; failed=$((failed + 1)); }

py=$root/.deps/mutations-py
if ! "$py/bin/python" -c 'import boto3, pymongo' 2>/dev/null; then
    python3 -m venv "$py" && "$py/bin/pip" install -q boto3==1.35.99 pymongo==4.10.1 cassandra-driver==3.29.2 ||
        { echo "FAIL: boto3 / pymongo could not be installed from PyPI"; echo "0 passed, 1 failed"; exit 1; }
fi
cq=$root/.deps/cassandra-py
if [[ ! -x $cq/bin/cqlsh ]]; then
    python3 -m venv "$cq" && "$cq/bin/pip" install -q cqlsh cassandra-driver ||
        { echo "FAIL: cqlsh could not be installed from PyPI"; echo "0 passed, 1 failed"; exit 1; }
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/kp-export.XXXXXX")
trap 'rm -rf "$work"' EXIT
model=$root/examples/saas-control-plane/model.json
scale=0.0005
"$keyplan" generate "$model" --scale $scale --seed 5 --out "$work/data" --quiet || { bad "generate"; echo "0 passed, 1 failed"; exit 1; }
prefix=ex$$
common=(--data "$work/data" --scale $scale --prefix "$prefix")
check=(--samples 30 --pages 3 --quiet)

for db in dynamodb mongodb cassandra; do
    "$root/scripts/targets.sh" install "$db" >/dev/null && "$root/scripts/targets.sh" start "$db" >/dev/null ||
        { bad "$db: the server could not be installed or started"; continue; }
    url=$("$root/scripts/targets.sh" url "$db" | awk '{print $2}')
    format=$(case $db in dynamodb) echo dynamodb-import ;; mongodb) echo mongoimport ;; cassandra) echo dsbulk ;; esac)
    out=$work/export-$db
    if "$keyplan" seed "$model" "${common[@]}" --export "$format" --out "$out" >"$work/$db.export.log" 2>&1; then
        ok "$db: seed --export $format wrote $(find "$out" -type f | wc -l) files"
    else
        bad "$db: seed --export $format"; cat "$work/$db.export.log"; continue
    fi
    "$keyplan" emit "$model" --db "$db" --prefix "$prefix" --scale $scale --out "$work/emit-$db" >/dev/null 2>&1 || { bad "$db: emit"; continue; }
    loaded=0
    case $db in
    dynamodb)
        "$py/bin/python" "$here/export_load.py" dynamodb "$out" "$url" "$work/emit-$db/dynamodb/create-table.json" && loaded=1 ;;
    mongodb)
        database=$(sed -E 's#^mongodb://[^/]*/?([^?]*).*#\1#' <<<"$url"); database=${database:-$(basename "$(dirname "$model")")}
        "$py/bin/python" "$here/export_load.py" mongodb "$out" "$url" "$database" && loaded=1 ;;
    cassandra)
        host=${url%:*} port=${url##*:}
        keyspace=$(grep -oE "into keyspace [a-z0-9_]+" "$out/load.sh" | awk '{print $3}')
        if "$cq/bin/cqlsh" "$host" "$port" -f "$work/emit-$db/cassandra/schema.cql" >"$work/cqlsh.log" 2>&1 &&
           "$cq/bin/cqlsh" "$host" "$port" -e "CREATE TABLE IF NOT EXISTS $keyspace.keyplan_marker (model text PRIMARY KEY, marker text)" >>"$work/cqlsh.log" 2>&1; then
            loaded=1
            for csv in "$out"/*.csv; do
                table=$(basename "$csv" .csv)
                if [[ $table == *.statics ]]; then
                    "$py/bin/python" "$here/export_load.py" cassandra-statics "$csv" "$host" "$port" "$keyspace" "${table%.statics}" ||
                        loaded=0
                    continue
                fi
                columns=$(head -1 "$csv")
                # cqlsh COPY leaves its import_*.err files in the working directory
                (cd "$work" && "$cq/bin/cqlsh" "$host" "$port" -e "COPY $keyspace.$table ($columns) FROM '$csv' WITH HEADER = TRUE") \
                    >>"$work/cqlsh.log" 2>&1 || { loaded=0; echo "cqlsh COPY $table failed:"; tail -5 "$work/cqlsh.log"; }
                grep -q "Failed to import\|ParseError\|missing or skipped" "$work/cqlsh.log" && { loaded=0; echo "cqlsh COPY $table:"; tail -5 "$work/cqlsh.log"; }
            done
        else
            cat "$work/cqlsh.log"
        fi ;;
    esac
    if ((loaded)); then ok "$db: the $format files loaded with another client"; else bad "$db: loading the $format files"; continue; fi
    if "$keyplan" verify "$model" --db "$db" "${common[@]}" --target "$db=$url" "${check[@]}" >"$work/$db.verify.log" 2>&1; then
        ok "$db: keyplan verify passes on what the exported files loaded (patterns and every container read back)"
    else
        bad "$db: keyplan verify on the loaded export"; grep -iE "mismatch|differ|expected|got|container" "$work/$db.verify.log" | head -20
    fi
    [[ ${KP_EXPORT_KEEP:-} ]] || "$keyplan" teardown "$model" --db "$db" --prefix "$prefix" --target "$db=$url" >/dev/null 2>&1 || true
done

echo "$passed passed, $failed failed"
[[ $failed == 0 ]]
