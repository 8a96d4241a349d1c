#!/usr/bin/env bash
# CPU per thread name of the server over SECONDS (default 2) of a load phase:
# which thread is busy and which waits (issue #17). Run it from
# scripts/load-wrk.sh's hook, which sets SERVER_PID:
#   ON_RESOLVE='scripts/thread-cpu.sh > /tmp/threads.txt' scripts/load-wrk.sh
# Prints user and system ticks (1/100 s) per thread name, summed over the
# threads of that name.
set -euo pipefail
seconds=${SECONDS_TO_SAMPLE:-2}
snap() {
  for t in /proc/"$SERVER_PID"/task/*; do
    echo "$(tr ' ' '_' < "$t/comm") $(awk '{sub(/.*\) /, ""); print $12, $13}' "$t/stat")"
  done | awk '{u[$1] += $2; s[$1] += $3} END {for (k in u) print k, u[k], s[k]}' | sort
}
sleep 0.3
before=$(snap)
sleep "$seconds"
after=$(snap)
join <(echo "$before") <(echo "$after") |
  awk -v s="$seconds" '{printf "%-22s user %5d  system %5d  (%.0f %% of a core)\n", $1, $4 - $2, $5 - $3, ($4 - $2 + $5 - $3) / s}'
