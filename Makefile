# The two commands of the README. Both create or reuse .venv and are idempotent.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.rlexp-installed
PYTEST_ARGS ?=

.PHONY: study test setup lint clean

# Reinstall only when the dependency list changes.
$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@$(PY) -m pip install -q --upgrade pip
	@# Without CUDA, take the CPU build of torch first (an unpinned torch pulls a multi-GB CUDA build).
	@if ! command -v nvidia-smi >/dev/null 2>&1; then $(PY) -m pip install -q "torch==2.13.0"; fi
	@$(PY) -m pip install -q -e ".[dev,suite]"
	@touch $(STAMP)

setup: $(STAMP)

study: $(STAMP)
	@$(VENV)/bin/rlexp study experiment=$${EXPERIMENT:-sandbox_study}

test: $(STAMP)
	@WANDB_MODE=disabled $(PY) -m pytest -q $(PYTEST_ARGS)

lint: $(STAMP)
	@$(VENV)/bin/ruff check rlexp tests perf

clean:
	rm -rf runs outputs .cache
