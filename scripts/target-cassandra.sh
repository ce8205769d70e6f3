#!/usr/bin/env bash
#
# target-cassandra.sh — one Apache Cassandra 5.0 node on loopback (127.0.0.1:19042) for
# keyplan's integration tests, CI and a first try by hand.
#
#   scripts/target-cassandra.sh install   Java 17 (apt-get when root in CI) and the
#                                         Cassandra jars from Maven Central into
#                                         .deps/cassandra/lib (skipped when complete; a
#                                         second install waits for one already running)
#   scripts/target-cassandra.sh start [--auth] [--durable] [--keep-data] [--full-jit]
#                                         start the node in the background; returns
#                                         once it answers a CQL v4 handshake
#       --auth       PasswordAuthenticator (superuser cassandra / cassandra)
#       --durable    commitlog_sync: batch (acknowledged writes survive a hard stop)
#       --keep-data  keep .deps/run/cassandra/ from the last run (default: fresh)
#       --full-jit   C2 as well as C1: about twice the start time, faster steady
#                    state (benchmarks); by default the JIT stops at C1
#   scripts/target-cassandra.sh stop      TERM, up to 30 s, then KILL
#   scripts/target-cassandra.sh status    "running" (exit 0) or "stopped" (exit 3)
#   scripts/target-cassandra.sh url       prints 127.0.0.1:19042
#
# Cassandra 5.0 runs here on Java 17 (newer JDKs fail: JDK 24 removed
# System.setSecurityManager, which it calls): the script looks for Java 17 under
# /usr/lib/jvm and sets JAVA_HOME itself, or takes KP_JAVA17_HOME. Configuration: scripts/cassandra/ (pom.xml, cassandra.yaml template,
# jvm17.options, logback.xml). Output of the node: .deps/run/cassandra.log; its warnings:
# .deps/run/cassandra/logs/system.log. Heap: KP_CASSANDRA_XMS / KP_CASSANDRA_XMX
# (768M / 1G); start timeout: KP_CASSANDRA_START_TIMEOUT (120 seconds); more JVM
# options, split on spaces: KP_CASSANDRA_JVM_OPTS.
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname -- "${BASH_SOURCE[0]}")/lib.sh"
cd "$KP_ROOT"

HOST=127.0.0.1
PORT=19042           # native_transport_port in scripts/cassandra/cassandra.yaml
STORAGE_PORT=17000   # storage_port there
MAIN_CLASS=org.apache.cassandra.service.CassandraDaemon

CONF_DIR=$KP_ROOT/scripts/cassandra
POM=$CONF_DIR/pom.xml
DEPS_DIR=$KP_ROOT/.deps/cassandra
LIB_DIR=$DEPS_DIR/lib
STAMP=$DEPS_DIR/installed          # written last by install: what and when
RUN_ROOT=$KP_ROOT/.deps/run
RUN_DIR=$RUN_ROOT/cassandra        # yaml, data, logs of the running node
PID_FILE=$RUN_ROOT/cassandra.pid
LOG_FILE=$RUN_ROOT/cassandra.log
MODE_FILE=$RUN_DIR/mode            # the start options of the running node

XMS=${KP_CASSANDRA_XMS:-768M}
XMX=${KP_CASSANDRA_XMX:-1G}
START_TIMEOUT=${KP_CASSANDRA_START_TIMEOUT:-120}
STOP_TIMEOUT=30

# ---- Java 17 ---------------------------------------------------------------------------

# java_major HOME — the major version of HOME/bin/java, or nothing.
java_major() {
    [[ -x $1/bin/java ]] || return 0
    "$1/bin/java" -version 2>&1 | sed -n '1s/.*version "\([0-9]*\).*/\1/p'
}

