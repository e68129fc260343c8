"""pip and the package index, as tfbuild runs them."""

from __future__ import annotations

from pathlib import Path

import pytest

from tfbuild import pip
from tfbuild.config.model import INHERIT_PIP
from tfbuild.errors import InstallError


def test_an_unexpected_pip_report_is_an_install_error(tmp_path: Path) -> None:
    """pip's --report is parsed as pip documents it; a pip that exits 0 with another answer
    (no wheel for the requirement, or not JSON) is an InstallError naming the requirement,
    not a traceback."""
    for answer in ('{"version": "1", "install": []}', "Looking in indexes: ..."):
        fake = tmp_path / "python"
        fake.write_text(f"#!/bin/sh\ncat <<'EOF'\n{answer}\nEOF\n")
        fake.chmod(0o755)
        with pytest.raises(InstallError, match="resolving nvidia-cuda-cuobjdump: pip's --report"):
            pip.resolve("nvidia-cuda-cuobjdump", INHERIT_PIP, fake)
