#!/usr/bin/env bash
# Installs, starts and stops the services oxwright's distributed mode and
# its integration tests need, on a Debian 12 machine without systemd:
# RabbitMQ (Debian `rabbitmq-server`) and an S3 server (`s3s-fs` 0.14.1).
#
#   infra/services.sh install   # idempotent: apt + cargo install, starts nothing
#   infra/services.sh start     # idempotent: starts what is not running, waits until ready
#   infra/services.sh stop      # stops by recorded PID, then `epmd -kill`
#   infra/services.sh status    # exit 0 only when both answer
#   infra/services.sh restart-rabbitmq   # stop + start the broker only (recovery tests)
#   infra/services.sh start-s3 | stop-s3 # the S3 server only (outage tests; data kept)
#   infra/services.sh list-queues        # every queue: name, ready, unacked (tab-separated)
#
# Everything binds to 127.0.0.1 and lives under $OXWRIGHT_STATE
# (default /tmp/oxwright-services): broker data and logs, the S3 data
# directory, PID files and service logs.
#
# Environment (defaults match the integration tests):
#   OXWRIGHT_STATE          state directory            /tmp/oxwright-services
#   OXWRIGHT_AMQP_PORT      RabbitMQ AMQP port         5672
#   OXWRIGHT_S3_PORT        s3s-fs port                9000
#   OXWRIGHT_S3_ACCESS_KEY  s3s-fs access key          oxwright
#   OXWRIGHT_S3_SECRET_KEY  s3s-fs secret key          oxwright-secret
#   OXWRIGHT_RABBIT_NODE    Erlang node name           rabbit@localhost
#   OXWRIGHT_RABBIT_DIST_PORT Erlang distribution port AMQP port + 20000
#   OXWRIGHT_RABBIT_START_S seconds a broker may boot  180
#   OXWRIGHT_S3_BUCKET      bucket created at start    oxwright
#
# A second, private broker (tests that stop the broker use one) needs its
# own OXWRIGHT_STATE, OXWRIGHT_AMQP_PORT and OXWRIGHT_RABBIT_NODE; a private
# S3 server its own OXWRIGHT_STATE and OXWRIGHT_S3_PORT. A broker that
# restarts while clients keep connecting needs both of its ports below the
# kernel's ephemeral range (net.ipv4.ip_local_port_range): an outgoing
# connection may take a port inside it while the broker is down, and the
# broker then cannot listen on it again.
set -euo pipefail

STATE="${OXWRIGHT_STATE:-/tmp/oxwright-services}"
AMQP_PORT="${OXWRIGHT_AMQP_PORT:-5672}"
S3_PORT="${OXWRIGHT_S3_PORT:-9000}"
S3_ACCESS_KEY="${OXWRIGHT_S3_ACCESS_KEY:-oxwright}"
S3_SECRET_KEY="${OXWRIGHT_S3_SECRET_KEY:-oxwright-secret}"
RABBIT_NODE="${OXWRIGHT_RABBIT_NODE:-rabbit@localhost}"
RABBIT_DIST_PORT="${OXWRIGHT_RABBIT_DIST_PORT:-$((AMQP_PORT + 20000))}"
RABBIT_START_S="${OXWRIGHT_RABBIT_START_S:-180}"
S3_BUCKET="${OXWRIGHT_S3_BUCKET:-oxwright}"
S3S_VERSION="0.14.1"
RABBIT_BIN=/usr/lib/rabbitmq/bin

RMQ_DIR="$STATE/rabbitmq"
S3_DIR="$STATE/s3"
RMQ_PID="$RMQ_DIR/rabbitmq.pid"
S3_PID="$S3_DIR/s3s-fs.pid"

log() { echo "infra/services.sh: $*" >&2; }
die() { log "error: $*"; exit 1; }

sudo_if_needed() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

s3s_bin() {
  if command -v s3s-fs >/dev/null 2>&1; then
    command -v s3s-fs
  elif [ -x "${CARGO_HOME:-$HOME/.cargo}/bin/s3s-fs" ]; then
    echo "${CARGO_HOME:-$HOME/.cargo}/bin/s3s-fs"
  else
    return 1
  fi
}

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

pid_alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

