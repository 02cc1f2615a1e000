"""Checks the config nodes run in ``__post_init__``: each raises a one-line ConfigError naming the key.

They run when a composed config is converted to its dataclasses (``OmegaConf.to_object``), which the
CLI does for every value of every sweep before the first job starts (``rlexp.cli.validate_overrides``)
and every task entry does before its run: a bad value fails in a second, before any model loads.
"""

from __future__ import annotations

import re

from rlexp.errors import ConfigError

#: The largest seed every library takes: numpy's legacy ``np.random.seed`` (transformers'
#: ``set_seed``) refuses anything outside ``[0, 2**32 - 1]``.
MAX_SEED = 2**32 - 1
#: A file name's limit on Linux/macOS filesystems (ext4, xfs, tmpfs, APFS), in bytes.
MAX_NAME_BYTES = 255
#: W&B's limit on a tag; ``experiment_name`` is one of every run's tags.
MAX_WANDB_TAG = 64

# torch's device types, checked without importing torch (an import of seconds for a typo).
_DEVICE = re.compile(r"^(auto|cpu|cuda|mps|xpu|meta|hpu|npu|xla|mtia)(?::(\d+))?$")


def check_seed(value: object, key: str) -> None:
    """A seed every library takes: an integer in ``[0, 2**32 - 1]``."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_SEED:
        raise ConfigError(f"{key}={value!r}: a seed must be an integer from 0 to {MAX_SEED}")


def check_at_least(value: object, minimum: int, key: str, *, optional: bool = False) -> None:
    """An integer ``>= minimum`` (or None when ``optional``: no limit)."""
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        none = " or null (no limit)" if optional else ""
        raise ConfigError(f"{key}={value!r} must be an integer >= {minimum}{none}")


def check_folder_name(value: object, key: str) -> None:
    """A value used as one folder name (Hydra's ``outputs/<task>/runs/<experiment_name>/``): non-empty,
    no ``/``, and at most 255 bytes, the filesystem's limit (a longer one fails as "File name too
    long" only once Hydra makes the folder)."""
    text = str(value)
    if not text.strip() or text in (".", "..") or "/" in text or "\0" in text:
        raise ConfigError(f"{key}={text!r} must be a folder name: not empty, no '/'")
    size = len(text.encode("utf-8", "surrogateescape"))
    if size > MAX_NAME_BYTES:
        raise ConfigError(f"{key} is {size} bytes long ({text[:24]}...); it names a folder, at most "
                          f"{MAX_NAME_BYTES} bytes")


def check_wandb_tag(value: object, key: str) -> None:
    """A W&B tag: 1 to 64 characters (W&B refuses the run otherwise)."""
    text = str(value)
    if not 1 <= len(text) <= MAX_WANDB_TAG:
        raise ConfigError(f"{key} ({text[:24]}...) is {len(text)} characters; with logger=wandb it is a W&B tag, "
                          f"1 to {MAX_WANDB_TAG} characters")


def check_device(value: object, key: str) -> None:
    """``auto``, ``cpu``, ``cuda`` / ``cuda:N`` with that GPU visible, or another torch device type
    (``mps``, ``xpu``, ...): a typo or a missing GPU fails here, not when a model is moved to it."""
    text = str(value)
    match = _DEVICE.match(text)
    if match is None or (match.group(1) == "auto" and match.group(2) is not None):
        raise ConfigError(f"{key}={text!r} is not a device: use auto, cpu, cuda or cuda:N")
    if match.group(1) != "cuda":
        return
    import torch  # only for a config that names a GPU

    count = torch.cuda.device_count()
    index = int(match.group(2) or 0)
    if count == 0:
        raise ConfigError(f"{key}={text}: no CUDA device is visible on this machine "
                          f"(CUDA_VISIBLE_DEVICES, driver); use {key}=cpu or {key}=auto")
    if index >= count:
        raise ConfigError(f"{key}={text}: only {count} CUDA device(s) are visible (cuda:0 to cuda:{count - 1})")
