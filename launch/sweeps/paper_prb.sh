#!/usr/bin/env bash
# Personalized RewardBench setting on real models: evaluate RMs with each profile mode, then BoN.
set -euo pipefail
RMS=${RMS:?set RMS to a comma list of RM hub ids or record ids}
rlexp evaluate -m experiment=paper_prb rm=$RMS profile=none,raw,planner hydra/launcher=submitit_slurm
rlexp bon -m experiment=paper_prb rm=$RMS prompts=lampqa hydra/launcher=submitit_slurm
