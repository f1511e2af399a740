#!/usr/bin/env bash
# Three "hosts" on this machine for the multi-host tests (tests/test_hosts.py) and for
# rehearsing a cluster set-up on a laptop (docs/clusters.md): each host is a network namespace
# (its own interface and address, joined to the others through a bridge in a fourth, "switch"
# namespace) with its own hostname (a UTS namespace). The hosts share one mount namespace whose
# /etc/hosts names all of them (bind-mounted; the rest of the file system is this machine's, as
# on a cluster with a shared home). Processes are not isolated (one pid namespace): a test can
# signal a rank on any host.
#
#   .ci/hosts-up.sh          (as root) build the hosts, or check that they are up: idempotent
#   .ci/hosts-up.sh --down   remove them (namespaces, mounts, the state folder)
#
# Then run a command on a host with `.ci/hosts-ssh HOST COMMAND...`, the stand-in for ssh that
# the MPI launchers are given (Open MPI: --prtemca plm_ssh_agent .ci/hosts-ssh with a hostfile;
# MPICH: -launcher ssh -launcher-exec .ci/hosts-ssh -hosts HOST:R,...). Names and addresses:
# gcc-host1..3 at 10.250.25.1..3/24 (HOSTS_UP_NET=10.250.25 to change; the script refuses a
# range that this machine already routes). Exits non-zero, naming what failed, if the hosts
# cannot be built or do not answer each other.
set -euo pipefail

COUNT=3
NET=${HOSTS_UP_NET:-10.250.25}
STATE=/run/gcc_mpi-hosts
SWITCH=gcc-switch
names=()
for i in $(seq "$COUNT"); do names+=("gcc-host$i"); done

fail() { echo "hosts-up: $*" >&2; exit 1; }

[[ $(id -u) == 0 ]] || fail "must run as root (network, UTS and mount namespaces)"
for tool in ip unshare nsenter mount python3; do
    command -v "$tool" > /dev/null || fail "needs $tool"
done

down() {  # every mount below the state folder (the namespace files), the folder, the namespaces
    local mounts ns
    for _ in 1 2 3; do
        mounts=$(awk -v s="$STATE" '$2 == s || index($2, s "/") == 1 {print $2}' /proc/mounts |
                 sort -r)
        [[ -z $mounts ]] && break
        for m in $mounts; do umount "$m" 2> /dev/null || umount -l "$m" 2> /dev/null || true; done
    done
    for ns in $(ip netns list | awk '{print $1}'); do
        [[ $ns == "$SWITCH" || $ns == gcc-host* ]] && ip netns delete "$ns"
    done
    rm -rf "$STATE"
}

run_on() {  # run_on HOST COMMAND...: COMMAND in HOST's namespaces (from this one)
    local name=$1
    shift
    nsenter --net="/run/netns/$name" --uts="$STATE/$name/uts" --mount="$STATE/mnt" \
        --wd="$PWD" -- "$@"
}

check() {  # every host has its name and /etc/hosts, and the others reach it over TCP
    local i name port="" server
    for i in $(seq "$COUNT"); do
        name=${names[$((i - 1))]}
        [[ $(run_on "$name" hostname 2> /dev/null) == "$name" ]] || return 1
        run_on "$name" grep -q "^$NET.$i $name\$" /etc/hosts || return 1
    done
    rm -f "$STATE/port"
    run_on "${names[0]}" python3 -c "
import socket
s = socket.socket(); s.settimeout(10); s.bind(('$NET.1', 0)); s.listen()
open('$STATE/port', 'w').write(str(s.getsockname()[1]))
for _ in range($COUNT - 1):
    c, _ = s.accept(); c.sendall(c.recv(4))" &
    server=$!
    for _ in $(seq 200); do
        port=$(cat "$STATE/port" 2> /dev/null || true)
        [[ -n $port ]] && break
        sleep 0.05
    done
    [[ -n $port ]] || { kill "$server" 2> /dev/null; return 1; }
    for name in "${names[@]:1}"; do
        run_on "$name" python3 -c "
import socket
c = socket.create_connection(('${names[0]}', $port), timeout=5); c.sendall(b'ping')
assert c.recv(4) == b'ping'" 2> /dev/null || { kill "$server" 2> /dev/null; return 1; }
    done
    wait "$server"
}

if [[ ${1:-} == --down ]]; then
    down
    echo "hosts-up: removed ${names[*]}"
    exit 0
fi

if [[ -d $STATE ]] && check; then
    echo "hosts-up: ${names[*]} are up ($NET.1-$COUNT)"
    exit 0
fi
down

if ! ip -o route get "$NET.1" 2> /dev/null | grep -q " via "; then
    fail "$NET.0/24 is a network this machine already has; set HOSTS_UP_NET to another range"
fi

mkdir -p "$STATE"
mount --bind "$STATE" "$STATE"   # a private mount: namespace files can be bound below it
mount --make-private "$STATE"
ip netns add "$SWITCH"
ip -n "$SWITCH" link add br0 type bridge
ip -n "$SWITCH" link set br0 up
{
    echo "127.0.0.1 localhost"
    for i in $(seq "$COUNT"); do echo "$NET.$i ${names[$((i - 1))]}"; done
} > "$STATE/hosts"
for i in $(seq "$COUNT"); do
    name=${names[$((i - 1))]}
    mkdir -p "$STATE/$name"
    touch "$STATE/$name/uts"
    ip netns add "$name"
    ip link add "gm-h$i" type veth peer name "gm-s$i"
    ip link set "gm-h$i" netns "$name"
    ip link set "gm-s$i" netns "$SWITCH"
    ip -n "$SWITCH" link set "gm-s$i" master br0
    ip -n "$SWITCH" link set "gm-s$i" up
    ip -n "$name" link set lo up
    ip -n "$name" addr add "$NET.$i/24" dev "gm-h$i"
    ip -n "$name" link set "gm-h$i" up
    unshare --uts="$STATE/$name/uts" hostname "$name"  # kept by binding it to a file
done
# The hosts' mount namespace, made last: a copy of this one, so that the files binding every
# namespace above are there too (a bind made later would not be: private propagation). Its own
# file is not, so hosts-ssh leaves the mount namespace as it is when it is already that one.
touch "$STATE/mnt"
unshare --mount="$STATE/mnt" --propagation private mount --bind "$STATE/hosts" /etc/hosts
stat -L -c %i "$STATE/mnt" > "$STATE/mnt.id"
check || fail "the hosts were built but do not answer each other (see: ip -n ${names[0]} addr)"
echo "hosts-up: ${names[*]} are up ($NET.1-$COUNT)"
