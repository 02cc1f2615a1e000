"""Non-Hydra commands of the `rlexp` CLI."""
