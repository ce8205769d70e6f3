#!/usr/bin/env bash
#
# mutations.sh BUILD_DIR — CI's fixed-seed subset of scripts/verify-mutations.sh: per
# database, 5 runs (one of each kind of change: a value, a child deleted, an extra item in
# a listing's partition, an index key, one of two copies) on the examples that verify
# fastest, each changed with an independent client and caught by `keyplan verify` in its
# default mode. The full loop (10 random runs per database, every example) is
# `scripts/verify-mutations.sh`; its figures are in bench/README.md.
set -uo pipefail
here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
root=$(cd -- "$here/../.." && pwd)
build=$(cd -- "${1:-$root/build}" && pwd)
out=$("$root/scripts/verify-mutations.sh" --build "$build" --runs 5 --seed 20261204 \
    --examples saas-control-plane,ecommerce-single-table,order-response 2>&1)
status=$?
echo "$out"
passed=$(grep -c '^ok: ' <<<"$out")
failed=$(grep -c '^FAIL' <<<"$out")
((status == 0 && failed == 0 && passed == 15)) || status=1
echo "$passed passed, $failed failed"
exit $status
