#!/usr/bin/env bash
# RewardBench 2 paper grid on real models (GPUs + model hub): bases x data x epochs x lr.
set -euo pipefail
rlexp train_rm -m experiment=paper_rb2 hydra/launcher=submitit_slurm \
  model=tulu3_8b_sft,tulu3_8b_dpo,tulu3_8b_rl,llama3_1_8b_instruct,qwen2_5_7b_instruct \
  data=tulu,skywork,tulu_skywork trainer.num_train_epochs=1,2 trainer.learning_rate=1e-6,3e-6,2e-5 deepspeed=zero3
