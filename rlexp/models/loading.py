"""Safe model loading: safetensors only, no remote code unless asked, one-line errors.

A model reference is a local folder or a hub id. Hub ids only work where the hub is reachable
(``HF_HUB_OFFLINE=1`` is set by default inside rlexp tasks; unset it to download).
"""

from __future__ import annotations

import logging
import os
import warnings
from pathlib import Path
from typing import Any

from rlexp.errors import ConfigError
from rlexp.integrity import artifact_problem

WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json", "adapter_model.safetensors")


def quiet_libraries() -> None:
    """Library progress bars and warnings would drown rlexp's own progress and errors."""
    import datasets
    import torch
    import transformers

    datasets.disable_progress_bars()
    transformers.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
    # transformers 5 renamed gradient checkpointing to activation checkpointing. TRL 1.12 (pinned) reads
    # the old names, and rlexp's reward trainer config keeps TRL's old field name (it is in record ids),
    # so every run would warn about code a user cannot change.
    warnings.filterwarnings("ignore", message=r"`(is_)?gradient_checkpointing\w*` is deprecated", category=FutureWarning)
    # accelerate logs at INFO, e.g. a note per PPO evaluation batch that TRL's dataset has no length.
    logging.getLogger("accelerate").setLevel(logging.WARNING)
    if not torch.cuda.is_available():
        # Told the accelerator, DeepSpeed does not warn in every process that it found no GPU.
        os.environ.setdefault("DS_ACCELERATOR", "cpu")


def drop_log_printer(trainer: Any) -> Any:
    """Stop a transformers Trainer from printing every log dict to stdout (its fallback when
    progress bars are off); rlexp records the same metrics in the run's record and W&B."""
    from transformers.trainer_callback import PrinterCallback

    trainer.remove_callback(PrinterCallback)
    return trainer


def check_model_dir(path: str | Path) -> Path:
    """A local model folder must hold a config and safetensors weights (pickle weights are refused)."""
    p = Path(path)
    if not p.is_dir():
        raise ConfigError(f"model folder {p} does not exist")
    if not (p / "config.json").is_file() and not (p / "adapter_config.json").is_file():
        raise ConfigError(f"model folder {p} has no config.json")
    if not any((p / f).is_file() for f in WEIGHT_FILES):
        pickles = [f.name for f in p.glob("*.bin")]
        hint = f" (found {pickles[0]}: only safetensors weights are loaded)" if pickles else ""
        raise ConfigError(f"model folder {p} has no safetensors weights{hint}")
    damaged = artifact_problem(p)  # weights cut short (a copy or a save interrupted): one line, not safetensors' error
    if damaged:
        raise ConfigError(f"model folder {p}: {damaged[0].name} is {damaged[1]}")
    return p


def is_local(ref: str) -> bool:
    """A reference that exists on disk, or looks like a path, is local; ``org/name`` is a hub id."""
    p = Path(ref).expanduser()
    return p.exists() or ref.startswith((".", "/", "~")) or ref.count("/") != 1


def _kwargs(trust_remote_code: bool, dtype: Any) -> dict[str, Any]:
    kw: dict[str, Any] = {"use_safetensors": True, "trust_remote_code": trust_remote_code}
    if dtype is not None:
        kw["dtype"] = dtype
    return kw


def _load(cls: Any, ref: str, what: str, **kw: Any) -> Any:
    quiet_libraries()
    if is_local(ref):
        check_model_dir(Path(ref).expanduser())
    try:
        return cls.from_pretrained(str(Path(ref).expanduser()) if is_local(ref) else ref, **kw)
    except OSError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ConfigError(f"cannot load {what} {ref!r}: {first}") from None
    except ValueError as exc:
        raise _remote_code_refused(exc, what, ref) from None


def _remote_code_refused(exc: ValueError, what: str, ref: str) -> Exception:
    """transformers refuses a model whose config names custom code with a multi-line ValueError; the
    refusal is right, the traceback is not."""
    if "trust_remote_code" not in str(exc):
        return exc
    return ConfigError(f"{what} {ref!r} needs custom code from its folder/repo (auto_map in config.json); "
                       "rlexp does not run it unless you pass <scorer|model>.trust_remote_code=true")


