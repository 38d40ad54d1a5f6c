#!/bin/sh
# A non-Python client of `createos-fake serve`: create a sandbox, run a command, destroy it.
# Usage: sh examples/curl_client.sh http://127.0.0.1:8080/v1 <api key>
set -eu
API="$1"
KEY="$2"

call() { # call METHOD PATH [JSON BODY]
    if [ $# -ge 3 ]; then
        curl -sS --fail -X "$1" -H "X-Api-Key: $KEY" -H "Content-Type: application/json" \
            -d "$3" "$API$2"
    else
        curl -sS --fail -X "$1" -H "X-Api-Key: $KEY" "$API$2"
    fi
}

ID=$(call POST /sandboxes '{"shape": "s-1vcpu-1gb"}' | sed -n 's/.*"id": *"\([^"]*\)".*/\1/p')
until call GET "/sandboxes/$ID" | grep -q '"status": *"running"'; do sleep 0.1; done
OUT=$(call POST "/sandboxes/$ID/exec" '{"cmd": "echo", "args": ["hello from curl"]}')
printf '%s\n' "$OUT" | sed -n 's/.*"stdout": *"\([^"]*\)".*/stdout: \1/p'
call DELETE "/sandboxes/$ID" > /dev/null
echo "destroyed $ID"
