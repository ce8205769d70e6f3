#!/usr/bin/env bash
#
# mutations.sh BUILD_DIR — CI's fixed-seed subset of scripts/verify-mutations.sh: per
# database, 5 runs (one of each kind of change: a value, a child deleted, an extra item in
# a listing's partition, an index key, one of two copies), each changed with an
# independent client and caught by `keyplan verify` in its default mode. On the examples
# that verify fastest: FerretDB's SQLite handler answers 40-60 finds a second here
# (bench/README.md), so MongoDB takes the two smallest. The full loop (10 random runs per
# database over every example) is `scripts/verify-mutations.sh`.
set -uo pipefail
here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
root=$(cd -- "$here/../.." && pwd)
build=$(cd -- "${1:-$root/build}" && pwd)
status=0 passed=0 failed=0
for entry in dynamodb:saas-control-plane,ecommerce-single-table,order-response \
             cassandra:saas-control-plane,ecommerce-single-table,order-response \
             mongodb:saas-control-plane,ecommerce-single-table; do
    db=${entry%%:*} examples=${entry#*:}
    out=$("$root/scripts/verify-mutations.sh" --build "$build" --db "$db" --runs 5 --seed 20261204 --examples "$examples" 2>&1)
    rc=$?
    echo "$out"
    ok=$(grep -c '^ok: ' <<<"$out")
    bad=$(grep -c '^FAIL' <<<"$out")
    passed=$((passed + ok)) failed=$((failed + bad))
    ((rc == 0 && bad == 0 && ok == 5)) || status=1
done
echo "$passed passed, $failed failed"
exit $status
