# Sourced by the stage-by-stage sweeps: LAUNCHER picks where each stage's jobs run.
#   LAUNCHER=slurm   one SLURM job per sweep point (conf/hydra/launcher/slurm.yaml; needs `pip install -e '.[slurm]'`)
#   LAUNCHER=joblib  worker processes on this machine (conf/hydra/launcher/joblib_cpu.yaml)
#   LAUNCHER=basic   one job after another in this process (Hydra's default)
# SLURM sizes per stage come from the calling script (slurm_size); account/partition from conf/local/default.yaml.
LAUNCHER=${LAUNCHER:-slurm}
case "$LAUNCHER" in
  slurm) L=(hydra/launcher=slurm) ;;
  joblib) L=(hydra/launcher=joblib_cpu runtime.threads=1) ;;
  basic) L=() ;;
  *) echo "$(basename "$0"): LAUNCHER=$LAUNCHER: expected slurm, joblib or basic" >&2; exit 2 ;;
esac

# slurm_size GPUS HOURS MEM_GB: the launcher options of one stage (nothing unless LAUNCHER=slurm).
slurm_size() {
  if [ "$LAUNCHER" = slurm ]; then
    echo "hydra.launcher.gpus_per_node=$1 hydra.launcher.timeout_min=$(($2 * 60)) hydra.launcher.mem_gb=$3 hydra.launcher.cpus_per_task=$((${1:-0} > 0 ? 8 * $1 : 2))"
  fi
}

# ids TASK [KEY=VALUE ...]: the comma list of record ids of TASK whose config matches (rlexp store ls --where).
ids() {
  local task=$1; shift
  local where=()
  for w in "$@"; do where+=(--where "$w"); done
  local found
  found=$(rlexp store ls --task "$task" "${where[@]}" --ids)
  [ -n "$found" ] || { echo "$(basename "$0"): no $task record matches $* (did the previous stage finish?)" >&2; exit 1; }
  echo "$found"
}
