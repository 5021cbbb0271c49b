#!/usr/bin/env bash
# Run one django-q2 cluster (`scripts/qcluster.sh [default|transactional|campaign]`) so that a SIGTERM to this
# script's process group (how honcho stops a process) stops it cleanly: qcluster's sentinel must receive the
# signal alone — when its worker children get it too, the sentinel hangs until killed. So qcluster runs in its
# own session and this script forwards SIGTERM/SIGINT to it, escalating to SIGKILL after 4 s.
set -u
cd "$(dirname "$0")/.."
queue="${1:-default}"
if [ "$queue" != "default" ]; then export Q_CLUSTER_NAME="$queue"; else unset Q_CLUSTER_NAME; fi
setsid .venv/bin/python manage.py qcluster &
pid=$!
stop() {
  trap '' TERM INT
  kill -TERM "$pid" 2>/dev/null
  for _ in $(seq 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL -- "-$pid" 2>/dev/null
}
trap stop TERM INT
wait "$pid"
status=$?
wait "$pid" 2>/dev/null
# sweep leftovers of the cluster's process group (workers of a sentinel that died)
kill -KILL -- "-$pid" 2>/dev/null
exit "$status"
