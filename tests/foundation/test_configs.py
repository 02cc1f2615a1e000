"""Every primary config composes with every experiment preset; typed keys fail at compose time."""

from __future__ import annotations

import pytest
from hydra import compose, initialize_config_dir
from hydra.errors import ConfigCompositionException
from omegaconf import OmegaConf

import rlexp.config  # noqa: F401  (registers the schemas)
from rlexp.config import CONF_DIR

PRIMARY = sorted(p.stem for p in CONF_DIR.glob("*.yaml") if p.stem != "base")
PRESETS = sorted(str(p.relative_to(CONF_DIR / "experiment").with_suffix("")) for p in (CONF_DIR / "experiment").rglob("*.yaml"))


def _import_tasks() -> None:
    import importlib

    for name in PRIMARY:
        importlib.import_module(f"rlexp.tasks.{name}")


@pytest.mark.parametrize("preset", PRESETS)
def test_every_primary_composes_with_every_preset(preset: str) -> None:
    _import_tasks()
    with initialize_config_dir(str(CONF_DIR), version_base="1.3"):
        for name in PRIMARY:
            cfg = compose(name, overrides=[f"experiment={preset}"])
            OmegaConf.resolve(cfg)
            assert cfg.task_name == name
            assert cfg.experiment_name != "default", f"{preset} must set experiment_name"


def test_presets_exist() -> None:
    assert {"quick", "sandbox_study"} <= set(PRESETS)


def test_misspelled_key_fails_at_compose_time() -> None:
    with initialize_config_dir(str(CONF_DIR), version_base="1.3"):
        with pytest.raises(ConfigCompositionException, match="sede"):
            compose("env", overrides=["sede=1"])
        with pytest.raises(ConfigCompositionException):
            compose("env", overrides=["runtime.threads=many"])


def test_paths_follow_rlexp_root(root) -> None:
    with initialize_config_dir(str(CONF_DIR), version_base="1.3"):
        cfg = compose("env")
    assert cfg.paths.store == f"{root}/runs"
    assert cfg.logger.kind == "wandb"


@pytest.mark.parametrize("group_file", sorted((CONF_DIR / "data").glob("*.yaml")), ids=lambda p: p.stem)
def test_data_group_sources_are_exactly_the_groups(group_file) -> None:
    # Regression: a default source in the schema used to be merged into every mix, so
    # data=personal trained on general + personal.
    from rlexp.runtime import compose_task

    own = OmegaConf.load(group_file)
    cfg = compose_task("train_rm", [f"data={group_file.stem}"])
    assert list(cfg.data.sources) == list(own.sources)
