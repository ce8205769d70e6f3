#!/usr/bin/env bash
#
# target-ferretdb.sh — a local MongoDB-compatible server (FerretDB v1.24.2, SQLite
# handler) on loopback (mongodb://127.0.0.1:28017/) for keyplan's integration tests,
# CI and a first try by hand.
#
#   scripts/target-ferretdb.sh install   build scripts/ferretdb-wrapper/ with go build into
#                                        .deps/ferretdb/ferretdb-wrapper (skipped when the
#                                        binary is newer than the wrapper's sources; the
#                                        first build compiles for 5-10 minutes; a second
#                                        install waits for one already running)
#   scripts/target-ferretdb.sh start [--port N] [--dir DIR]
#                                        start it in the background; returns once it
#                                        answers a MongoDB hello command
#       --port N     listen on 127.0.0.1:N instead of 28017
#       --dir DIR    keep the databases in DIR (created when missing, kept by stop), so
#                    that they survive a restart; by default a fresh directory under
#                    .deps/run/ that stop deletes
#   scripts/target-ferretdb.sh stop      TERM, up to 10 s, then KILL
#   scripts/target-ferretdb.sh status    "running ..." (exit 0) or "stopped" (exit 3)
#   scripts/target-ferretdb.sh url       the connection string (of the running server,
#                                        else the default one): mongodb://127.0.0.1:28017/
#
# Needs Go ≥ 1.24 (FerretDB's go.mod asks for it; an older go ≥ 1.21 downloads that
# toolchain by itself) and the Go module proxy for the first build. Why a wrapper and
# not 'go install .../cmd/ferretdb': see scripts/ferretdb-wrapper/main.go. No
# authentication, no telemetry. Output of the server: .deps/run/ferretdb.log; pid:
# .deps/run/ferretdb.pid; build output: .deps/ferretdb/build.log.
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname -- "${BASH_SOURCE[0]}")/lib.sh"
cd "$KP_ROOT"

HOST=127.0.0.1
DEFAULT_PORT=28017
GO_MIN=24            # Go 1.24, from FerretDB v1.24.2's go.mod
BUILD_TAGS=ferretdb_no_postgresql   # only the SQLite handler is used
START_TIMEOUT=30
STOP_TIMEOUT=10

SRC_DIR=$KP_ROOT/scripts/ferretdb-wrapper    # main.go, go.mod, go.sum
DEPS_DIR=$KP_ROOT/.deps/ferretdb
BIN=$DEPS_DIR/ferretdb-wrapper
BUILD_LOG=$DEPS_DIR/build.log
RUN_ROOT=$KP_ROOT/.deps/run
PID_FILE=$RUN_ROOT/ferretdb.pid
LOG_FILE=$RUN_ROOT/ferretdb.log
MODE_FILE=$RUN_ROOT/ferretdb.mode   # lines port=N, dir=DIR, temporary=0|1 of the running server

# ---- Go ----------------------------------------------------------------------------------

go_help() {
    printf '%s' "building FerretDB needs Go 1.$GO_MIN or newer (Debian 12's golang package is 1.19, too old): " \
        "install it from https://go.dev/dl/ (for example into /usr/local/go) and put its bin/ on PATH."
}

