#!/usr/bin/env bash
#
# deps.sh — installs the Debian packages keyplan's build and tests need.
#
# Fast when everything is present: it asks dpkg first and touches apt only for
# what is missing (apt-get update, then apt-get install -y). Uses sudo only when
# not root. Set KP_SKIP_DEPS=1 to skip it (another distribution, or packages
# installed by hand).
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname -- "${BASH_SOURCE[0]}")/lib.sh"

packages=(
    libbson-dev libmongoc-dev     # MongoDB client (libmongoc, libbson)
    libcjson-dev                  # JSON
    zlib1g-dev                    # gzip (seed --export dynamodb-import)
    libcurl4-openssl-dev libssl-dev  # DynamoDB client (HTTP, SigV4, TLS)
    libcmocka-dev                 # unit tests
    pkg-config cmake ninja-build  # build
    clang libclang-rt-14-dev      # fuzz targets (libFuzzer runtime)
    python3 python3-venv          # test helpers; venvs for cqlsh / cassandra-driver (tests/integration/cassandra.sh)
)

if [[ ${KP_SKIP_DEPS:-0} == 1 ]]; then
    kp_log "KP_SKIP_DEPS=1: not checking packages"
    exit 0
fi

if ! kp_have dpkg-query || ! kp_have apt-get; then
    kp_die "this is not a Debian-like system (no dpkg-query/apt-get); install the equivalents of: ${packages[*]} — then rerun with KP_SKIP_DEPS=1"
fi

missing=()
for package in "${packages[@]}"; do
    status=$(dpkg-query -W -f='${Status}' "$package" 2>/dev/null || true)
    [[ $status == "install ok installed" ]] || missing+=("$package")
done

if [[ ${#missing[@]} -eq 0 ]]; then
    kp_log "all ${#packages[@]} build packages already installed; nothing to do"
    exit 0
fi

kp_log "installing ${#missing[@]} missing package(s): ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
kp_as_root apt-get update -qq ||
    kp_die "apt-get update failed (network or apt sources?)"
kp_as_root apt-get install -y -qq --no-install-recommends "${missing[@]}" </dev/null ||
    kp_die "apt-get install failed for: ${missing[*]}"

for package in "${missing[@]}"; do
    status=$(dpkg-query -W -f='${Status}' "$package" 2>/dev/null || true)
    [[ $status == "install ok installed" ]] || kp_die "package $package is still not installed after apt-get install"
done
kp_log "installed ${#missing[@]} package(s): ${missing[*]}"
