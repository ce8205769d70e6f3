#!/usr/bin/env bash
#
# run.sh BUILD_DIR — the live integration tests: every example against the real local
# servers that scripts/ installs and starts (never a mock). scripts/test.sh calls it.
#
# Each database has its own script here (dynamodb.sh, ...); this one runs them all
# and fails when any fails. A server that cannot be installed or started is a
# failure, never a skip.
set -euo pipefail
here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
build=${1:-${KP_BUILD_DIR:-$here/../../build}}
status=0
summary=()
# The kill -9 fault loop runs 3 times per database here (a fixed subset that fits CI's
# budget); its full loop is `KP_FAULT_RUNS=10 bash tests/integration/faults_kill.sh BUILD`.
export KP_FAULT_RUNS=${KP_FAULT_RUNS:-3}
# The kill -9 loop of `keyplan migrate` likewise: 2 runs per database with a fixed seed here; the
# full loop (10 per database) is `bash tests/integration/migrate_kill.sh BUILD`.
export KP_MIGRATE_KILL_RUNS=${KP_MIGRATE_KILL_RUNS:-2}
budget=${KP_IT_BUDGET_S:-2400}   # what the integration suites may take of CI's 40 minutes
all_started=$SECONDS
logs=$(mktemp -d "${TMPDIR:-/tmp}/kp-it-logs.XXXXXX")
trap 'rm -rf "$logs"' EXIT
failures=()
for suite in "$here"/dynamodb.sh "$here"/mongodb.sh "$here"/cassandra.sh "$here"/emit_tools.sh "$here"/mongosh.sh \
             "$here"/report_browser.sh "$here"/gate.sh "$here"/readme.sh "$here"/secrets.sh "$here"/force.sh "$here"/tls.sh \
             "$here"/mutations.sh "$here"/oracle.sh "$here"/export.sh "$here"/seed_shards.sh "$here"/migrate.sh "$here"/migrate_kill.sh "$here"/faults_kill.sh "$here"/faults_restart.sh "$here"/faults_proxy.sh; do
    echo "== integration: $(basename "$suite")"
    started=$SECONDS suite_status=0
    bash "$suite" "$build" 2>&1 | tee "$logs/$(basename "$suite").log" || suite_status=1
    [[ $suite_status -eq 0 ]] || { status=1; failures+=("$(basename "$suite")"); }
    summary+=("$(printf '%-20s %-6s %5ds' "$(basename "$suite")" "$([[ $suite_status -eq 0 ]] && echo ok || echo FAILED)" $((SECONDS - started)))")
done
echo "== integration summary"
printf '  %s\n' "${summary[@]}"
total=$((SECONDS - all_started))
echo "  total $total s of a $budget s budget$([[ $total -gt $budget ]] && echo ' (OVER BUDGET: make the slowest suite faster)')"
# A CI log is often kept only in part: what each failed suite said of its failure, again at the end
for f in "${failures[@]}"; do
    echo "== $f failed; its FAIL lines and what follows each (the whole output is above):"
    if grep -q '^FAIL' "$logs/$f.log"; then grep -A6 '^FAIL' "$logs/$f.log" | head -60 | sed 's/^/  /'
    else tail -n 25 "$logs/$f.log" | sed 's/^/  /'; fi
done
exit $status