ensure_go() {
    kp_have go || kp_die "go is not installed. $(go_help)"
    local version minor
    version=$(go env GOVERSION 2>/dev/null || true)        # go1.24.3
    minor=${version#go1.}
    minor=${minor%%[!0-9]*}
    [[ $version == go1.* && $minor =~ ^[0-9]+$ ]] ||
        kp_die "could not read the version of go ('go env GOVERSION' said '$version'). $(go_help)"
    if ((minor < 21)); then
        kp_die "go is $version. $(go_help)"
    elif ((minor < GO_MIN)); then
        kp_log "go is $version; it will fetch the Go 1.$GO_MIN toolchain that FerretDB asks for (GOTOOLCHAIN=$(go env GOTOOLCHAIN))"
    fi
}

# ---- install -----------------------------------------------------------------------------

installed() {
    local source
    [[ -x $BIN ]] || return 1
    for source in "$SRC_DIR/main.go" "$SRC_DIR/go.mod" "$SRC_DIR/go.sum"; do
        [[ $BIN -nt $source ]] || return 1
    done
}

# One install at a time (scripts/test.sh may have started one in the background): a
# second waits for the first, then finds it done.
cmd_install() {
    [[ $# -eq 0 ]] || kp_die "install takes no options, not '$*'" 2
    kp_locked ferretdb-install install_now
}

install_now() {
    if installed; then
        kp_log "FerretDB wrapper already built: ${BIN#"$KP_ROOT"/} ($(du -h "$BIN" | cut -f1)); nothing to do"
        return 0
    fi
    ensure_go

    local started=$SECONDS
    mkdir -p "$DEPS_DIR"
    kp_log "building FerretDB v1.24.2 (SQLite handler) with $(go env GOVERSION) into ${BIN#"$KP_ROOT"/}"
    kp_log "step 1/2: downloading modules listed in scripts/ferretdb-wrapper/go.sum from $(go env GOPROXY | cut -d, -f1)"
    if ! (cd "$SRC_DIR" && go mod download) </dev/null >"$BUILD_LOG" 2>&1; then
        tail -n 30 "$BUILD_LOG" >&2
        kp_die "go mod download failed (network, or GOPROXY=$(go env GOPROXY)? output above, all of it in ${BUILD_LOG#"$KP_ROOT"/})"
    fi
    kp_log "modules ready after $((SECONDS - started))s"

    local total
    total=$(cd "$SRC_DIR" && go list -mod=readonly -tags "$BUILD_TAGS" -deps . 2>/dev/null | wc -l) || total='?'
    kp_log "step 2/2: compiling up to $total packages (5-10 minutes on a fresh 2-core machine; seconds once Go's build cache has them)"
    local tmp=$BIN.partial status=0 pid next_note=$((SECONDS + 15))
    rm -f "$tmp"
    # -mod=readonly: the committed go.sum is the authority; the build never edits it.
    (cd "$SRC_DIR" && exec go build -mod=readonly -trimpath -tags "$BUILD_TAGS" -v -o "$tmp" .) \
        </dev/null >>"$BUILD_LOG" 2>&1 &
    pid=$!
    while kill -0 "$pid" 2>/dev/null; do
        if ((SECONDS >= next_note)); then
            kp_log "still compiling ($((SECONDS - started))s, $(grep -cv '^go: ' "$BUILD_LOG" || true) packages so far)"
            next_note=$((SECONDS + 15))
        fi
        sleep 1
    done
    wait "$pid" || status=$?
    if [[ $status -ne 0 || ! -x $tmp ]]; then
        tail -n 30 "$BUILD_LOG" >&2
        rm -f "$tmp"
        kp_die "go build failed (exit status $status; output above, all of it in ${BUILD_LOG#"$KP_ROOT"/})"
    fi
    mv -f "$tmp" "$BIN"
    kp_log "built ${BIN#"$KP_ROOT"/} ($(du -h "$BIN" | cut -f1)) in $((SECONDS - started))s"
}

# ---- process and port helpers ------------------------------------------------------------

# server_pid — the pid of our running FerretDB, or fail (a stale pid file is removed;
# a data directory this script made for it goes with it).
server_pid() {
    local pid args
    [[ -f $PID_FILE ]] || return 1
    pid=$(<"$PID_FILE")
    if [[ $pid =~ ^[0-9]+$ ]] && args=$(ps -ww -p "$pid" -o args= 2>/dev/null) &&
        [[ $args == *"$BIN"* ]]; then
        printf '%s\n' "$pid"
        return 0
    fi
    remove_temporary_dir
    rm -f "$PID_FILE" "$MODE_FILE"
    return 1
}

# port_user PORT — describe what listens on 127.0.0.1:PORT, or fail when nothing does.
port_user() {
    local port=$1 line
    if kp_have ss; then
        line=$(ss -ltnpH "sport = :$port" 2>/dev/null | head -n 1)
        [[ -n $line ]] || return 1
        printf '%s\n' "$(awk '{print $4, $6}' <<<"$line")"
        return 0
    fi
    (exec 3<>"/dev/tcp/$HOST/$port") 2>/dev/null || return 1
    printf 'a process (install ss to see which)\n'
}

# mode_get KEY — a value from the running server's mode file.
mode_get() {
    local line
    [[ -f $MODE_FILE ]] || return 1
    while IFS= read -r line; do
        if [[ $line == "$1="* ]]; then
            printf '%s\n' "${line#*=}"
            return 0
        fi
    done <"$MODE_FILE"
    return 1
}

running_port() {
    mode_get port 2>/dev/null || printf '%s\n' "$DEFAULT_PORT"
}

# remove_temporary_dir — delete the data directory start made (never one from --dir).
remove_temporary_dir() {
    local dir
    [[ $(mode_get temporary 2>/dev/null) == 1 ]] || return 0
    dir=$(mode_get dir) || return 0
    [[ $dir == "$RUN_ROOT"/ferretdb-data.* ]] && rm -rf -- "$dir"
}

# The readiness probe: an OP_MSG {hello: 1, $db: "admin"} must get an OP_MSG reply
# with ok: 1. It prints the reply's maxWireVersion.
# shellcheck disable=SC2016  # Python source; "$db" is a BSON field name
PROBE_PY='
import socket, struct, sys
def cstring(b, i):
    j = b.index(b"\0", i)
    return b[i:j], j + 1
def fields(doc):
    """Top-level fields of a BSON document: {name: (type, raw value)}."""
    out, i = {}, 4
    sizes = {1: 8, 7: 12, 8: 1, 9: 8, 10: 0, 0x10: 4, 0x11: 8, 0x12: 8, 0x13: 16}
    while doc[i] != 0:
        kind = doc[i]
        name, i = cstring(doc, i + 1)
        if kind in sizes:
            n = sizes[kind]
        elif kind in (2, 0x0D):
            n = 4 + struct.unpack_from("<i", doc, i)[0]
        elif kind in (3, 4):
            n = struct.unpack_from("<i", doc, i)[0]
        elif kind == 5:
            n = 5 + struct.unpack_from("<i", doc, i)[0]
        else:
            break
        out[name.decode()] = (kind, doc[i:i + n])
        i += n
    return out
def recv(s, n):
    data = b""
    while len(data) < n:
        chunk = s.recv(n - len(data))
        if not chunk:
            raise EOFError
        data += chunk
    return data
def bson(*items):
    body = b""
    for name, value in items:
        if isinstance(value, int):
            body += b"\x10" + name + b"\0" + struct.pack("<i", value)
        else:
            body += b"\x02" + name + b"\0" + struct.pack("<i", len(value) + 1) + value + b"\0"
    return struct.pack("<i", len(body) + 5) + body + b"\0"
try:
    s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=3)
    doc = bson((b"hello", 1), (b"$db", b"admin"))
    msg = struct.pack("<I", 0) + b"\0" + doc
    s.sendall(struct.pack("<iiii", 16 + len(msg), 1, 0, 2013) + msg)
    length, _, to, opcode = struct.unpack("<iiii", recv(s, 16))
    body = recv(s, length - 16)
    if opcode != 2013 or to != 1 or body[4] != 0:
        sys.exit(1)
    reply = fields(body[5:])
    ok = reply.get("ok")
    if not ok or ok[0] != 1 or struct.unpack("<d", ok[1])[0] != 1.0:
        sys.exit(1)
    wire = reply.get("maxWireVersion")
    print(struct.unpack("<i", wire[1])[0] if wire and wire[0] == 0x10 else "?")
except (OSError, EOFError, ValueError, IndexError, struct.error):
    sys.exit(1)
'

# ready PORT — true when FerretDB on PORT answers hello (with python3), else when it
# accepts a TCP connection and its log says that it listens. Prints how it checked.
ready() {
    local port=$1 wire
    if kp_have python3; then
        wire=$(python3 -c "$PROBE_PY" "$HOST" "$port" 2>/dev/null) || return 1
        printf 'answers hello, maxWireVersion %s\n' "$wire"
        return 0
    fi
    grep -q "Listening on TCP $HOST:$port" "$LOG_FILE" 2>/dev/null || return 1
    (exec 3<>"/dev/tcp/$HOST/$port") 2>/dev/null || return 1
    printf 'accepts connections; no python3 here for a real hello\n'
}

log_tail() {
    [[ -s $LOG_FILE ]] || return 0
    printf -- '--- last lines of %s ---\n' "${LOG_FILE#"$KP_ROOT"/}" >&2
    tail -n 30 "$LOG_FILE" >&2
}

rss() {
    awk '/^VmRSS:/ { printf "%d MB", $2 / 1024 }' "/proc/$1/status" 2>/dev/null || true
}

# ---- start / stop / status -------------------------------------------------------------

cmd_start() {
    local port=$DEFAULT_PORT dir='' temporary=0
    while [[ $# -gt 0 ]]; do
        case $1 in
            --port)
                [[ $# -ge 2 ]] || kp_die "--port needs a port number" 2
                port=$2; shift ;;
            --port=*) port=${1#--port=} ;;
            --dir)
                [[ $# -ge 2 ]] || kp_die "--dir needs a directory" 2
                dir=$2; shift ;;
            --dir=*) dir=${1#--dir=} ;;
            *) kp_die "unknown start option '$1' (try --help)" 2 ;;
        esac
        shift
    done
    if ! [[ $port =~ ^[1-9][0-9]{0,4}$ ]] || ((port > 65535)); then
        kp_die "--port takes a port number (1-65535), not '$port'" 2
    fi
    if [[ -n $dir ]]; then
        mkdir -p -- "$dir" || kp_die "cannot create --dir directory '$dir'"
        dir=$(cd -- "$dir" && pwd)
    fi
    local pid how

    if pid=$(server_pid); then
        local running_port running_dir
        running_port=$(running_port)
        running_dir=$(mode_get dir 2>/dev/null || echo '?')
        if [[ $running_port != "$port" || (-n $dir && $running_dir != "$dir") ]]; then
            kp_die "FerretDB is already running (pid $pid) on port $running_port with data in $running_dir, not port $port${dir:+ with data in $dir}; run '$0 stop' first"
        fi
        if how=$(ready "$port"); then
            kp_log "FerretDB is already running (pid $pid) at mongodb://$HOST:$port/ ($how); nothing to do"
            return 0
        fi
        kp_log "FerretDB is already running (pid $pid) but does not answer yet; waiting"
    else
        local user
        if user=$(port_user "$port"); then
            kp_die "port $port on $HOST is already taken by $user — not starting FerretDB there (stop that process, or pass --port N)"
        fi

        installed || { kp_log "the FerretDB wrapper is not built yet; building it first"; cmd_install; }
        kp_have setsid || kp_die "setsid (util-linux) is needed to run FerretDB in the background"

        mkdir -p "$RUN_ROOT"
        if [[ -z $dir ]]; then
            dir=$(mktemp -d "$RUN_ROOT/ferretdb-data.XXXXXX")
            temporary=1
        fi
        rm -f "$PID_FILE"
        printf 'port=%s\ndir=%s\ntemporary=%s\n' "$port" "$dir" "$temporary" >"$MODE_FILE"
        kp_log "starting FerretDB at mongodb://$HOST:$port/ (SQLite databases in ${dir#"$KP_ROOT"/}$([[ $temporary == 1 ]] && echo ', deleted by stop')); log ${LOG_FILE#"$KP_ROOT"/}"
        # The child writes its own pid and then becomes the server, in its own session so
        # that it outlives this script and a terminal's hangup.
        (
            # shellcheck disable=SC2016  # expanded by the inner sh
            exec setsid sh -c 'echo $$ >"$0"; exec "$@"' "$PID_FILE" \
                "$BIN" -listen "$HOST:$port" -dir "$dir"
        ) </dev/null >"$LOG_FILE" 2>&1 &
    fi

    local started=$SECONDS deadline=$((SECONDS + START_TIMEOUT))
    until [[ -s $PID_FILE ]] && how=$(ready "$port"); do
        if [[ -s $PID_FILE ]] && ! server_pid >/dev/null; then
            log_tail
            kp_die "FerretDB exited during start-up (after $((SECONDS - started))s); see above"
        fi
        if ((SECONDS >= deadline)); then
            log_tail
            cmd_stop >/dev/null 2>&1 || true
            kp_die "FerretDB did not answer at mongodb://$HOST:$port/ within ${START_TIMEOUT}s; stopped it (log tail above)"
        fi
        sleep 0.2
    done
    kp_log "FerretDB is ready at mongodb://$HOST:$port/ (pid $(<"$PID_FILE"); $how)"
}

cmd_stop() {
    [[ $# -eq 0 ]] || kp_die "stop takes no options, not '$*'" 2
    local pid waited=0
    if ! pid=$(server_pid); then
        kp_log "FerretDB is not running"
        return 0
    fi
    kp_log "stopping FerretDB (pid $pid)"
    kill -TERM "$pid" 2>/dev/null || true
    while kill -0 "$pid" 2>/dev/null && ((waited < STOP_TIMEOUT * 5)); do
        sleep 0.2
        waited=$((waited + 1))
    done
    if kill -0 "$pid" 2>/dev/null; then
        kp_warn "FerretDB (pid $pid) still running after ${STOP_TIMEOUT}s; sending KILL"
        kill -KILL "$pid" 2>/dev/null || true
        while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
    fi
    remove_temporary_dir
    rm -f "$PID_FILE" "$MODE_FILE"
    kp_log "FerretDB stopped"
}

cmd_status() {
    [[ $# -eq 0 ]] || kp_die "status takes no options, not '$*'" 2
    local pid port dir how
    if pid=$(server_pid); then
        port=$(running_port)
        dir=$(mode_get dir 2>/dev/null || echo '?')
        if how=$(ready "$port"); then
            printf 'running (pid %s) at mongodb://%s:%s/, data in %s, RSS %s; %s\n' \
                "$pid" "$HOST" "$port" "${dir#"$KP_ROOT"/}" "$(rss "$pid")" "$how"
        else
            printf 'running (pid %s), not answering at mongodb://%s:%s/ yet\n' "$pid" "$HOST" "$port"
        fi
        return 0
    fi
    printf 'stopped\n'
    return 3
}

cmd_url() {
    [[ $# -eq 0 ]] || kp_die "url takes no options, not '$*'" 2
    local port=$DEFAULT_PORT
    server_pid >/dev/null && port=$(running_port)
    printf 'mongodb://%s:%s/\n' "$HOST" "$port"
}

# ---- main ------------------------------------------------------------------------------

[[ $# -ge 1 ]] || { kp_usage "${BASH_SOURCE[0]}" >&2; exit 2; }
action=$1
shift
case $action in
    install) cmd_install "$@" ;;
    start)   cmd_start "$@" ;;
    stop)    cmd_stop "$@" ;;
    status)  cmd_status "$@" ;;
    url)     cmd_url "$@" ;;
    -h|--help|help) kp_usage "${BASH_SOURCE[0]}" ;;
    *) kp_die "unknown command '$action' (install, start, stop, status, url; try --help)" 2 ;;
esac
