"""Safe model loading: safetensors only, no remote code unless asked, one-line errors.

A model reference is a local folder or a hub id. Hub ids only work where the hub is reachable
(``HF_HUB_OFFLINE=1`` is set by default inside rlexp tasks; unset it to download).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rlexp.errors import ConfigError

WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json", "adapter_model.safetensors")


def quiet_libraries() -> None:
    """Library progress bars and warnings would drown rlexp's own progress and errors."""
    import datasets
    import transformers

    datasets.disable_progress_bars()
    transformers.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()


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


def load_tokenizer(ref: str, *, trust_remote_code: bool = False, padding_side: str | None = None) -> Any:
    from transformers import AutoTokenizer

    kw: dict[str, Any] = {"trust_remote_code": trust_remote_code}
    if padding_side:
        kw["padding_side"] = padding_side
    try:
        tok = AutoTokenizer.from_pretrained(str(Path(ref).expanduser()) if is_local(ref) else ref, **kw)
    except OSError as exc:
        raise ConfigError(f"cannot load tokenizer {ref!r}: {str(exc).splitlines()[0]}") from None
    if tok.pad_token is None:
        # As the RewardBench / PRB pipelines do: fall back to EOS for padding.
        tok.pad_token = tok.eos_token
    return tok


def load_causal_lm(ref: str, *, trust_remote_code: bool = False, dtype: Any = None) -> Any:
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
