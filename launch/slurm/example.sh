#!/usr/bin/env bash
# Train the RewardBench 2 grid on SLURM (one GPU job per RM); needs `pip install -e '.[slurm]'`.
set -euo pipefail
rlexp train_rm -m hydra/launcher=submitit_slurm \
  model=tulu3_8b_sft,llama3_1_8b_instruct,qwen2_5_7b_instruct \
  data=tulu,skywork,tulu_skywork trainer=reward_paper trainer.num_train_epochs=1,2 \
  trainer.learning_rate=1e-6,3e-6,2e-5 hydra.launcher.gpus_per_node=8 deepspeed=zero3
