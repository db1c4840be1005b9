#!/bin/bash
# The sandbox (docs/security.md): every thread of a running monitor under
# the seccomp filter, a forbidden system call's line and status, and the
# switch to another user with --user/--group/--sandbox.  TAP, run by prove.
. "$(dirname "$0")/tap.sh"
cd "$ROOT"
T=$TMP

RUN_STDERR=all

mb_image "$T/exit.bin" "mov al, 0x2a
out 0xf4, al"
mb_image "$T/spin.bin" ".l: jmp .l"

pids=
trap 'for p in $pids; do kill -KILL "$p" 2>/dev/null; done; rm -rf "$TMP"' EXIT

# status_of PID FIELD: the field's value in /proc/PID/status of every
# thread, one line each.
status_of() {
    local task
    for task in /proc/"$1"/task/*; do
        sed -n "s/^$2:[[:space:]]*//p" "$task/status" 2>/dev/null
    done
}

# spin NAME ARGS...: the spinning guest in the background with ARGS, traced
# into a file and a unix socket (the socket server's thread starts before
# the filter); waits until every thread of it is filtered.  Sets PID.
spin() {
    local name=$1 i
    shift
    "$VBTS" -q "$@" --trace "$T/$name.vbts" --trace "unix:$T/$name.sock" "$T/spin.bin" \
        >"$T/$name.out" 2>"$T/$name.err" </dev/null &
    PID=$!
    pids="$pids $PID"
    for i in $(seq 100); do
        # the monitor's thread, the socket server's, the signals', the vCPU's
        [ "$(status_of "$PID" Seccomp | sort -u)" = 2 ] && [ "$(ls /proc/"$PID"/task | wc -l)" -ge 4 ] &&
            return 0
        sleep 0.1
    done
    return 1
}

# stop NAME: SIGINT ends the spin with 130 and a trace that ends in a stop marker.
stop() {
    kill -INT "$PID"
    wait "$PID"
    local rc=$? last
    last=$("$VBTS_DECODE" --format json "$T/$1.vbts" 2>&1 | tail -n 1)
    case "$rc|$last" in
    "130|"*'"kind":"stop"'*'"reason":"interrupted"'*) return 0 ;;
    *) diag "status $rc, last record: $last"; diag_file "$T/$1.err"; return 1 ;;
    esac
}

# --- the filter -------------------------------------------------------------
if spin filtered; then
    ok "every thread runs under the seccomp filter (Seccomp: 2)"
    f=$(status_of "$PID" Seccomp_filters | sort -u)
    [ "$f" = 1 ] && ok "each thread has the one filter" || fail "each thread has the one filter" "Seccomp_filters: $f"
else
    fail "every thread runs under the seccomp filter (Seccomp: 2)" "$(status_of "$PID" Seccomp | tr '\n' ' ')"
    skip "each thread has the one filter" "no filter"
fi
stop filtered && ok "the filtered run ends on SIGINT: 130, complete trace" ||
    fail "the filtered run ends on SIGINT: 130, complete trace"

# A forbidden call: one line naming it, then death by SIGSYS (the shell's
# 128+31) of the whole process, the socket server's thread with it; no
# core of the guest's memory.  (bash's own "Bad system call" note goes to
# /dev/null.)
{ (ulimit -c 0; VBTS_TEST_FORBIDDEN_SYSCALL=1 exec "$VBTS" -q --trace "$T/forbidden.vbts" \
       --trace "unix:$T/forbidden.sock" "$T/exit.bin") \
    >"$T/out" 2>"$T/err" </dev/null; rc=$?; } 2>/dev/null
if [ $rc = 159 ] && [ "$(cat "$T/err")" = "vbts: sandbox: forbidden system call 59 (execve)" ]; then
    ok "a forbidden system call: its line, status 159 (SIGSYS)"
else
    fail "a forbidden system call: its line, status 159 (SIGSYS)" "status $rc" "stderr: $(cat "$T/err")"
fi
VBTS_TEST_FORBIDDEN_SYSCALL=1 run "--no-seccomp: the same call is let through" 85 "" -- --no-seccomp "$T/exit.bin"

