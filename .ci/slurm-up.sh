#!/usr/bin/env bash
# A live one-node SLURM for tests/test_slurm.py: slurmctld and slurmd on this host, munge for
# authentication, no accounting database and no cgroups (they need not work inside a container).
#
#   .ci/slurm-up.sh        (as root; installs Debian's slurm-wlm and munge when missing)
#   .ci/slurm-up.sh --stop (ends the three daemons it started, by their pid files)
#
# Idempotent: a second run finds the daemons up with the same configuration and only waits for
# the node; a changed configuration restarts them. Exits non-zero, naming the daemon's log, if
# the node is not idle within UP_TIMEOUT seconds.
#
# The node declares CPUS (64) CPUs whatever the machine has (SlurmdParameters=config_overrides),
# so that jobs of 12 to 41 ranks fit on a laptop or a 2-core CI runner; gcc_mpi's polite waiting
# keeps such oversubscribed runs usable. MinJobAge keeps finished jobs in `scontrol show job`
# for an hour, which the tests read instead of sacct.
set -euo pipefail

CPUS=${SLURM_UP_CPUS:-64}
UP_TIMEOUT=${SLURM_UP_TIMEOUT:-60}
CONF=/etc/slurm/slurm.conf
LOGS=/var/log/slurm
node=$(hostname -s)

if [[ $(id -u) != 0 ]]; then
    echo "slurm-up: must run as root (installs packages, starts daemons)" >&2
    exit 1
fi

running() {  # running PIDFILE: the daemon of that pid file (named as the file) is alive
    local pid
    pid=$(cat "$1" 2> /dev/null) \
        && [[ $(cat "/proc/$pid/comm" 2> /dev/null) == $(basename "$1" .pid) ]]
}

stop() {  # stop PIDFILE: end the daemon of that pid file (only that process)
    if running "$1"; then
        local pid
        pid=$(cat "$1")
        kill "$pid"
        for _ in $(seq 50); do kill -0 "$pid" 2> /dev/null || return 0; sleep 0.2; done
        kill -9 "$pid" 2> /dev/null || true
    fi
}

if [[ ${1:-} == --stop ]]; then
    stop /run/slurmd.pid
    stop /run/slurmctld.pid
    stop /run/munge/munged.pid
    echo "slurm-up: slurmd, slurmctld and munged stopped"
    exit 0
fi

if ! command -v slurmctld > /dev/null || ! command -v slurmd > /dev/null \
        || ! command -v munged > /dev/null; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq slurm-wlm munge > /dev/null
fi

mkdir -p /etc/slurm /var/spool/slurmctld /var/spool/slurmd "$LOGS" /run/munge
conf=$(cat <<EOF
# written by .ci/slurm-up.sh: one node, $CPUS declared CPUs, no accounting, no cgroups
ClusterName=ci
SlurmctldHost=$node
SlurmUser=root
AuthType=auth/munge
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmctldLogFile=$LOGS/slurmctld.log
SlurmdLogFile=$LOGS/slurmd.log
SlurmdParameters=config_overrides
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
MpiDefault=none
ReturnToService=2
MinJobAge=3600
KillWait=10
NodeName=$node CPUs=$CPUS State=UNKNOWN
PartitionName=ci Nodes=$node Default=YES MaxTime=INFINITE State=UP
EOF
)

if [[ ! -f $CONF ]] || [[ $(cat "$CONF") != "$conf" ]]; then
    printf '%s\n' "$conf" > "$CONF"
    stop /run/slurmd.pid
    stop /run/slurmctld.pid
fi

if ! running /run/munge/munged.pid; then
    [[ -s /etc/munge/munge.key ]] || mungekey --create --keyfile=/etc/munge/munge.key
    chown munge:munge /etc/munge/munge.key /run/munge
    chmod 0400 /etc/munge/munge.key
    # as the munge user, which is what munged expects of its key and socket directory
    runuser -u munge -- munged --pid-file=/run/munge/munged.pid
fi
running /run/slurmctld.pid || slurmctld
running /run/slurmd.pid || slurmd

deadline=$((SECONDS + UP_TIMEOUT))
until [[ $(sinfo -h -n "$node" -o %t 2> /dev/null) =~ ^(idle|mix|alloc) ]]; do
    if ((SECONDS >= deadline)); then
        echo "slurm-up: node $node not up after $UP_TIMEOUT s:" \
             "$(sinfo -h -n "$node" -o '%t %E' 2> /dev/null || echo 'sinfo failed')." \
             "See $LOGS/slurmctld.log and $LOGS/slurmd.log" >&2
        exit 1
    fi
    state=$(sinfo -h -n "$node" -o %t 2> /dev/null || true)
    if [[ $state == down* || $state == drain* ]]; then  # e.g. left down by an earlier run
        scontrol update nodename="$node" state=resume 2> /dev/null || true
    fi
    sleep 0.5
done
# slurmctld restores the node's last state from its state files before slurmd has registered:
# only a job step that runs shows that the node works
if ! timeout "$UP_TIMEOUT" srun --nodes=1 --ntasks=1 --time=1 true; then
    echo "slurm-up: node $node is $(sinfo -h -n "$node" -o %t) but a job step did not run in" \
         "$UP_TIMEOUT s. See $LOGS/slurmctld.log and $LOGS/slurmd.log" >&2
    exit 1
fi
echo "slurm-up: node $node up ($CPUS CPUs): $(sinfo -h -o '%P %t %D')"
