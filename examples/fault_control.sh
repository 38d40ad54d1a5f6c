#!/bin/sh
# Faults for non-Python users: arm, list and disarm them, and change a sandbox out of band,
# through the fake's control API. Prints one JSend answer per line.
# Usage: sh examples/fault_control.sh http://127.0.0.1:8080 <control key> <sandbox id>
# (the control key is the fake's own credential: `createos-fake serve` prints it, a test reads
# it from `createos_fake.control_key`; account API keys do not open /_fake.)
set -eu
URL="$1"
KEY="$2"
SANDBOX="$3"

control() { # control METHOD PATH [JSON BODY]; no --fail: a 400 prints its envelope too
    if [ $# -ge 3 ]; then
        curl -sS -X "$1" -H "X-Fake-Control-Key: $KEY" -d "$3" "$URL/_fake$2"
    else
        curl -sS -X "$1" -H "X-Fake-Control-Key: $KEY" "$URL/_fake$2"
    fi
    echo
}

control POST /faults '{"operation":"resume_sandbox","action":{"type":"http_error","status":503}}'
control GET /faults        # faults with fired/seen counts, firings, ids still unfired
control DELETE /faults/1   # one fault
control DELETE /faults     # all of them
FAIL_IT='{"action":{"type":"set_status","status":"failed"},"sandbox_id":"'"$SANDBOX"'"}'
control POST /faults/now "$FAIL_IT"  # out of band, at once
control POST /faults '{"operation":"get_sandbox","action":{"type":"http_error","status":200}}' # 400
