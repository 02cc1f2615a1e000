"""Datasets with one config per domain (PRB, LaMP-QA): reading the selected domains from the hub or from disk."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from rlexp.data.loaders.sources import Chunk, hub_configs, read_file, read_hub
from rlexp.data.loaders.validation import check_selection


def local_domain_chunks(by_domain: Mapping[str, Sequence[Path]], domains: Sequence[str] | None, what: str) -> list[Chunk]:
    """One chunk per file of the selected domains (default: all), each tagged with its domain.

    ``what`` names a domain in the error for an unknown selection (``LaMP-QA domain``).
    """
    chunks = []
    # Only the selected domains are read: a real domain file holds ~90 MB of profiles.
    selected = check_selection(domains, by_domain, what)
    for domain in by_domain if selected is None else selected:
        for f in by_domain[domain]:
            chunk = read_file(f)
            chunk.group = domain
            chunks.append(chunk)
    return chunks


def hub_domain_chunks(hub_id: str, split: str, domains: Sequence[str] | None, revision: str | None) -> list[Chunk]:
    """One chunk per hub config (= domain) of ``split`` (default: every config the dataset has)."""
    if domains is None:
        domains = hub_configs(hub_id, revision)
    elif isinstance(domains, str):
        domains = [domains]
    chunks = []
    for domain in domains:
        chunk = read_hub(hub_id, config=domain, split=split, revision=revision)
        chunk.group = domain
        chunks.append(chunk)
    return chunks
