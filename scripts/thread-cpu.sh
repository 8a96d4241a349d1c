#!/usr/bin/env bash
# CPU per thread name of the server over SECONDS (default 2) of a load phase:
# which thread is busy and which waits (issue #17). Run it from
# scripts/load-wrk.sh's hook, which sets SERVER_PID:
#   ON_RESOLVE='scripts/thread-cpu.sh > /tmp/threads.txt' scripts/load-wrk.sh
# Prints user and system ticks (1/100 s) per thread name, summed over the
# threads of that name, and from the scheduler's own account
# (/proc/PID/task/TID/schedstat) the milliseconds they ran and the
# milliseconds they were ready to run but waited for a CPU: a serial
# thread (the writer) that waits there holds up every command.
set -euo pipefail
seconds=${SECONDS_TO_SAMPLE:-2}
snap() {
  for t in /proc/"$SERVER_PID"/task/*; do
    echo "$(tr ' ' '_' < "$t/comm") $(awk '{sub(/.*\) /, ""); print $12, $13}' "$t/stat") $(cut -d' ' -f1,2 "$t/schedstat")"
  done | awk '{u[$1] += $2; s[$1] += $3; r[$1] += $4; w[$1] += $5}
              END {for (k in u) printf "%s %d %d %.0f %.0f\n", k, u[k], s[k], r[k], w[k]}' | sort
}
sleep 0.3
before=$(snap)
sleep "$seconds"
after=$(snap)
join <(echo "$before") <(echo "$after") |
  awk -v s="$seconds" '{printf "%-22s user %5d  system %5d  (%.0f %% of a core)  ran %7.1f ms  waited for a CPU %7.1f ms\n",
    $1, $6 - $2, $7 - $3, ($6 - $2 + $7 - $3) / s, ($8 - $4) / 1e6, ($9 - $5) / 1e6}'