# find_java17 — print the home of a Java 17 runtime, or fail.
find_java17() {
    local home
    for home in /usr/lib/jvm/java-17-openjdk-* /usr/lib/jvm/temurin-17* /usr/lib/jvm/*17*; do
        [[ -d $home && ! -L $home ]] || continue
        if [[ $(java_major "$home") == 17 ]]; then
            printf '%s\n' "$home"
            return 0
        fi
    done
    return 1
}

java17_help() {
    printf '%s' "Cassandra 5.0 needs Java 17 (Cassandra 5.0 supports no newer Java, and JDK 24 removed System.setSecurityManager, which it calls). " \
        "None found under /usr/lib/jvm. On Debian or Ubuntu: 'sudo apt-get install openjdk-17-jre-headless'; " \
        "elsewhere install any Java 17 and point KP_JAVA17_HOME at it."
}

# apt_install PACKAGE... — as root in CI only: apt-get install what has a candidate.
apt_install() {
    local package candidate
    export DEBIAN_FRONTEND=noninteractive
    for package in "$@"; do
        candidate=$(apt-cache policy "$package" 2>/dev/null | sed -n 's/^ *Candidate: *//p')
        if [[ -z $candidate || $candidate == "(none)" ]]; then
            kp_log "apt has no candidate for $package yet; running apt-get update"
            apt-get update -qq || kp_die "apt-get update failed (network or apt sources?)"
            candidate=$(apt-cache policy "$package" 2>/dev/null | sed -n 's/^ *Candidate: *//p')
            [[ -n $candidate && $candidate != "(none)" ]] ||
                kp_die "apt knows no package $package on this system (apt-cache policy $package)"
        fi
        kp_log "installing $package $candidate with apt-get"
        apt-get install -y -qq --no-install-recommends "$package" </dev/null ||
            kp_die "apt-get install $package failed"
    done
}

can_apt() {
    [[ $(id -u) -eq 0 && ${CI:-} == true ]] && kp_have apt-get && kp_have apt-cache
}

# ensure_java17 — set JAVA_HOME to a Java 17 runtime, installing it in CI if needed.
ensure_java17() {
    local home
    if [[ -n ${KP_JAVA17_HOME:-} ]]; then
        [[ $(java_major "$KP_JAVA17_HOME") == 17 ]] ||
            kp_die "KP_JAVA17_HOME=$KP_JAVA17_HOME is not a Java 17 runtime (no bin/java reporting version 17)"
        home=$KP_JAVA17_HOME
    elif ! home=$(find_java17); then
        can_apt || kp_die "$(java17_help)"
        apt_install openjdk-17-jre-headless
        home=$(find_java17) || kp_die "openjdk-17-jre-headless is installed but no Java 17 appeared under /usr/lib/jvm"
    fi
    export JAVA_HOME=$home
    JAVA=$home/bin/java
}

# ---- install ---------------------------------------------------------------------------

pom_version() {
    sed -n 's:.*<cassandra.version>\(.*\)</cassandra.version>.*:\1:p' "$POM"
}

# The install stamp names the pom it was made from: changing the pom reinstalls.
pom_digest() {
    sha256sum "$POM" | cut -d' ' -f1
}

installed() {
    [[ -f $STAMP ]] && grep -qx "pom $(pom_digest)" "$STAMP" &&
        compgen -G "$LIB_DIR/cassandra-all-*.jar" >/dev/null
}

