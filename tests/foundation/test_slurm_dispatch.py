"""What a SLURM job of the study runs: a multi-GPU step's task under `accelerate launch` with the
accelerate config of the DeepSpeed preset its overrides name, then the in-process step that finds the
record it wrote; a one-GPU step in process. (The study against a real SLURM: tests/cluster/.)"""

from __future__ import annotations

import sys

from rlexp.slurm_dispatch import ACCELERATE_CONFIGS, accelerate_command, on_node
from rlexp.tasks.study import Step


def test_a_multi_gpu_step_runs_its_task_under_accelerate_with_its_deepspeed_preset() -> None:
    step = Step("ppo", "ppo/x", ["model=tulu3_8b_sft", "deepspeed=none", "rm='abc'", "deepspeed=zero2"])
    cmd = accelerate_command(step, 8)
    assert cmd[:5] == [sys.executable, "-m", "accelerate.commands.launch", "--num_processes", "8"]
    assert cmd[5:7] == ["--config_file", str(ACCELERATE_CONFIGS / "zero2.yaml")]  # the last deepspeed= wins
    assert cmd[7:] == ["-m", "rlexp.tasks.ppo", *step.overrides]
    # No accelerate config for a preset without one (deepspeed=none): accelerate's defaults.
    assert "--config_file" not in accelerate_command(Step("train_rm", "t", ["deepspeed=none"]), 2)


def test_a_one_gpu_step_and_a_step_with_no_task_module_run_in_the_job_itself() -> None:
    seen = []

    def run(step: Step) -> tuple[str | None, str | None]:
        seen.append(step.key)
        return "0123456789abcdef", None

    assert on_node(run, Step("bon", "bon/x", []), 1) == ("0123456789abcdef", None)
    assert on_node(run, Step("lineage", "lineage/x", []), 8) == ("0123456789abcdef", None)  # built in the job
    assert seen == ["bon/x", "lineage/x"]


def test_a_failed_accelerate_launch_fails_the_step_with_its_exit_code() -> None:
    # An unknown override makes the task's Hydra refuse at once (exit 2), under accelerate's launcher.
    step = Step("evaluate", "evaluate/x", ["no_such_key=1"])
    rid, error = on_node(lambda s: ("never", None), step, 2)
    assert rid is None and error.startswith("accelerate launch of evaluate on 2 GPUs exited with code")
