#!/bin/sh
# Installs and starts stack-agent, the stack-orchestrator's worker agent. Served by the orchestrator
# at /install.sh; the one-line command from POST /api/v1/tunnel/install-command runs it as
#
#   STACK_AGENT_TOKEN=<join token> sh -s -- --server URL --sha256 HEX [--ca-fingerprint HEX]
#     [--agent-endpoint HOST:PORT[,HOST:PORT...]] [--no-systemd] [agent options]
#
# It downloads the agent (one file) from URL/downloads/stack-agent.mjs, checks its SHA-256, keeps the
# join token in a file only its owner can read, and starts the agent: as the systemd service
# stack-agent when run as root where systemd runs (unless --no-systemd), else as a background process
# with a log file.
# Options after its own (or after --) go to the agent unchanged (stack-agent --help).
# Everything is in a function, so a download cut short runs nothing.

set -eu

die() {
  printf 'install.sh: %s\n' "$*" >&2
  exit 1
}

# One POSIX sh word for any value: '...' with each ' written '\''.
quote() {
  rest=$1
  out=
  while :; do
    case $rest in
      *\'*)
        out="$out${rest%%\'*}'\\''"
        rest=${rest#*\'}
        ;;
      *) break ;;
    esac
  done
  printf "'%s%s'" "$out" "$rest"
}

download() {
  if command -v curl >/dev/null 2>&1; then
    curl -fsSL --retry 3 -o "$2" "$1"
  elif command -v wget >/dev/null 2>&1; then
    wget -q -O "$2" "$1"
  else
    die 'curl or wget is needed to download the agent'
  fi
}

sha256_of() {
  if command -v sha256sum >/dev/null 2>&1; then
    sha256sum "$1" | cut -d' ' -f1
  elif command -v shasum >/dev/null 2>&1; then
    shasum -a 256 "$1" | cut -d' ' -f1
  else
    "$node" -e 'process.stdout.write(require("crypto").createHash("sha256").update(require("fs").readFileSync(process.argv[1])).digest("hex"))' "$1"
  fi
}

# True when the pid is alive and, where /proc tells, is this agent (a pid file may be stale).
is_agent() {
  kill -0 "$1" 2>/dev/null || return 1
  [ -r "/proc/$1/cmdline" ] || return 0
  tr '\0' ' ' <"/proc/$1/cmdline" | grep -q 'stack-agent\.mjs'
}

stop_background_agent() {
  [ -f "$pid_file" ] || return 0
  old=$(cat "$pid_file")
  case $old in '' | *[!0-9]*) return 0 ;; esac
  is_agent "$old" || return 0
  printf 'stopping the running agent (pid %s)\n' "$old"
  kill "$old" 2>/dev/null || true
  waited=0
  while is_agent "$old" && [ "$waited" -lt 20 ]; do
    sleep 0.5 2>/dev/null || sleep 1
    waited=$((waited + 1))
  done
  if is_agent "$old"; then kill -9 "$old" 2>/dev/null || true; fi
}

