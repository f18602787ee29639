#!/bin/sh
# A stand-in for Nsight Systems' `nsys`: `sessions list` prints sessions.txt (the real column
# layout), `start`/`stop --session=NAME` succeed for a listed NAME not in refuse.txt and fail
# otherwise. Every call's arguments are appended to calls.log, one [bracketed] item each.
# A command named in hang.txt (`sessions`, `start`, `stop`) writes its pid to hung.pid and
# sleeps (30 s at most) instead: a hung nsys.
# `export --type sqlite --output OUT … REPORT` copies REPORT (a test's report is an SQLite
# export already) to OUT, as nsys writes its export. A `stop` of a session named in
# stop-writes.txt (lines `NAME<TAB>SOURCE<TAB>REPORT`) copies SOURCE to REPORT and prints
# nsys's `Generated:` lines.
here=$(dirname "$0")
# One write per call: exports run in parallel, and pieces written one by one interleave.
line=
for a in "$@"; do line="$line[$a]"; done
printf '%s\n' "$line" >> "$here/calls.log"
if [ -f "$here/hang.txt" ] && grep -Fqx -- "$1" "$here/hang.txt"; then
  echo "nsys $1: hanging" >&2
  echo $$ > "$here/hung.pid"
  exec sleep 30
fi
case "$1" in
  sessions)
    cat "$here/sessions.txt" ;;
  start|stop)
    name=${2#--session=}
    if [ -f "$here/refuse.txt" ] && grep -Fqx -- "$name" "$here/refuse.txt"; then
      echo "Error: session '$name' cannot $1 now" >&2
      exit 1
    fi
    if awk 'NR > 1 { $1 = $2 = $3 = $4 = ""; sub(/^ +/, ""); print }' "$here/sessions.txt" | grep -Fqx -- "$name"; then
      echo "nsys $1: session $name ok"
      if [ "$1" = stop ] && [ -f "$here/stop-writes.txt" ]; then
        tab=$(printf '\t')
        while IFS="$tab" read -r s src rep; do
          if [ "$s" = "$name" ]; then
            cp "$src" "$rep"
            echo "[1/1] [========================100%] $(basename "$rep")"
            echo "Generated:"
            echo "    $rep"
          fi
        done < "$here/stop-writes.txt"
      fi
    else
      echo "Error: could not find session '$name'" >&2
      exit 1
    fi ;;
  export)
    out= rep=
    while [ $# -gt 1 ]; do
      shift
      case "$1" in
        -o|--output) shift; out=$1 ;;
        -t|--type|-f|--force-overwrite) shift ;;
        *) rep=$1 ;;
      esac
    done
    [ -n "$out" ] && [ -f "$rep" ] || { echo "export: no --output or no report" >&2; exit 1; }
    echo "Processing [$rep] with [SQLite]..."
    cp "$rep" "$out" ;;
  *)
    echo "unknown command $1" >&2; exit 2 ;;
esac