# One install at a time (scripts/test.sh may have started one in the background): a
# second waits for the first, then finds it done.
cmd_install() {
    [[ $# -eq 0 ]] || kp_die "install takes no options, not '$*'" 2
    kp_locked cassandra-install install_now
}

install_now() {
    local version started=$SECONDS jars
    version=$(pom_version)
    [[ -n $version ]] || kp_die "no <cassandra.version> in $POM"

    ensure_java17
    kp_log "Java 17: $JAVA_HOME"

    if installed; then
        kp_log "Cassandra $version already installed in ${LIB_DIR#"$KP_ROOT"/} ($(find "$LIB_DIR" -name '*.jar' | wc -l) jars); nothing to do"
        return 0
    fi

    if ! kp_have mvn; then
        can_apt || kp_die "Maven (mvn) is needed to fetch Cassandra from Maven Central; on Debian or Ubuntu: 'sudo apt-get install maven'"
        apt_install maven
    fi

    kp_log "resolving org.apache.cassandra:cassandra-all:$version and its dependencies from Maven Central (about 100 jars, 70 MB; a minute on a fresh machine)"
    local tmp=$DEPS_DIR/lib.partial
    rm -rf "$tmp"
    mkdir -p "$DEPS_DIR"
    # Maven's own output (quiet: errors only, but with stray colour codes) goes to a
    # file, shown when it fails.
    local mvn_log=$DEPS_DIR/mvn.log
    if ! mvn -B -q -f "$POM" dependency:copy-dependencies -DoutputDirectory="$tmp" </dev/null >"$mvn_log" 2>&1; then
        tail -n 40 "$mvn_log" >&2
        kp_die "mvn dependency:copy-dependencies failed for cassandra-all $version (network? Maven's output above, all of it in ${mvn_log#"$KP_ROOT"/})"
    fi
    [[ -f $tmp/cassandra-all-$version.jar ]] ||
        kp_die "Maven finished but $tmp has no cassandra-all-$version.jar"
    jars=$(find "$tmp" -name '*.jar' | wc -l)

    rm -rf "$LIB_DIR"
    mv "$tmp" "$LIB_DIR"
    {
        printf 'cassandra-all %s\n' "$version"
        printf 'pom %s\n' "$(pom_digest)"
        printf 'jars %s\n' "$jars"
        printf 'installed %s in %ss\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$((SECONDS - started))"
    } >"$STAMP"
    kp_log "installed Cassandra $version ($jars jars, $(du -sh "$LIB_DIR" | cut -f1)) in ${LIB_DIR#"$KP_ROOT"/} in $((SECONDS - started))s"
}

# ---- process and port helpers ------------------------------------------------------------

# node_pid — the pid of our running node, or fail (a stale pid file is removed).
node_pid() {
    local pid args
    [[ -f $PID_FILE ]] || return 1
    pid=$(<"$PID_FILE")
    if [[ $pid =~ ^[0-9]+$ ]] && args=$(ps -ww -p "$pid" -o args= 2>/dev/null) &&
        [[ $args == *"$MAIN_CLASS"* && $args == *"$RUN_DIR"* ]]; then
        printf '%s\n' "$pid"
        return 0
    fi
    rm -f "$PID_FILE"
    return 1
}

# port_user PORT — describe what listens on 127.0.0.1:PORT, or fail when nothing does.
port_user() {
    local port=$1 line
    if kp_have ss; then
        line=$(ss -ltnpH "sport = :$port" 2>/dev/null | head -n 1)
        [[ -n $line ]] || return 1
        # users:(("python3",pid=27698,fd=3)) → python3 (pid 27698); empty without root
        if [[ $line =~ \(\(\"([^\"]*)\",pid=([0-9]+) ]]; then
            printf '%s (pid %s)\n' "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}"
        else
            printf 'another process\n'
        fi
        return 0
    fi
    (exec 3<>"/dev/tcp/$HOST/$port") 2>/dev/null || return 1
    printf 'a process (install ss to see which)\n'
}

# The readiness probe: a CQL v4 OPTIONS frame must get SUPPORTED (0x84, opcode 0x06);
# with a user, also STARTUP → AUTHENTICATE and a PLAIN AUTH_RESPONSE → AUTH_SUCCESS,
# so that `start --auth` returns only once the default superuser exists.
PROBE_PY='
import socket, struct, sys
host, port = sys.argv[1], int(sys.argv[2])
user = sys.argv[3].encode() if len(sys.argv) > 3 else b""
password = sys.argv[4].encode() if len(sys.argv) > 4 else b""
def frame(opcode, body=b""):
    return struct.pack(">BBhBi", 0x04, 0, 0, opcode, len(body)) + body
def recv(s, n):
    data = b""
    while len(data) < n:
        chunk = s.recv(n - len(data))
        if not chunk:
            raise EOFError
        data += chunk
    return data
def reply(s):
    version, _, _, opcode, length = struct.unpack(">BBhBi", recv(s, 9))
    return version, opcode, recv(s, length)
def string(text):
    return struct.pack(">H", len(text)) + text
try:
    s = socket.create_connection((host, port), timeout=3)
    s.sendall(frame(0x05))
    version, opcode, _ = reply(s)
    if (version, opcode) != (0x84, 0x06):
        sys.exit(1)
    if user:
        s.sendall(frame(0x01, struct.pack(">H", 1) + string(b"CQL_VERSION") + string(b"3.0.0")))
        if reply(s)[1] != 0x03:
            sys.exit(1)
        token = b"\0" + user + b"\0" + password
        s.sendall(frame(0x0F, struct.pack(">i", len(token)) + token))
        if reply(s)[1] != 0x10:
            sys.exit(1)
except (OSError, EOFError, struct.error):
    sys.exit(1)
'

# cql_ready [USER PASSWORD] — true when the node answers the handshake.
cql_ready() {
    if kp_have python3; then
        python3 -c "$PROBE_PY" "$HOST" "$PORT" "$@" 2>/dev/null
        return
    fi
    # Without python3: the OPTIONS exchange through bash's /dev/tcp.
    local head
    # shellcheck disable=SC2016  # expanded by the inner bash
    head=$(timeout 3 bash -c '
        exec 3<>"/dev/tcp/$1/$2" || exit 1
        printf "\x04\x00\x00\x00\x05\x00\x00\x00\x00" >&3
        head -c 5 <&3 | od -An -tx1' _ "$HOST" "$PORT" 2>/dev/null) || return 1
    read -r -a head <<<"$head"
    [[ ${head[0]:-} == 84 && ${head[4]:-} == 06 ]]
}

# log_tail — the end of the node's output (errors reach it too), for a failed start.
log_tail() {
    local log=${LOG_FILE#"$KP_ROOT"/} system_log=${RUN_DIR#"$KP_ROOT"/}/logs/system.log
    if [[ -s $LOG_FILE ]]; then
        printf -- '--- last lines of %s ---\n' "$log" >&2
        tail -n 25 "$LOG_FILE" >&2
        printf -- '---\n' >&2
    else
        printf '(%s is empty)\n' "$log" >&2
    fi
    [[ -s $RUN_DIR/logs/system.log ]] && printf 'warnings and errors of the node: %s\n' "$system_log" >&2
    return 0
}

# start_error — Cassandra's one-line reason for a failed start, if it printed one.
start_error() {
    local reason
    reason=$(grep -m 1 -o 'encountered during startup: .*' "$LOG_FILE" 2>/dev/null || true)
    [[ -n $reason ]] && printf ': %s' "${reason#encountered during startup: }"
    return 0
}

# ---- start / stop / status -------------------------------------------------------------

cmd_start() {
    local auth=0 durable=0 keep=0 full_jit=0
    while [[ $# -gt 0 ]]; do
        case $1 in
            --auth) auth=1 ;;
            --durable) durable=1 ;;
            --keep-data) keep=1 ;;
            --full-jit) full_jit=1 ;;
            *) kp_die "unknown start option '$1' (try --help)" 2 ;;
        esac
        shift
    done
    [[ $START_TIMEOUT =~ ^[1-9][0-9]*$ ]] || kp_die "KP_CASSANDRA_START_TIMEOUT must be a whole number of seconds, not '$START_TIMEOUT'" 2
    # What the node's behaviour depends on, kept to refuse a second start that asks
    # for something else.
    local mode=plain pid
    if [[ $auth == 1 && $durable == 1 ]]; then mode="--auth --durable"
    elif [[ $auth == 1 ]]; then mode=--auth
    elif [[ $durable == 1 ]]; then mode=--durable
    fi

    if pid=$(node_pid); then
        local running_mode
        running_mode=$(cat "$MODE_FILE" 2>/dev/null || echo unknown)
        if [[ $running_mode != "$mode" ]]; then
            kp_die "Cassandra is already running (pid $pid) started as '$running_mode', not '$mode'; run '$0 stop' first"
        fi
        kp_log "Cassandra is already running (pid $pid) on $HOST:$PORT; nothing to do"
        return 0
    fi

    local port user
    for port in "$PORT" "$STORAGE_PORT"; do
        if user=$(port_user "$port"); then
            kp_die "port $port on $HOST is already taken by $user; not starting Cassandra, which needs $PORT and $STORAGE_PORT free (a node this script did not start, or another program: stop it first)"
        fi
    done

    installed || { kp_log "Cassandra is not installed yet; installing first"; cmd_install; }
    ensure_java17
    kp_have setsid || kp_die "setsid (util-linux) is needed to run Cassandra in the background"

    # Fresh run directory unless --keep-data; the yaml is always written anew.
    if [[ $keep == 0 ]]; then
        rm -rf "$RUN_DIR"
    fi
    mkdir -p "$RUN_DIR/data" "$RUN_DIR/logs" "$RUN_DIR/triggers"
    local yaml=$RUN_DIR/cassandra.yaml
    local -a edits=(-e "s|@STORAGE@|$RUN_DIR/data|g")
    if [[ $durable == 1 ]]; then
        edits+=(-e 's|^commitlog_sync: periodic .*# kp:commitlog$|commitlog_sync: batch|'
                -e '/^commitlog_sync_period: .*# kp:commitlog$/d')
    fi
    if [[ $auth == 1 ]]; then
        edits+=(-e 's|^authenticator: AllowAllAuthenticator .*# kp:auth$|authenticator: PasswordAuthenticator|')
    fi
    sed "${edits[@]}" "$CONF_DIR/cassandra.yaml" >"$yaml"
    ! grep -q '@STORAGE@' "$yaml" || kp_die "could not fill in $yaml"
    printf '%s\n' "$mode" >"$MODE_FILE"

    local -a jvm_opts=()
    local line
    while IFS= read -r line || [[ -n $line ]]; do
        line=${line%%#*}
        line=${line//[[:space:]]/}
        [[ -n $line ]] && jvm_opts+=("$line")
    done <"$CONF_DIR/jvm17.options"

    # C1 only halves the start (about 17 s instead of 35-45 s on 2 busy cores).
    [[ $full_jit == 1 ]] || jvm_opts+=(-XX:TieredStopAtLevel=1)
    local -a extra_opts=()
    read -r -a extra_opts <<<"${KP_CASSANDRA_JVM_OPTS:-}"

    # Fast single-node start: no waiting for gossip to settle, no saved ring state, the
    # default superuser (for --auth) created at once, and a fixed memtable row overhead
    # (180 bytes, what 5.0.9 measures) instead of measuring 100,000 rows (about 9 s).
    local -a command=(
        "$JAVA"
        "-Xms$XMS" "-Xmx$XMX"
        "${jvm_opts[@]}"
        -Djava.net.preferIPv4Stack=true
        "-XX:ErrorFile=$RUN_DIR/logs/hs_err_pid%p.log"
        -Dcassandra-foreground=yes
        "-Dcassandra.config=file://$yaml"
        "-Dcassandra.storagedir=$RUN_DIR/data"
        "-Dcassandra.logdir=$RUN_DIR/logs"
        "-Dcassandra.triggers_dir=$RUN_DIR/triggers"
        "-Dlogback.configurationFile=file://$CONF_DIR/logback.xml"
        -Dcassandra.skip_wait_for_gossip_to_settle=0
        -Dcassandra.load_ring_state=false
        -Dcassandra.superuser_setup_delay_ms=0
        -Dcassandra.memtable.row_overhead_size=180
        "${extra_opts[@]}"
        -cp "$LIB_DIR/*:$CONF_DIR"
        "$MAIN_CLASS"
    )

    mkdir -p "$RUN_ROOT"
    rm -f "$PID_FILE"
    local flags=()
    [[ $auth == 1 ]] && flags+=(--auth)
    [[ $durable == 1 ]] && flags+=(--durable)
    [[ $keep == 1 ]] && flags+=(--keep-data)
    [[ $full_jit == 1 ]] && flags+=(--full-jit)
    kp_log "starting Cassandra $(pom_version) ${flags[*]:+(${flags[*]}) }on $HOST:$PORT (Java $("$JAVA" -version 2>&1 | sed -n '1s/.*version "\([^"]*\)".*/\1/p'), heap $XMS–$XMX); log ${LOG_FILE#"$KP_ROOT"/}"
    # Cassandra mlockall()s its memory at start, which pins the whole committed heap
    # (RSS ≈ 1.2 GB at rest). A test node gains nothing from that: a low soft
    # RLIMIT_MEMLOCK, and as root (where CAP_IPC_LOCK ignores the limit) a bounding
    # set without that capability, make the call fail with one warning in system.log.
    local -a launcher=(setsid)
    if [[ $(id -u) -eq 0 ]] && kp_have setpriv; then
        launcher+=(setpriv --bounding-set=-ipc_lock)
    fi
    local started=$SECONDS
    # The child writes its own pid and then becomes java, in its own session so that
    # it outlives this script and a terminal's hangup.
    (
        cd "$RUN_DIR"
        ulimit -S -l 64 2>/dev/null || true
        # shellcheck disable=SC2016  # expanded by the inner sh
        exec "${launcher[@]}" sh -c 'echo $$ >"$0"; exec "$@"' "$PID_FILE" "${command[@]}"
    ) </dev/null >"$LOG_FILE" 2>&1 &

    local probe=()
    [[ $auth == 1 ]] && probe=(cassandra cassandra)
    local deadline=$((SECONDS + START_TIMEOUT)) next_note=$((SECONDS + 15))
    until [[ -s $PID_FILE ]] && cql_ready "${probe[@]}"; do
        if [[ -s $PID_FILE ]] && ! node_pid >/dev/null; then
            log_tail
            kp_die "Cassandra exited during start-up after $((SECONDS - started))s$(start_error)"
        fi
        if ((SECONDS >= deadline)); then
            log_tail
            cmd_stop >/dev/null 2>&1 || true
            kp_die "Cassandra did not answer a CQL handshake on $HOST:$PORT within ${START_TIMEOUT}s (KP_CASSANDRA_START_TIMEOUT); stopped it$(start_error)"
        fi
        if ((SECONDS >= next_note)); then
            kp_log "still starting ($((SECONDS - started))s) ..."
            next_note=$((SECONDS + 15))
        fi
        sleep 0.5
    done
    kp_log "Cassandra is ready on $HOST:$PORT after $((SECONDS - started))s (pid $(<"$PID_FILE"))${flags[*]:+, ${flags[*]}}"
}

cmd_stop() {
    [[ $# -eq 0 ]] || kp_die "stop takes no options, not '$*'" 2
    local pid waited=0
    if ! pid=$(node_pid); then
        kp_log "Cassandra is not running"
        return 0
    fi
    kp_log "stopping Cassandra (pid $pid)"
    kill -TERM "$pid" 2>/dev/null || true
    while kill -0 "$pid" 2>/dev/null && ((waited < STOP_TIMEOUT * 2)); do
        sleep 0.5
        waited=$((waited + 1))
    done
    if kill -0 "$pid" 2>/dev/null; then
        kp_warn "Cassandra (pid $pid) still running after ${STOP_TIMEOUT}s; sending KILL"
        kill -KILL "$pid" 2>/dev/null || true
        waited=0
        while kill -0 "$pid" 2>/dev/null && ((waited < 50)); do
            sleep 0.2
            waited=$((waited + 1))
        done
        ! kill -0 "$pid" 2>/dev/null || kp_die "Cassandra (pid $pid) survived KILL"
    fi
    rm -f "$PID_FILE"
    kp_log "Cassandra stopped"
}

# rss_of PID — resident memory of PID, e.g. "412 MB".
rss_of() {
    local kb
    kb=$(ps -o rss= -p "$1" 2>/dev/null | tr -d ' ')
    [[ -n $kb ]] && printf '%d MB' "$((kb / 1024))" || printf '?'
}

cmd_status() {
    [[ $# -eq 0 ]] || kp_die "status takes no options, not '$*'" 2
    local pid
    if pid=$(node_pid); then
        if cql_ready; then
            printf 'running (pid %s) on %s:%s (%s), RSS %s\n' "$pid" "$HOST" "$PORT" \
                "$(cat "$MODE_FILE" 2>/dev/null || echo '?')" "$(rss_of "$pid")"
        else
            printf 'running (pid %s), not answering CQL on %s:%s yet\n' "$pid" "$HOST" "$PORT"
        fi
        return 0
    fi
    printf 'stopped\n'
    return 3
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
    url)     printf '%s:%s\n' "$HOST" "$PORT" ;;
    -h|--help|help) kp_usage "${BASH_SOURCE[0]}" ;;
    *) kp_die "unknown command '$action' (install, start, stop, status, url; try --help)" 2 ;;
esac
