#!/usr/bin/env bash
# The default sandbox study as stage-by-stage sweeps (same records as `rlexp study`).
set -euo pipefail
J="hydra/launcher=joblib hydra.launcher.n_jobs=2 runtime.threads=1 experiment_name=sandbox_study"
rlexp train_rm -m model=tiny_llama,tiny_qwen data=general,personal,mix,flipped trainer.num_train_epochs=1,2 profile=planner $J
RMS=$(rlexp store ls --task train_rm | awk 'NR>1 && $1 !~ /record/ {print $1}' | paste -sd, -)
rlexp evaluate -m rm=$RMS benchmark=both profile=none $J
rlexp evaluate -m rm=$RMS benchmark=prb profile=planner $J
rlexp sample -m model=tiny_llama prompts=personalized,general $J
rlexp bon -m rm=$RMS prompts=personalized,general profile=planner $J
rlexp correlate select_experiment=sandbox_study
