#!/bin/sh
# rmq-init: create notice-service's topic and consumer group on the dev RocketMQ, and prove they exist.
# mqadmin (RocketMQ 5.3.2) prints errors and still exits 0, so success is read from its output. The broker's port
# opens a moment before it registers with namesrv; until then updateTopic finds no cluster, so it is retried.
set -u
NAMESRV="${NAMESRV:-rmq-namesrv:9876}"
TOPIC="${TOPIC:-hyapp_room_outbox}"
GROUP="${GROUP:-hyapp-notice-room-outbox}"
RETRY_MAX_TIMES="${RETRY_MAX_TIMES:-16}"
ATTEMPTS="${ATTEMPTS:-30}"
PAUSE="${PAUSE:-2}"
MQADMIN="${MQADMIN:-sh mqadmin}"

# until_ok <success pattern> <command…>: run until its output matches, at most ATTEMPTS times, PAUSE s apart.
until_ok() {
  pattern="$1"; shift
  i=1
  while [ "$i" -le "$ATTEMPTS" ]; do
    out=$("$@" 2>&1)
    if printf '%s\n' "$out" | grep -Eq "$pattern"; then
      printf '%s\n' "$out" | grep -E "$pattern" | sed 's/^/[rmq-init] /'
      return 0
    fi
    echo "[rmq-init] attempt $i/$ATTEMPTS: not yet ($(printf '%s' "$out" | tr '\n' ' ' | cut -c1-160))"
    i=$((i + 1))
    sleep "$PAUSE"
  done
  echo "[rmq-init] FAILED after $ATTEMPTS attempts; last output:"
  printf '%s\n' "$out"
  return 1
}

until_ok 'create topic to .* success' $MQADMIN updateTopic -n "$NAMESRV" -c DefaultCluster -t "$TOPIC" -a +message.type=NORMAL || exit 1
until_ok 'create subscription group to .* success' $MQADMIN updateSubGroup -n "$NAMESRV" -c DefaultCluster -g "$GROUP" -r "$RETRY_MAX_TIMES" || exit 1
# Read back: the topic has a route with queues, the group has a config.
until_ok '"readQueueNums" *: *[1-9]' $MQADMIN topicRoute -n "$NAMESRV" -t "$TOPIC" || exit 1
until_ok "$GROUP" $MQADMIN getConsumerConfig -n "$NAMESRV" -g "$GROUP" || exit 1
echo "[rmq-init] created and verified topic $TOPIC and consumer group $GROUP (retry max $RETRY_MAX_TIMES) on $NAMESRV"
