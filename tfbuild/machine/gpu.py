"""Which CUDA code runs on which GPU."""

from __future__ import annotations


def runs_on(capability: str, device: str) -> bool:
    """sm_XY runs on GPUs of major X with minor >= Y; compute_XY (PTX) on any GPU >= X.Y."""
    kind, _, number = capability.partition("_")
    arch_specific = number.endswith(("a", "f"))
    digits = number.rstrip("af")
    major, minor = int(digits[:-1]), int(digits[-1])
    dev_major, _, dev_minor_text = device.partition(".")
    dev = (int(dev_major), int(dev_minor_text or 0))
    if arch_specific:
        return dev == (major, minor)
    if kind == "compute":
        return dev >= (major, minor)
    return dev[0] == major and dev[1] >= minor
