# Process supervision for the scripts in hack/ whose processes outlive them
# (local-cluster.sh's control plane, dev.sh's servers): each process runs
# detached, with its PID in ${PROC_DIR}/NAME.pid and its output in
# ${PROC_LOG_DIR}/NAME.log. Tests supervise the processes they start
# themselves, in Go (test/e2eutil's Process), tied to the test's lifetime.
#
# Sources lib/init.sh (strict mode, ROOT, log, die). The caller sets PROC_DIR and PROC_LOG_DIR
# (default: PROC_DIR). NAME must be part of the command line (the binary's
# name), which is how a PID is told from a reused one.

source "$(dirname "${BASH_SOURCE[0]}")/init.sh"

# proc_start NAME COMMAND... runs COMMAND detached (its own session, so a
# Ctrl-C or the end of the calling shell does not reach it).
proc_start() {
    local name="$1"
    shift
    setsid "$@" </dev/null >"${PROC_LOG_DIR:-${PROC_DIR}}/${name}.log" 2>&1 &
    local pid=$! i
    echo "${pid}" >"${PROC_DIR}/${name}.pid"
    # Until the forked shell has exec'd the command, /proc shows the script's
    # command line, and proc_pid would take the process for gone (seen under
    # load). Wait for the exec (or the exit), at most 10 s.
    for ((i = 0; i < 100; i++)); do
        kill -0 "${pid}" 2>/dev/null || break
        [[ "$(tr '\0' ' ' <"/proc/${pid}/cmdline" 2>/dev/null)" == *"${name}"* ]] && break
        sleep 0.1
    done
}

# proc_pid NAME prints the PID of NAME when it is running, and fails
# otherwise. The command line is checked so a reused PID is never taken for
# the process.
proc_pid() {
    local pid cmdline
    pid="$(cat "${PROC_DIR}/$1.pid" 2>/dev/null)" || return 1
    [ -n "${pid}" ] && kill -0 "${pid}" 2>/dev/null || return 1
    # Read whole, not piped into `grep -q`: under pipefail an early exit of
    # grep can fail the pipeline with SIGPIPE.
    cmdline="$(tr '\0' ' ' <"/proc/${pid}/cmdline" 2>/dev/null)" || return 1
    [[ "${cmdline}" == *"$1"* ]] || return 1
    echo "${pid}"
}

# proc_stop NAME TIMEOUT stops NAME, if it runs: SIGTERM, then SIGKILL after
# TIMEOUT seconds. Removes the PID file either way.
proc_stop() {
    local name="$1" timeout="$2" pid start deadline
    if pid="$(proc_pid "${name}")"; then
        kill -TERM "${pid}" 2>/dev/null || true
        start="$(date +%s)"
        deadline=$((start + timeout))
        while kill -0 "${pid}" 2>/dev/null && [ "$(date +%s)" -lt "${deadline}" ]; do
            sleep 0.2
        done
        if kill -0 "${pid}" 2>/dev/null; then
            log "${name} (pid ${pid}) still running ${timeout}s after SIGTERM; sending SIGKILL"
            kill -KILL "${pid}" 2>/dev/null || true
        else
            log "stopped ${name} (pid ${pid}) in $(($(date +%s) - start))s"
        fi
    fi
    rm -f "${PROC_DIR}/${name}.pid"
}

# proc_wait_for NAME DEADLINE DESCRIPTION COMMAND... retries COMMAND until it
# succeeds. When NAME exits or DEADLINE (seconds since the epoch) passes
# first, it says so with the end of NAME's log and fails.
proc_wait_for() {
    local name="$1" deadline="$2" what="$3" reason log_file
    shift 3
    until "$@" >/dev/null 2>&1; do
        # Gone only if it is gone twice, half a second apart: while a
        # process execs (setsid into the command), its /proc/PID/cmdline
        # can read empty for a moment (seen in CI: "exited" with an empty
        # log, alive when stopped right after).
        if ! proc_pid "${name}" >/dev/null && { sleep 0.5; ! proc_pid "${name}" >/dev/null; }; then
            reason="${name} exited while waiting for ${what}"
        elif [ "$(date +%s)" -ge "${deadline}" ]; then
            reason="timed out waiting for ${what}"
        else
            sleep 0.5
            continue
        fi
        log "${reason}"
        log_file="${PROC_LOG_DIR:-${PROC_DIR}}/${name}.log"
        if [ -f "${log_file}" ]; then
            log "last lines of ${log_file}:"
            tail -n 30 "${log_file}" | sed 's/^/    /' >&2
        fi
        return 1
    done
}

# port_in_use PORT succeeds when something listens on 127.0.0.1:PORT.
port_in_use() {
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}
