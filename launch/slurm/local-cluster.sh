#!/usr/bin/env bash
# Try the SLURM path on one machine: a single-node SLURM cluster (Debian's slurm-wlm 22.05) on this host.
#
#   launch/slurm/local-cluster.sh start    # install if needed (apt, root), configure, start munged/slurmctld/slurmd
#   launch/slurm/local-cluster.sh status   # sinfo
#   launch/slurm/local-cluster.sh stop     # stop the daemons (the configuration stays)
#
# Then: export PATH="$(launch/slurm/local-cluster.sh bin):$PATH" and run
#   rlexp study experiment=quick study.launcher=slurm
#
# Two facts measured on such a node shape this script:
# - Without slurmdbd there is no `sacct`, and submitit asks sacct for a job's state: a job that died
#   without writing its result (scancel, time limit) would never look finished. `bin/sacct` here
#   answers submitit's query (`sacct -o JobID,State,NodeList --parsable2 -j ID ...`) from
#   `squeue -t all`, which keeps finished jobs for MinJobAge (set to a day).
# - GPUs are declared as GRES with one plain file per GPU (no devices here), so that `--gpus-per-node`
#   requests schedule; nothing in the job can use them.
# Needs root (daemons, /etc) and, the first time, apt. No systemd is used.
set -euo pipefail

STATE=${RLEXP_SLURM_STATE:-/var/lib/rlexp-slurm}
BIN="$STATE/bin"
FAKE_GPUS=${RLEXP_SLURM_GPUS:-2}
HOST=$(hostname -s)

die() { echo "local-cluster.sh: $*" >&2; exit 1; }

install() {
  command -v slurmctld >/dev/null && command -v slurmd >/dev/null && command -v munged >/dev/null \
    && command -v sbatch >/dev/null && return
  [ "$(id -u)" = 0 ] || die "SLURM is not installed and installing it needs root"
  command -v apt-get >/dev/null || die "SLURM is not installed and there is no apt-get to install it"
  local packages=(slurmctld slurmd slurm-client munge)
  # A machine whose package lists were never fetched needs `apt-get update` first.
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${packages[@]}" >/dev/null 2>&1 \
    || { apt-get update -q >/dev/null 2>&1 \
         && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${packages[@]}" >/dev/null; } \
    || die "apt-get install ${packages[*]} failed"
}

write_sacct() {
  mkdir -p "$BIN"
  cat >"$BIN/sacct" <<'EOF'
#!/usr/bin/env bash
# sacct for a cluster without slurmdbd: JobID|State|NodeList of the jobs given with -j, from squeue.
ids=()
while [ $# -gt 0 ]; do
  case "$1" in
    -j|--jobs) ids+=("${2//,/ }"); shift 2 ;;
    -j*) ids+=("${1#-j}"); shift ;;
    *) shift ;;
  esac
done
echo "JobID|State|NodeList"
[ ${#ids[@]} -eq 0 ] && exit 0
for id in ${ids[*]}; do
  squeue -h -t all -j "$id" -o "%i|%T|%N" 2>/dev/null || true
done
EOF
  chmod +x "$BIN/sacct"
}

configure() {
  mkdir -p "$STATE/gpus" /etc/slurm /var/spool/slurmctld /var/spool/slurmd /var/log/slurm /run/munge
  for i in $(seq 0 $((FAKE_GPUS - 1))); do : >"$STATE/gpus/gpu$i"; done
  if [ ! -s /etc/munge/munge.key ]; then
    mungekey --create --keyfile=/etc/munge/munge.key 2>/dev/null \
      || dd if=/dev/urandom of=/etc/munge/munge.key bs=1 count=1024 status=none
  fi
  chown munge:munge /etc/munge/munge.key /run/munge && chmod 0400 /etc/munge/munge.key
  chown -R munge:munge /var/lib/munge /var/log/munge 2>/dev/null || true
  local node
  node=$(slurmd -C | head -1 | sed -E "s/^NodeName=[^ ]+ /NodeName=$HOST NodeAddr=127.0.0.1 /")
  cat >/etc/slurm/slurm.conf <<EOF
# Written by rlexp's launch/slurm/local-cluster.sh: one node, no accounting database.
ClusterName=rlexp-local
SlurmctldHost=$HOST(127.0.0.1)
SlurmUser=root
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/affinity
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
ReturnToService=2
MinJobAge=86400
MaxJobCount=100000
SchedulerParameters=sched_interval=2
GresTypes=gpu
$node Gres=gpu:$FAKE_GPUS State=UNKNOWN
PartitionName=debug Nodes=$HOST Default=YES MaxTime=INFINITE State=UP
EOF
  echo "NodeName=$HOST Name=gpu File=$STATE/gpus/gpu[0-$((FAKE_GPUS - 1))]" >/etc/slurm/gres.conf
  write_sacct
}

running() { pgrep -x "$1" >/dev/null; }

start() {
  [ "$(id -u)" = 0 ] || die "starting the local cluster needs root (daemons and /etc/slurm)"
  # Two starts at once (parallel test workers) take turns: one installs and starts, the other finds it up.
  exec 9>/var/lock/rlexp-local-cluster.lock
  flock 9
  install
  configure
  # 9>&-: a daemon must not inherit the lock, or it holds it for its life and every later start waits.
  running munged || runuser -u munge -- /usr/sbin/munged 9>&- || die "munged did not start"
  running slurmctld || slurmctld 9>&- || die "slurmctld did not start (see /var/log/slurm/slurmctld.log)"
  running slurmd || slurmd 9>&- || die "slurmd did not start (see /var/log/slurm/slurmd.log)"
  for _ in $(seq 50); do
    if sinfo -h -o %T 2>/dev/null | grep -qE '^(idle|mixed|allocated)'; then
      scontrol update nodename="$HOST" state=resume >/dev/null 2>&1 || true
      echo "local SLURM cluster up: partition debug, node $HOST; export PATH=\"$BIN:\$PATH\" for its sacct"
      return
    fi
    scontrol update nodename="$HOST" state=resume >/dev/null 2>&1 || true
    sleep 0.2
  done
  die "the node did not become idle: $(sinfo -h -o '%T %E' 2>&1 | head -1)"
}

stop() {
  pkill -x slurmd 2>/dev/null || true
  pkill -x slurmctld 2>/dev/null || true
  pkill -x munged 2>/dev/null || true
  echo "local SLURM cluster stopped"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) sinfo ;;
  bin) write_sacct >/dev/null 2>&1 || true; echo "$BIN" ;;
  *) die "usage: $0 start|stop|status|bin" ;;
esac