# --- who the monitor runs as ------------------------------------------------
uid=$(id -u)
if [ "$uid" != 0 ]; then
    for n in "switch to nobody with --sandbox" "switch to numbers with --user/--group" \
             "bad --user" "bad --group" "--group alone" "--user root"; do
        skip "$n" "not root"
    done
else
    nobody_uid=$(id -u nobody) nobody_gid=$(id -g nobody)
    if spin nobody --sandbox &&
       [ "$(status_of "$PID" Uid | sort -u)" = "$(printf '%s\t%s\t%s\t%s' $nobody_uid $nobody_uid $nobody_uid $nobody_uid)" ] &&
       [ "$(status_of "$PID" Gid | sort -u)" = "$(printf '%s\t%s\t%s\t%s' $nobody_gid $nobody_gid $nobody_gid $nobody_gid)" ] &&
       [ -z "$(status_of "$PID" Groups | sort -u)" ] && stop nobody; then
        ok "switch to nobody with --sandbox: every thread, real/effective/saved/fs ids, no groups"
    else
        fail "switch to nobody with --sandbox" "Uid: $(status_of "$PID" Uid | sort -u)" \
            "Gid: $(status_of "$PID" Gid | sort -u)" "Groups: $(status_of "$PID" Groups | sort -u)"
    fi
    if spin numbers --user 54321 --group 43210 &&
       [ "$(status_of "$PID" Uid | sort -u)" = "$(printf '54321\t54321\t54321\t54321')" ] &&
       [ "$(status_of "$PID" Gid | sort -u)" = "$(printf '43210\t43210\t43210\t43210')" ] &&
       stop numbers && [ "$(stat -c %u:%a "$T/numbers.vbts")" = 0:600 ]; then
        ok "switch to numbers with --user/--group; the trace file stays root's, 0600"
    else
        fail "switch to numbers with --user/--group" "Uid: $(status_of "$PID" Uid | sort -u)" \
            "Gid: $(status_of "$PID" Gid | sort -u)"
    fi
    run "bad --user" 125 "vbts: --user: no such user 'no-such-user-vbts'" \
        -- --user no-such-user-vbts "$T/exit.bin"
    run "bad --group" 125 "vbts: --group: no such group 'no-such-group-vbts'" \
        -- --user nobody --group no-such-group-vbts "$T/exit.bin"
    run "--group alone" 125 "vbts: --group: needs --user or --sandbox (root would keep its privileges)" \
        -- --group nogroup "$T/exit.bin"
    run "--user root" 125 "vbts: --user: 'root' is root, which drops nothing" -- --user root "$T/exit.bin"
fi

# Not root: --user is refused before anything is opened (nobody may not
# even open /dev/kvm).
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
if [ "$uid" = 0 ] && command -v setpriv >/dev/null && as_nobody "$VBTS" --version >/dev/null 2>&1; then
    for opt in --user --sandbox; do
        arg=; [ $opt = --user ] && arg=nobody
        as_nobody "$VBTS" $opt $arg "$T/exit.bin" >"$T/out" 2>"$T/err" </dev/null
        rc=$?
        want="vbts: $opt: only root can switch to another user (vbts runs as uid 65534)"
        if [ $rc = 125 ] && [ "$(cat "$T/err")" = "$want" ]; then
            ok "$opt when not root: status 125, the line"
        else
            fail "$opt when not root: status 125, the line" "status $rc" "stderr: $(cat "$T/err")"
        fi
    done
elif [ "$uid" != 0 ]; then
    run "--user when not root" 125 "vbts: --user: only root can switch to another user (vbts runs as uid $uid)" \
        -- --user nobody "$T/exit.bin"
    run "--sandbox when not root" 125 "vbts: --sandbox: only root can switch to another user (vbts runs as uid $uid)" \
        -- --sandbox "$T/exit.bin"
else
    skip "--user when not root" "setpriv cannot run vbts as uid 65534 here"
    skip "--sandbox when not root" "setpriv cannot run vbts as uid 65534 here"
fi

plan "$TAP_N"
exit $((TAP_FAILED > 0))
