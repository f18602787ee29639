#!/bin/sh
# A stand-in for Nsight Systems' `nsys`: `sessions list` prints sessions.txt (the real column
# layout), `start`/`stop --session=NAME` succeed for a listed NAME not in refuse.txt and fail
# otherwise. Every call's arguments are appended to calls.log, one [bracketed] item each.
# A command named in hang.txt (`sessions`, `start`, `stop`) writes its pid to hung.pid and
# sleeps (30 s at most) instead: a hung nsys.
here=$(dirname "$0")
for a in "$@"; do printf '[%s]' "$a"; done >> "$here/calls.log"
echo >> "$here/calls.log"
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
    else
      echo "Error: could not find session '$name'" >&2
      exit 1
    fi ;;
  *)
    echo "unknown command $1" >&2; exit 2 ;;
esac
