#!/bin/sh
# Health check for keepalived: healthy when Outpost's /ready answers 200 within
# one second (model loaded, serving). Exit 0 = healthy, 1 = not.
url="${1:-http://127.0.0.1:8080/ready}"
code=$(curl -s -o /dev/null -m 1 -w '%{http_code}' "$url") || exit 1
[ "$code" = "200" ]