# Exports the environment that points RabbitMQ at the private state dir and
# binds every port (AMQP, distribution, epmd) to loopback.
rabbit_env() {
  export HOME="$RMQ_DIR/home"
  export RABBITMQ_NODENAME="$RABBIT_NODE"
  export RABBITMQ_NODE_IP_ADDRESS=127.0.0.1
  export RABBITMQ_NODE_PORT="$AMQP_PORT"
  export RABBITMQ_DIST_PORT="$RABBIT_DIST_PORT"
  export RABBITMQ_MNESIA_BASE="$RMQ_DIR/mnesia"
  export RABBITMQ_LOG_BASE="$RMQ_DIR/log"
  export RABBITMQ_PID_FILE="$RMQ_PID"
  export RABBITMQ_CONFIG_FILE="$RMQ_DIR/rabbitmq.conf"
  export RABBITMQ_ENABLED_PLUGINS_FILE="$RMQ_DIR/enabled_plugins"
  export RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1}"
  export ERL_EPMD_ADDRESS=127.0.0.1
  # A node that fails to start writes its crash dump here, not in the
  # caller's directory.
  export ERL_CRASH_DUMP="$RMQ_DIR/erl_crash.dump"
}

install() {
  local started=$SECONDS
  if [ ! -x "$RABBIT_BIN/rabbitmq-server" ]; then
    log "installing rabbitmq-server (apt)"
    export DEBIAN_FRONTEND=noninteractive
    sudo_if_needed apt-get -o DPkg::Lock::Timeout=600 update -qq
    sudo_if_needed apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends rabbitmq-server >/dev/null
  else
    log "rabbitmq-server already installed"
  fi
  if ! s3s_bin >/dev/null; then
    log "installing s3s-fs $S3S_VERSION (cargo install, ~2 min)"
    cargo install --locked "s3s-fs@$S3S_VERSION" --features binary
  else
    log "s3s-fs already installed at $(s3s_bin)"
  fi
  log "install done in $((SECONDS - started)) s"
}

# Says why the broker did not start, with the end of its own output, and
# exits.
rabbit_failed() {
  log "error: $1; the end of $RMQ_DIR/stdout.log:"
  tail -n 30 "$RMQ_DIR/stdout.log" >&2 2>/dev/null || true
  exit 1
}

start_rabbitmq() {
  [ -x "$RABBIT_BIN/rabbitmq-server" ] || die "rabbitmq-server is not installed; run: $0 install"
  if pid_alive "$RMQ_PID" && port_open "$AMQP_PORT"; then
    log "rabbitmq already running (pid $(cat "$RMQ_PID"))"
    return
  fi
  port_open "$AMQP_PORT" && die "port $AMQP_PORT is taken by a process this script did not start"
  mkdir -p "$RMQ_DIR/home" "$RMQ_DIR/mnesia" "$RMQ_DIR/log"
  # Loopback only; guest may log in from localhost by default.
  cat >"$RMQ_DIR/rabbitmq.conf" <<EOF
listeners.tcp.default = 127.0.0.1:$AMQP_PORT
loopback_users.guest = true
EOF
  echo "[]." >"$RMQ_DIR/enabled_plugins"
  (
    rabbit_env
    # setsid: the broker outlives this script and its terminal.
    setsid "$RABBIT_BIN/rabbitmq-server" >"$RMQ_DIR/stdout.log" 2>&1 </dev/null &
    echo $! >"$RMQ_DIR/launcher.pid"
  )
  # A node boots in ~3 s on an idle machine and in 20-40 s on two cores
  # shared with busy browsers; a launcher that exits has failed.
  local deadline=$((SECONDS + RABBIT_START_S))
  until port_open "$AMQP_PORT"; do
    pid_alive "$RMQ_DIR/launcher.pid" || rabbit_failed "rabbitmq-server exited before opening port $AMQP_PORT"
    [ $SECONDS -lt $deadline ] || rabbit_failed "rabbitmq did not open port $AMQP_PORT within $RABBIT_START_S s"
    sleep 0.2
  done
  # The port opens (and `ping` answers) before the broker takes work.
  (rabbit_env; timeout "$RABBIT_START_S" "$RABBIT_BIN/rabbitmqctl" -q await_startup) \
    || rabbit_failed "rabbitmqctl await_startup failed"
  log "rabbitmq ready on 127.0.0.1:$AMQP_PORT (pid $(cat "$RMQ_PID"))"
}

