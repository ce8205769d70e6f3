#!/usr/bin/env bash
#
# build.sh — configures and builds keyplan with CMake.
#
#   scripts/build.sh [BUILD_DIR] [EXTRA CMAKE ARGS...]
#
#   scripts/build.sh                                  # ./build, RelWithDebInfo
#   scripts/build.sh build-asan -DKP_SANITIZE=ON      # ASan + UBSan
#   scripts/build.sh build-fuzz -DKP_FUZZ=ON -DKP_TESTS=OFF -DCMAKE_C_COMPILER=clang
#
# BUILD_DIR defaults to "build"; a relative BUILD_DIR is taken from the repository
# root, whatever the current directory. Ninja is used when installed (an existing
# build directory keeps the generator it was configured with). Extra arguments go to
# the configure step after the defaults, so they override them
# (-DCMAKE_BUILD_TYPE=Debug). KP_JOBS sets the build parallelism (default: nproc).
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname -- "${BASH_SOURCE[0]}")/lib.sh"

if [[ ${1:-} == -h || ${1:-} == --help ]]; then
    kp_usage "${BASH_SOURCE[0]}"
    exit 0
fi

build_dir=build
if [[ $# -gt 0 && $1 != -* ]]; then
    build_dir=${1%/}
    shift
fi
build_path=$(kp_build_path "$build_dir")

kp_have cmake || kp_die "cmake is not installed; run scripts/deps.sh"

# developer and CI builds: warnings are errors (KP_WERROR; a packager's build leaves it off)
configure=(cmake -S "$KP_ROOT" -B "$build_path" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKP_WERROR=ON)
if [[ ! -f $build_path/CMakeCache.txt ]] && kp_have ninja; then
    configure+=(-G Ninja)
fi
configure+=("$@")

kp_log "configuring $build_dir/${*:+ with $*}"
"${configure[@]}" ||
    kp_die "CMake configure failed in $build_dir/ (see the messages above)"

jobs=${KP_JOBS:-$(nproc 2>/dev/null || echo 2)}
kp_log "building in $build_dir/ ($jobs jobs)"
cmake --build "$build_path" --parallel "$jobs" ||
    kp_die "build failed in $build_dir/ (see the compiler messages above)"

generator=$(sed -n 's/^CMAKE_GENERATOR:INTERNAL=//p' "$build_path/CMakeCache.txt")
build_type=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$build_path/CMakeCache.txt")
kp_log "built $build_dir/ ($build_type, $generator)"
