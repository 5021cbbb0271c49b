#!/usr/bin/env bash
# `scripts/keepalive.sh CMD [ARGS…]`: run CMD and start it again whenever it exits, so that under `make run` the
# death of one process (a crash, the OOM killer) no longer makes honcho stop every other one.
# Restarts are 2 s apart, 30 s once it died 5 times within a minute. SIGTERM/SIGINT (honcho signals the
# whole process group) stop CMD and this loop; CMD gets SIGKILL if it is still there 10 s later.
set -u
name="$(basename "$1")${2:+ $2}${3:+ $3}"
stopping=0
pid=""
stop() {
  stopping=1
  [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null
}
trap stop TERM INT
deaths=()
while :; do
  "$@" &
  pid=$!
  status=0
  while kill -0 "$pid" 2>/dev/null; do
    wait "$pid"
    status=$?
    if [ "$stopping" = 1 ]; then
      for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -KILL "$pid" 2>/dev/null
      wait "$pid" 2>/dev/null
      exit 0
    fi
  done
  [ "$stopping" = 1 ] && exit 0
  now=$(date +%s)
  recent=()
  for t in "${deaths[@]+"${deaths[@]}"}" "$now"; do [ $((now - t)) -lt 60 ] && recent+=("$t"); done
  deaths=("${recent[@]}")
  pause=2
  [ "${#deaths[@]}" -ge 5 ] && pause=30
  echo "keepalive: $name exited with status $status; starting it again in ${pause} s" >&2
  sleep "$pause" &
  wait $! 2>/dev/null
  [ "$stopping" = 1 ] && exit 0
done
