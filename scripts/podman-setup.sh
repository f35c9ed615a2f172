#!/usr/bin/env bash
# Podman as the Docker Engine API for the docker driver's tests: installs podman, runc and
# busybox-static when missing, writes a containers.conf of our own, imports the busybox test images
# and serves the API on a unix socket. Idempotent: a second run only checks that the socket answers.
# Prints the socket path on stdout (everything else goes to stderr). Run as root (rootful podman).
#
#   PODMAN_SOCKET     socket path (default /run/stack-test/podman.sock); its directory also holds
#                     containers.conf and podman-service.log
#   PODMAN_ULIMITS    default ulimits for containers, comma separated (default
#                     "nofile=1024:1024,nproc=1024:1024"); empty keeps podman's own defaults
set -euo pipefail

SOCKET=${PODMAN_SOCKET:-/run/stack-test/podman.sock}
STATE_DIR=$(dirname "$SOCKET")
CONF="$STATE_DIR/containers.conf"
LOG="$STATE_DIR/podman-service.log"
PIDFILE="$STATE_DIR/podman-service.pid"
ULIMITS=${PODMAN_ULIMITS-nofile=1024:1024,nproc=1024:1024}
IMAGES=(localhost/stack-test/busybox:1 localhost/stack-test/busybox:2)

say() { printf 'podman-setup: %s\n' "$*" >&2; }

if [ "$(id -u)" -ne 0 ]; then
  say "must run as root (the tests use rootful podman and its port publishing)"
  exit 1
fi

# dpkg, not `command -v`: Debian's dynamic `busybox` package also has /bin/busybox, but the image has
# no libc, so it needs the static build.
missing=()
for pkg in podman runc busybox-static curl; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  say "installing ${missing[*]}"
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

mkdir -p "$STATE_DIR"
# Our own config, passed to podman as CONTAINERS_CONF, so the machine's containers.conf stays as it is.
# runc: Debian 12 has no crun unless installed, and runc is what the tests run on.
# default_ulimits: rootful podman asks for nofile=1048576 and a large nproc; a process without
# CAP_SYS_RESOURCE (this VM, many CI sandboxes) cannot raise its hard limits that far and runc fails
# with "error setting rlimit type 7: operation not permitted".
{
  printf '[containers]\n'
  if [ -n "$ULIMITS" ]; then
    printf 'default_ulimits = ['
    sep=''
    IFS=',' read -ra items <<<"$ULIMITS"
    for item in "${items[@]}"; do
      printf '%s"%s"' "$sep" "$item"
      sep=', '
    done
    printf ']\n'
  fi
  printf '\n[engine]\nruntime = "runc"\n'
} >"$CONF.new"
conf_changed=''
cmp -s "$CONF.new" "$CONF" || conf_changed=1
mv "$CONF.new" "$CONF"
export CONTAINERS_CONF="$CONF"

# The test images: a root file system holding busybox and its applets, imported (no registry here).
# Tag 2 differs from tag 1 (another ENV) so an image change is a different image id.
build_image() {
  local ref=$1 tag=${1##*:} root
  root=$(mktemp -d)
  mkdir -p "$root/bin" "$root/etc" "$root/tmp" "$root/www"
  chmod 1777 "$root/tmp"
  cp /bin/busybox "$root/bin/busybox"
  for applet in $(/bin/busybox --list); do
    [ "$applet" = busybox ] || ln -sf busybox "$root/bin/$applet"
  done
  printf 'root:x:0:0:root:/:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n' >"$root/etc/passwd"
  printf 'root:x:0:\nnobody:x:65534:\n' >"$root/etc/group"
  tar -C "$root" -c . | podman import --quiet \
    --change 'ENV PATH=/bin' \
    --change "ENV STACK_TEST_IMAGE=busybox-$tag" \
    --change 'CMD ["sh"]' \
    - "$ref" >/dev/null
  rm -rf "$root"
  say "built $ref"
}
for ref in "${IMAGES[@]}"; do
  podman image exists "$ref" || build_image "$ref"
done

ping_socket() { curl -sf --max-time 2 --unix-socket "$SOCKET" http://d/_ping >/dev/null 2>&1; }

# A service we started earlier is restarted when its config changed, or when the directory it was
# started from is gone (a removed checkout: conmon then fails every container with "Failed to get
# working directory"); one started by someone else is left alone (its config is theirs).
if [ -s "$PIDFILE" ] && ping_socket; then
  pid=$(cat "$PIDFILE")
  reason=''
  [ -n "$conf_changed" ] && reason='containers.conf changed'
  case "$(readlink "/proc/$pid/cwd" 2>/dev/null)" in *' (deleted)') reason='its working directory was deleted' ;; esac
  if [ -n "$reason" ] && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = podman ]; then
    say "$reason: restarting the podman service (pid $pid)"
    kill "$pid"
    for _ in $(seq 1 50); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
  fi
fi

if ! ping_socket; then
  rm -f "$SOCKET"
  say "starting podman system service on $SOCKET (log $LOG)"
  # setsid + nohup: the service outlives this script and the CI step that ran it.
  # From /: a working directory that may be removed later (a checkout) would break its containers.
  (cd / && exec setsid nohup podman system service --time=0 "unix://$SOCKET" >>"$LOG" 2>&1 </dev/null) &
  echo $! >"$PIDFILE"
  for _ in $(seq 1 100); do
    ping_socket && break
    sleep 0.1
  done
  if ! ping_socket; then
    say "podman system service did not answer on $SOCKET; its log:"
    tail -n 50 "$LOG" >&2 || true
    exit 1
  fi
fi

echo "$SOCKET"