start_s3() {
  local bin
  bin="$(s3s_bin)" || die "s3s-fs is not installed; run: $0 install"
  if pid_alive "$S3_PID" && port_open "$S3_PORT"; then
    log "s3s-fs already running (pid $(cat "$S3_PID"))"
    return
  fi
  port_open "$S3_PORT" && die "port $S3_PORT is taken by a process this script did not start"
  # s3s-fs keeps each bucket as a directory: the default bucket exists
  # from the start.
  mkdir -p "$S3_DIR/data/$S3_BUCKET"
  setsid "$bin" --host 127.0.0.1 --port "$S3_PORT" \
    --access-key "$S3_ACCESS_KEY" --secret-key "$S3_SECRET_KEY" \
    "$S3_DIR/data" >"$S3_DIR/s3s-fs.log" 2>&1 </dev/null &
  echo $! >"$S3_PID"
  local deadline=$((SECONDS + 20))
  until port_open "$S3_PORT"; do
    pid_alive "$S3_PID" || die "s3s-fs exited; see $S3_DIR/s3s-fs.log"
    [ $SECONDS -lt $deadline ] || die "s3s-fs did not open port $S3_PORT within 20 s"
    sleep 0.1
  done
  log "s3s-fs ready on 127.0.0.1:$S3_PORT (pid $(cat "$S3_PID"), data in $S3_DIR/data)"
}

stop_pid() {
  local name=$1 file=$2 wait_s=$3
  if ! pid_alive "$file"; then
    log "$name not running"
    rm -f "$file"
    return
  fi
  local pid
  pid="$(cat "$file")"
  kill -TERM "$pid"
  local deadline=$((SECONDS + wait_s))
  while kill -0 "$pid" 2>/dev/null; do
    if [ $SECONDS -ge $deadline ]; then
      log "$name (pid $pid) ignored TERM for $wait_s s, killing"
      kill -KILL "$pid" 2>/dev/null || true
      break
    fi
    sleep 0.2
  done
  rm -f "$file"
  log "$name stopped (pid $pid)"
}

stop_rabbitmq() {
  stop_pid rabbitmq "$RMQ_PID" 30
  # epmd is shared by every Erlang node on the machine: stop it only
  # when no node is registered any more.
  if command -v epmd >/dev/null 2>&1 && ! epmd -names 2>/dev/null | grep -q '^name '; then
    ERL_EPMD_ADDRESS=127.0.0.1 epmd -kill >/dev/null 2>&1 || true
  fi
}

status() {
  local ok=0
  if pid_alive "$RMQ_PID" && port_open "$AMQP_PORT"; then
    log "rabbitmq: running (pid $(cat "$RMQ_PID"), 127.0.0.1:$AMQP_PORT)"
  else
    log "rabbitmq: stopped"
    ok=1
  fi
  if pid_alive "$S3_PID" && port_open "$S3_PORT"; then
    log "s3s-fs: running (pid $(cat "$S3_PID"), 127.0.0.1:$S3_PORT)"
  else
    log "s3s-fs: stopped"
    ok=1
  fi
  return $ok
}

case "${1:-}" in
  install) install ;;
  start)
    started=$SECONDS
    start_s3
    start_rabbitmq
    log "start done in $((SECONDS - started)) s"
    ;;
  stop)
    stop_pid s3s-fs "$S3_PID" 10
    stop_rabbitmq
    ;;
  start-rabbitmq) start_rabbitmq ;;
  list-queues)
    (rabbit_env; "$RABBIT_BIN/rabbitmqctl" -q list_queues --no-table-headers name messages_ready messages_unacknowledged)
    ;;
  start-s3) start_s3 ;;
  stop-s3) stop_pid s3s-fs "$S3_PID" 10 ;;
  stop-rabbitmq) stop_rabbitmq ;;
  restart-rabbitmq)
    stop_rabbitmq
    start_rabbitmq
    ;;
  status) status ;;
  *)
    echo "usage: $0 install|start|stop|status|start-rabbitmq|stop-rabbitmq|restart-rabbitmq|start-s3|stop-s3|list-queues" >&2
    exit 2
    ;;
esac
