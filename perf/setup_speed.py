"""`make setup` into two fresh virtual environments, one with uv (the default) and one with pip alone
(`INSTALLER=pip`), with empty download caches as on a fresh machine; prints both times and whether
the two environments hold the same package versions.

    python perf/setup_speed.py        # needs the package index; about 2.5 minutes on 2 cores

The Makefile's own recipe runs, so the figures are what `make study` / `make test` pay on a new clone.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _setup(venv: Path, installer: str) -> float:
    env = {**os.environ, "PIP_NO_CACHE_DIR": "1", "UV_NO_CACHE": "1"}
    t0 = time.perf_counter()
    subprocess.run(["make", "-s", "setup", f"VENV={venv}", f"INSTALLER={installer}"], cwd=ROOT, env=env, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def _versions(venv: Path) -> dict[str, str]:
    """name -> version of every installed distribution except the installers and rlexp itself."""
    out = subprocess.run([str(venv / "bin" / "python"), "-c",
                          "import importlib.metadata as m; print('\\n'.join(f'{d.metadata[\"Name\"]}=={d.version}' "
                          "for d in m.distributions()))"], capture_output=True, text=True, check=True).stdout
    pairs = (line.split("==", 1) for line in out.splitlines() if "==" in line)
    return {re.sub(r"[-_.]+", "-", n).lower(): v for n, v in pairs if n.lower() not in ("pip", "uv", "setuptools", "rlexp")}


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="rlexp-setup-") as tmp:
        times, versions = {}, {}
        for installer in ("uv", "pip"):
            venv = Path(tmp) / installer
            times[installer] = _setup(venv, installer)
            versions[installer] = _versions(venv)
            print(f"make setup INSTALLER={installer}: {times[installer]:6.1f} s, {len(versions[installer])} packages")
    differ = sorted(k for k in versions["uv"].keys() | versions["pip"].keys()
                    if versions["uv"].get(k) != versions["pip"].get(k))
    print(f"pip / uv: {times['pip'] / times['uv']:.2f}x; same package versions: {not differ}"
          + (f" (differ: {', '.join(differ[:8])})" if differ else ""))
    if differ:
        sys.exit(1)


if __name__ == "__main__":
    main()