def load_tokenizer(ref: str, *, trust_remote_code: bool = False, padding_side: str | None = None,
                   literal: bool = False) -> Any:
    """The model's tokenizer; ``literal`` loads its ``tokenizer.json`` as written (see :func:`tokenizer_drift`)."""
    from transformers import AutoTokenizer, PreTrainedTokenizerFast

    kw: dict[str, Any] = {"trust_remote_code": trust_remote_code}
    if padding_side:
        kw["padding_side"] = padding_side
    if literal:
        if not (is_local(ref) and (Path(ref).expanduser() / "tokenizer.json").is_file()):
            raise ConfigError(f"scorer.tokenizer=file needs a local model folder with tokenizer.json; {ref!r} has none")
        kw.pop("trust_remote_code")
    loader = PreTrainedTokenizerFast if literal else AutoTokenizer
    try:
        tok = loader.from_pretrained(str(Path(ref).expanduser()) if is_local(ref) else ref, **kw)
    except OSError as exc:
        raise ConfigError(f"cannot load tokenizer {ref!r}: {str(exc).splitlines()[0]}") from None
    except ValueError as exc:
        raise _remote_code_refused(exc, "tokenizer", ref) from None
    if tok.pad_token is None:
        # As the RewardBench / PRB pipelines do: fall back to EOS for padding.
        tok.pad_token = tok.eos_token
    return tok


def load_causal_lm(ref: str, *, trust_remote_code: bool = False, dtype: Any = None) -> Any:
    """A causal LM from a local folder or hub id; a missing or unreadable model is one line."""
    from transformers import AutoModelForCausalLM

    return _load(AutoModelForCausalLM, ref, "causal LM", **_kwargs(trust_remote_code, dtype))


def load_reward_model(ref: str, *, trust_remote_code: bool = False, dtype: Any = None, init_head: bool = False) -> Any:
    """A 1-label sequence classifier. ``init_head`` starts a new score head on a causal LM checkpoint."""
    from transformers import AutoModelForSequenceClassification

    kw = _kwargs(trust_remote_code, dtype)
    if init_head:
        kw["num_labels"] = 1
    model = _load(AutoModelForSequenceClassification, ref, "reward model", **kw)
    if model.config.num_labels != 1:
        raise ConfigError(f"reward model {ref!r} has num_labels={model.config.num_labels}; a reward model needs 1")
    return model


def check_generation_length(ref: str, max_new_tokens: int, key: str, *, trust_remote_code: bool = False) -> None:
    """Refuse a generation length the model cannot hold, before any weights or caches are allocated.

    A static KV cache of ``max_new_tokens`` positions is allocated up front, so an absurd value
    (``1000000000``) would try to allocate terabytes; the model's context length is in its config.
    """
    from transformers import AutoConfig

    try:
        config = AutoConfig.from_pretrained(str(Path(ref).expanduser()) if is_local(ref) else ref,
                                            trust_remote_code=trust_remote_code)
    except OSError:
        return  # the model load that follows names what is wrong with the reference
    except ValueError as exc:
        raise _remote_code_refused(exc, "model", ref) from None
    context = getattr(config, "max_position_embeddings", None) or getattr(config, "n_positions", None)
    if context and max_new_tokens >= int(context):
        raise ConfigError(f"{key}={max_new_tokens} does not fit the context of {ref} ({int(context)} positions, "
                          "prompt included)")


#: Digits, spaces, punctuation, tabs, newlines and non-ASCII: where pre-tokenizers differ.
DRIFT_PROBE = "Probe 12345 + 678.9 = 'x'\n  indented\tTAB ünïcödé — 3,000,000 items; x2y3 (a/b) #7"


def tokenizer_drift(tokenizer: Any, ref: str) -> str | None:
    """Whether the loaded tokenizer encodes differently from the folder's own ``tokenizer.json``.

    transformers maps a folder to a tokenizer class by its config and may rebuild parts of the
    pipeline: a Qwen2-architecture folder loads as ``Qwen2Tokenizer``, which replaces the file's
    pre-tokenizer with Qwen2's digit split, so other libraries (or older transformers) see other
    token ids and scores move silently. Returns a one-line description of the difference, or None
    (no local tokenizer.json, or the same ids on :data:`DRIFT_PROBE`).
    """
    path = Path(ref).expanduser() / "tokenizer.json"
    if not (is_local(ref) and path.is_file()):
        return None
    from tokenizers import Tokenizer

    try:
        expected = Tokenizer.from_file(str(path)).encode(DRIFT_PROBE, add_special_tokens=False).ids
    except Exception:  # noqa: BLE001 - a file the tokenizers library cannot read: nothing to compare
        return None
    got = tokenizer(DRIFT_PROBE, add_special_tokens=False)["input_ids"]
    if list(got) == list(expected):
        return None
    return (f"tokenizer drift in {ref}: transformers loads it as {type(tokenizer).__name__}, whose token ids differ "
            f"from the folder's tokenizer.json on a probe text ({len(got)} vs {len(expected)} tokens); scores can "
            "differ from other libraries. scorer.tokenizer=file uses the file as written")


def pick_device(name: str) -> str:
    """``auto``: CUDA when available, else CPU; any other name as given."""
    import torch

    if name == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return str(name)