main() {
  server=
  sha256=
  fingerprint=
  endpoints=
  systemd=yes
  while [ $# -gt 0 ]; do
    case $1 in
      --server | --sha256 | --ca-fingerprint | --agent-endpoint)
        [ $# -ge 2 ] || die "$1 needs a value"
        case $1 in
          --server) server=$2 ;;
          --sha256) sha256=$2 ;;
          --ca-fingerprint) fingerprint=$2 ;;
          --agent-endpoint) endpoints=$2 ;;
        esac
        shift 2
        ;;
      --no-systemd)
        systemd=no
        shift
        ;;
      --)
        shift
        break
        ;;
      *) break ;;
    esac
  done
  [ -n "$server" ] || die '--server URL is required'
  case $server in
    http://* | https://*) ;;
    *) die "--server must be an http:// or https:// URL, not $server" ;;
  esac
  server=${server%/}
  case $sha256 in
    '' | *[!0-9a-f]*) die '--sha256 wants the 64 lower-case hex digits of the agent download' ;;
  esac
  [ ${#sha256} -eq 64 ] || die '--sha256 wants the 64 lower-case hex digits of the agent download'
  token=${STACK_AGENT_TOKEN:-}
  [ -n "$token" ] || die 'the join token goes in the environment variable STACK_AGENT_TOKEN'
  # The agent refuses a token given two ways; it reads the file.
  unset STACK_AGENT_TOKEN

  node=$(command -v node 2>/dev/null) || die 'Node.js 20 or newer is needed on the PATH (https://nodejs.org)'
  "$node" -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 20 ? 0 : 1)' ||
    die "Node.js 20 or newer is needed; $node is $("$node" --version)"

  if [ "$systemd" = yes ] && [ "$(id -u)" = 0 ] && [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
    mode=systemd
    dir=/opt/stack-agent
  else
    mode=background
    [ -n "${HOME:-}" ] || die 'HOME is not set'
    dir=$HOME/.local/share/stack-agent
  fi
  bundle=$dir/stack-agent.mjs
  token_file=$dir/join-token
  pid_file=$dir/agent.pid
  log_file=$dir/agent.log
  run_script=$dir/run-agent.sh

  umask 077
  mkdir -p "$dir/data"
  printf 'downloading %s\n' "$server/downloads/stack-agent.mjs"
  download "$server/downloads/stack-agent.mjs" "$bundle.new"
  actual=$(sha256_of "$bundle.new")
  if [ "$actual" != "$sha256" ]; then
    rm -f "$bundle.new"
    die "the download's SHA-256 is $actual, not $sha256: nothing was installed"
  fi

  [ "$mode" = systemd ] || stop_background_agent
  mv -f "$bundle.new" "$bundle"
  rm -f "$token_file.new"
  printf '%s\n' "$token" >"$token_file.new"
  mv -f "$token_file.new" "$token_file"

  {
    printf '#!/bin/sh\n# Written by install.sh: how this agent starts.\nexec %s %s' "$(quote "$node")" "$(quote "$bundle")"
    printf ' %s %s' --server "$(quote "$server")" --token-file "$(quote "$token_file")" --data-dir "$(quote "$dir/data")"
    [ -z "$fingerprint" ] || printf ' --ca-fingerprint %s' "$(quote "$fingerprint")"
    [ -z "$endpoints" ] || printf ' --agent-endpoint %s' "$(quote "$endpoints")"
    for arg in "$@"; do printf ' %s' "$(quote "$arg")"; done
    printf '\n'
  } >"$run_script.new"
  chmod 700 "$run_script.new"
  mv -f "$run_script.new" "$run_script"

  if [ "$mode" = systemd ]; then
    cat >/etc/systemd/system/stack-agent.service <<'UNIT'
[Unit]
Description=stack-agent (stack-orchestrator worker agent)
Wants=network-online.target
After=network-online.target

[Service]
ExecStart=/bin/sh /opt/stack-agent/run-agent.sh
Restart=always
RestartSec=5

[Install]
WantedBy=multi-user.target
UNIT
    chmod 644 /etc/systemd/system/stack-agent.service
    systemctl daemon-reload
    systemctl enable stack-agent.service >/dev/null 2>&1
    systemctl restart stack-agent.service
    printf 'stack-agent installed in %s and started as the systemd service stack-agent\n' "$dir"
    printf '  log:  journalctl -u stack-agent\n'
    return 0
  fi

  nohup /bin/sh "$run_script" >>"$log_file" 2>&1 </dev/null &
  pid=$!
  printf '%s\n' "$pid" >"$pid_file"
  # An agent that cannot start (bad option, refused token) says so within moments.
  sleep 2
  if ! is_agent "$pid"; then
    tail -n 20 "$log_file" >&2 || true
    die "the agent stopped right after it started; its log is $log_file"
  fi
  printf 'stack-agent installed in %s and running in the background (pid %s)\n' "$dir" "$pid"
  # shellcheck disable=SC2016 # the stop command is printed for the reader to run, not run here
  printf '  log:  %s\n  stop: kill "$(cat %s)"\n' "$log_file" "$(quote "$pid_file")"
}

main "$@"
