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
for suite in "$here"/dynamodb.sh "$here"/mongodb.sh "$here"/cassandra.sh "$here"/emit_tools.sh "$here"/report_browser.sh "$here"/gate.sh "$here"/secrets.sh "$here"/force.sh "$here"/tls.sh "$here"/faults_kill.sh "$here"/faults_restart.sh "$here"/faults_proxy.sh; do
    echo "== integration: $(basename "$suite")"
    bash "$suite" "$build" || status=1
done
exit $status
