"""The base image of build and runtime containers: pulled by digest from a registry and given
the packages tfbuild needs where a registry answers, made with debootstrap (scripts/
make-base-image, root) where none does. Either way the result is a Debian image with Python 3,
venv, pip and the CA certificates, under the tag the matrix names."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass

from tfbuild import engine
from tfbuild.errors import BuildFailed, ToolMissing
from tfbuild.resources import data_path

PACKAGES = ("python3", "python3-venv", "python3-pip", "ca-certificates")
"""What both ways add to the Debian they start from (make-base-image installs the same)."""
LABEL = "org.tfbuild.base.from"
TAIL = 25


@dataclass(frozen=True)
class Made:
    """One base image: its tag and how it came to be on the engine."""

    tag: str
    how: str
    """present, pulled or debootstrap."""
    detail: str
    """What it was made from (for debootstrap, the label make-base-image gives it: suite,
    mirror, packages) and its image id."""


def dockerfile(source: str) -> str:
    """The image made from a pulled one: its Debian plus tfbuild's packages."""
    return (
        f"FROM {source}\n"
        'SHELL ["/bin/bash", "-o", "pipefail", "-c"]\n'
        "ENV DEBIAN_FRONTEND=noninteractive LANG=C.UTF-8\n"
        "# Versions come from the pinned image's Debian suite (DL3008).\n"
        "# hadolint ignore=DL3008\n"
        "RUN apt-get update \\\n"
        f" && apt-get install -y --no-install-recommends {' '.join(PACKAGES)} \\\n"
        " && rm -rf /var/lib/apt/lists/*\n"
        'CMD ["/bin/bash"]\n'
    )


def make(
    tag: str, source: str | None, say: Callable[[str], None], debootstrap: bool = False
) -> Made:
    """`tag` on the engine: left as it is when there, else from `source` (a registry image
    pinned by digest) unless `debootstrap` is asked for, else with debootstrap. A registry
    that refuses the pull is an error (a wrong digest is not fixed by making something else);
    one that does not answer sends the work to debootstrap, saying so."""
    info = engine.image_info(tag)
    if info is not None:
        made_from = info["labels"].get(LABEL) or "made earlier"
        return Made(tag, "present", f"already on the engine ({made_from}; id {info['id'][:19]})")
    if source is None:
        why = "no registry image is set (defaults.base_images.from)"
    elif debootstrap:
        why = "--debootstrap"
    else:
        say(f"+ docker pull {source}")
        try:
            engine.pull(source)
        except engine.PullRefused as exc:
            raise BuildFailed(
                f"the registry refused {source}: {exc}; check the image and its digest "
                "(`docker buildx imagetools inspect IMAGE` prints it)"
            ) from exc
        except engine.RegistryUnreachable as exc:
            why = f"no registry answers for {source} ({exc})"
        else:
            return _from_registry(tag, source, say)
    return _debootstrap(tag, why, say)


def _from_registry(tag: str, source: str, say: Callable[[str], None]) -> Made:
    say(f"+ docker build -t {tag} (FROM {source}, apt-get install {' '.join(PACKAGES)})")
    lines: list[str] = []
    context = engine.Context()
    context.add_text("Dockerfile", dockerfile(source))
    try:
        image_id = engine.build_image(context, tag, lines.append, labels={LABEL: source})
    except BuildFailed as exc:
        tail = "\n".join(lines[-TAIL:])
        raise BuildFailed(f"{exc}\n--- last {TAIL} lines of the build ---\n{tail}") from exc
    return Made(tag, "pulled", f"{source} + {', '.join(PACKAGES)} (id {image_id[:19]})")


def _debootstrap(tag: str, why: str, say: Callable[[str], None]) -> Made:
    """make-base-image, as root (through `sudo -n` when tfbuild is not root)."""
    if shutil.which("debootstrap") is None:
        raise ToolMissing(
            f"cannot make {tag}: {why}, and debootstrap is not installed here "
            "(apt-get install debootstrap), which makes it without a registry"
        )
    command = ["bash", str(data_path("make-base-image")), tag]
    if os.geteuid() != 0:
        if shutil.which("sudo") is None:
            raise ToolMissing(f"making {tag} with debootstrap needs root: run as root or with sudo")
        command = ["sudo", "-n", "-E", *command]
    say(f"{why}: making {tag} with debootstrap\n+ {' '.join(command)}")
    # The script's traces ("+ debootstrap ...", "+ docker import ...") and its errors are
    # relayed line by line as they come, with the other traces: only the result line is the
    # command's output.
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace"
    ) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            say(line.rstrip("\n"))
    if proc.returncode != 0:
        raise BuildFailed(
            f"making the base image {tag} with debootstrap failed (exit {proc.returncode})"
        )
    info = engine.image_info(tag)
    if info is None:
        raise BuildFailed(f"make-base-image exited 0 but {tag} is not on the engine")
    made = info["labels"].get(LABEL, "").removeprefix("debootstrap ") or "minbase"
    return Made(tag, "debootstrap", f"{made} (id {info['id'][:19]})")
