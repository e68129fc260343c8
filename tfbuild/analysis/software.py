"""What a session measured besides TensorFlow: the Keras and numpy each variant ran with (as its
smoke test found them). Builds that differ in either measure different work, not only another
TensorFlow: the report says so."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping

from tfbuild.results.model import VariantRecord

AFFECTS = {
    "keras": "gru-keras runs Keras's own GRU layer and optimizer step",
    "numpy": "matmul-fed and input-fed hand numpy arrays to TensorFlow every step",
}


def _version(smoke: Mapping[str, object], package: str) -> str:
    version = smoke.get(package)
    if not version:
        return "none found"
    name = smoke.get(f"{package}_distribution")
    return f"{name} {version}" if name and name != package else str(version)


def software_differences(variants: Mapping[str, VariantRecord]) -> list[str]:
    """One line per package whose version differs between the variants measured: each version
    with its variants, and which benchmarks it changes."""
    ready = {
        name: v.smoke
        for name, v in sorted(variants.items())
        if v.status == "ready" and isinstance(v.smoke, Mapping)
    }
    lines = []
    for package, affects in AFFECTS.items():
        seen: dict[str, list[str]] = defaultdict(list)
        for name, smoke in ready.items():
            seen[_version(smoke, package)].append(name)
        if len(seen) > 1:
            each = "; ".join(f"{version} ({', '.join(names)})" for version, names in seen.items())
            lines.append(
                f"the builds ran different {package}: {each}; {affects}, so the difference is "
                "part of what is measured"
            )
    return lines
