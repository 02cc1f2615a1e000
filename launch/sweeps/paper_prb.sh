#!/usr/bin/env bash
# Personalized RewardBench's setting stage by stage: train -> evaluate (each profile mode, PRB and the
# Chatbot Arena-/PRISM-Personalized comparison) -> sample -> Best-of-N -> PPO -> correlate, the records
# `rlexp study experiment=paper_prb` writes (GPUs, the model hub, and PRB's judge served by vLLM:
# `rlexp judge serve Qwen/Qwen2.5-32B-Instruct --tensor-parallel-size 4`). Published RMs join through
# RMS=<comma list of hub ids>. LAUNCHER=slurm|joblib|basic (_launcher.sh).
set -euo pipefail
source "$(dirname "$0")/_launcher.sh"
X=(experiment_name=paper_prb "${L[@]}")
POLICY=qwen2_5_0_5b_instruct
JUDGE=(judge=llm judge.model=Qwen/Qwen2.5-32B-Instruct judge.variant=prb "judge.endpoint=http://127.0.0.1:8000/v1")

rlexp train_rm -m "${X[@]}" $(slurm_size 4 12 200) model=$POLICY data=tulu_skywork trainer.num_train_epochs=1 profile=none
RMS=$(ids train_rm experiment_name=paper_prb)${RMS:+,$RMS}

rlexp evaluate -m "${X[@]}" $(slurm_size 1 4 64) rm="$RMS" benchmark=prb_hub profile=none,raw,planner
rlexp evaluate -m "${X[@]}" $(slurm_size 1 4 64) rm="$RMS" benchmark=comparison_hub

LAMPQA=(model=$POLICY prompts=lampqa sampling=reference sampling.policy_profile=posts)
rlexp sample -m "${X[@]}" $(slurm_size 1 4 64) "${LAMPQA[@]}"
rlexp bon -m "${X[@]}" $(slurm_size 1 4 64) rm="$RMS" "${LAMPQA[@]}" profile=none "${JUDGE[@]}"
rlexp ppo -m "${X[@]}" $(slurm_size 4 24 200) rm="$RMS" "${LAMPQA[@]}" profile=none trainer=ppo_prb_paper "${JUDGE[@]}"

rlexp correlate select_experiment=paper_prb
