#!/usr/bin/env bash
# RewardBench 2's grid stage by stage: train -> evaluate -> sample -> Best-of-N -> PPO -> correlate, the
# records `rlexp study experiment=paper_rb2` writes (GPUs + the model hub). Each stage resumes: rerun the
# script after a failure and finished jobs are found, not run again. LAUNCHER=slurm|joblib|basic (_launcher.sh).
set -euo pipefail
source "$(dirname "$0")/_launcher.sh"
X=(experiment_name=paper_rb2 "${L[@]}")
POLICY=tulu3_8b_sft

# 3 bases x 3 mixes x 2 epochs of 8B RMs, ZeRO-3 on 8 GPUs each.
rlexp train_rm -m "${X[@]}" $(slurm_size 8 24 400) \
  model=tulu3_8b_sft,llama3_1_8b_instruct,qwen2_5_7b_instruct data=tulu,skywork,tulu_skywork \
  trainer.num_train_epochs=1,2 profile=none trainer=reward_paper deepspeed=zero3
RMS=$(ids train_rm experiment_name=paper_rb2)

rlexp evaluate -m "${X[@]}" $(slurm_size 1 4 64) rm="$RMS" benchmark=rb2_hub scorer=rb2_reference profile=none

# The policy's pool on the downstream suite (vLLM), then Best-of-N for every RM.
SUITE=(model=$POLICY prompts=rb2_suite sampling=reference sampling.max_new_tokens=2048)
rlexp sample -m "${X[@]}" $(slurm_size 1 12 64) "${SUITE[@]}"
rlexp bon -m "${X[@]}" $(slurm_size 1 4 64) rm="$RMS" "${SUITE[@]}" profile=none judge.rm=Skywork/Skywork-Reward-V2-Llama-3.1-8B

# PPO for the paper's picks: an RM of the policy's lineage and one of another lineage (ZeRO-2, 8 GPUs).
# Until the Tulu 3 preference-mixture prompts are a prompt set, PPO trains on the suite's own split
# (rlexp ppo holds out part of its prompts for evaluation), not on RewardBench 2's training prompts.
PICK=(experiment_name=paper_rb2 data.name=tulu_skywork trainer.num_train_epochs=1)
PICKS=$(ids train_rm "${PICK[@]}" model.name=$POLICY),$(ids train_rm "${PICK[@]}" model.name=llama3_1_8b_instruct)
rlexp ppo -m "${X[@]}" $(slurm_size 8 48 400) rm="$PICKS" model=$POLICY prompts=rb2_suite profile=none \
  trainer=ppo_rb2_paper deepspeed=zero2

rlexp correlate select_experiment=paper_rb2
