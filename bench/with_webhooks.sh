#!/bin/sh
# Starts rein-router ($REIN_ROUTER) with every notice posted to $REIN_WEBHOOK_URL, passing its
# other arguments on: for router_bench --router_binary, to measure the loop with webhooks on
# beside off (docs/WEBHOOKS.md, "What it costs").
exec "${REIN_ROUTER:?set REIN_ROUTER to rein-router}" \
  "--webhook_url=${REIN_WEBHOOK_URL:?set REIN_WEBHOOK_URL to the receiver}" "$@"
