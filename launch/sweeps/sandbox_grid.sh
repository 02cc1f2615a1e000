#!/usr/bin/env bash
# The default sandbox study as stage-by-stage sweeps (the records `rlexp study` writes), on this machine
# by default: LAUNCHER=joblib|slurm|basic (_launcher.sh); LAUNCHER=slurm with the local cluster of
# launch/slurm/local-cluster.sh tries the SLURM path on one machine.
set -euo pipefail
LAUNCHER=${LAUNCHER:-joblib}
source "$(dirname "$0")/_launcher.sh"
X=(experiment_name=sandbox_study "${L[@]}")
rlexp train_rm -m "${X[@]}" model=tiny_llama,tiny_qwen data=general,personal,mix,flipped trainer.num_train_epochs=1,2 profile=planner
RMS=$(ids train_rm experiment_name=sandbox_study)
rlexp evaluate -m "${X[@]}" rm="$RMS" benchmark=both profile=none
rlexp evaluate -m "${X[@]}" rm="$RMS" benchmark=prb profile=planner
rlexp sample -m "${X[@]}" model=tiny_llama prompts=personalized,general
rlexp bon -m "${X[@]}" rm="$RMS" model=tiny_llama prompts=personalized,general profile=planner
rlexp correlate select_experiment=sandbox_study
