"""What `tfbuild run` says of the source builds it leaves out: the command that builds them, each
estimate said once for every build it is the estimate of, and the total. (The builds themselves
run on a real engine: tests/integration/test_build.py.)"""

from __future__ import annotations

from tfbuild.build.estimate import BuildEstimate
from tfbuild.build.stage import left_out


def _model(variant: str, hours: float) -> BuildEstimate:
    return BuildEstimate(variant, hours * 3600, "model", 2, 6.2, 24.0)


def test_an_estimate_shared_by_builds_is_said_once() -> None:
    """Five builds of one recipe on one machine share the model's estimate: it is said once,
    naming them all, with the total after; a build estimated from its previous build is said on
    its own."""
    found = {n: _model(n, 18) for n in ("mkl", "avx2-fma", "floor", "floor-mkl")}
    found["tuned"] = BuildEstimate("tuned", 9 * 3600, "previous build", 2, 6.2, 24.0)
    said = left_out(found)
    assert said.startswith(
        "Left out the source builds mkl, avx2-fma, floor, floor-mkl, tuned: they are not in the "
        "store, and a run builds only when asked (--build). To build: `tfbuild build --variant "
        "mkl --variant avx2-fma --variant floor --variant floor-mkl --variant tuned`, then run "
        "again. "
    )
    shared = _model("mkl", 18).describe()
    assert said.count(shared) == 1 and f"mkl, avx2-fma, floor, floor-mkl: each {shared}." in said
    assert f"tuned: {found['tuned'].describe()}." in said
    assert said.endswith(" In all about 81 h, one after another.")
    assert said.count("GiB here") == 2


def test_one_build_left_out() -> None:
    said = left_out({"mkl": _model("mkl", 18)})
    assert said == (
        "Left out the source build mkl: it is not in the store, and a run builds only when asked "
        "(--build). To build: `tfbuild build --variant mkl`, then run again. mkl: "
        f"{_model('mkl', 18).describe()}."
    )
    assert "about 18 h" in said and "each" not in said and "In all" not in said


def test_a_total_of_cuda_builds_is_a_floor() -> None:
    """A CUDA build's estimate is a floor ("or more"): so is a total with one in it."""
    cuda = BuildEstimate("gpu", 18 * 3600, "model", 2, 6.2, 24.0, cuda=True)
    said = left_out({"gpu": cuda, "mkl": _model("mkl", 18)})
    assert "gpu: about 18 h or more (CUDA)" in said
    assert said.endswith(" In all about 36 h or more (CUDA), one after another.")
