#!/usr/bin/env bash
#
# report_browser.sh [BUILD_DIR] — checks `keyplan compare --format html` in a real
# headless browser: Debian's chromium, driven by playwright-core from npm (pinned in
# tests/integration/browser/package-lock.json; no browser download). For every example
# the rendered page must hold one SVG per diagram (the model first, then one per database
# compared), one table row per access pattern opening to its response and requests, a
# load chart per mix, risks once by severity, a recommendation that does not repeat
# them, a print stylesheet, and no console error (browser/check_report.mjs);
# a screenshot of each is kept in BUILD_DIR/report-browser/ (NAME.png the whole page,
# NAME-top.png its top with the first pattern open: docs/report-*.png are these).
#
# Installs what is missing: chromium with apt-get (as root or through sudo), the npm
# package with `npm ci`. A missing browser or package is a failure, never a skip.
set -euo pipefail
here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
root=$(cd -- "$here/../.." && pwd)
build=${1:-${KP_BUILD_DIR:-$root/build}}
build=$(cd -- "$build" && pwd)
keyplan=$build/keyplan
[[ -x $keyplan ]] || { echo "report_browser.sh: no keyplan in $build; build first" >&2; exit 1; }

chromium=${KP_CHROMIUM:-/usr/bin/chromium}
if [[ ! -x $chromium ]]; then
    echo "report_browser.sh: installing Debian's chromium"
    sudo=""
    [[ $(id -u) == 0 ]] || sudo=sudo
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends chromium >/dev/null
fi
[[ -x $chromium ]] || { echo "report_browser.sh: chromium is not at $chromium after installing it" >&2; exit 1; }
command -v node >/dev/null || { echo "report_browser.sh: needs Node.js (scripts/deps.sh installs it)" >&2; exit 1; }
if [[ ! -d $here/browser/node_modules/playwright-core ]]; then
    (cd "$here/browser" && npm ci --no-audit --no-fund --silent)
fi

out=$build/report-browser
mkdir -p "$out"
status=0
databases=$("$keyplan" compare "$root/examples/saas-control-plane/model.json" --format json |
    node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).designs.length))')
for model in "$root"/examples/*/model.json; do
    name=$(basename "$(dirname "$model")")
    "$keyplan" compare "$model" --format html --out "$out/$name.html"
    patterns=$("$keyplan" check "$model" --format json |
        node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).access_patterns.length))')
    echo "-- $name: $patterns access patterns, $((databases + 1)) diagrams"
    KP_CHROMIUM=$chromium node "$here/browser/check_report.mjs" "$out/$name.html" "$out/$name.png" "$patterns" \
        "$((databases + 1))" "$out/$name-top.png" || status=1
done
[[ $status == 0 ]] && echo "report_browser.sh: every report renders (screenshots in $out)"
exit $status
