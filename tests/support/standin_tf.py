"""A stand-in TensorFlow: a pure-Python `tensorflow` package, made of numpy, holding what
tfbuild's payload and zygote call for the smoke test and the matmul-pinned and input-pinned
benchmarks. Tests of the bench engine's mechanics (kill and resume, a remote engine, one
variant's failed import beside another) install it as a variant's wheel: a process imports it
with numpy in about 0.1 s where TensorFlow takes 2.4 CPU-seconds, and a runtime installs numpy
beside it, not 600 MB.

It is held to the real thing by tests/integration/test_standin_tf.py, which runs the payload
on both for the same benchmarks and compares what each recorded, key for key. What it cannot
stand in for (graphs, threads, oneDNN, Keras) the tests that need it run on real TensorFlow."""

from __future__ import annotations

from pathlib import Path

from support.cext import written_wheel

VERSION = "2.21.0+standin"
"""What the smoke test reports as the TensorFlow version."""

MODULE = '''\
"""A stand-in for TensorFlow, made of numpy (tfbuild's tests: tests/support/standin_tf.py)."""

import numpy as _np

__version__ = {version!r}
int32 = _np.int32
float32 = _np.float32


class Tensor(_np.ndarray):
    def numpy(self):
        return _np.asarray(self)


def _tensor(value, dtype=None):
    return _np.asarray(value, dtype=dtype).view(Tensor)


def _array(value):
    return value.value if isinstance(value, Variable) else _np.asarray(value)


class Variable:
    def __init__(self, value):
        self.value = _np.array(value)

    def assign(self, value):
        self.value[...] = _array(value)

    def __getitem__(self, index):
        return _tensor(self.value[index])

    def __array__(self, dtype=None, copy=None):
        return self.value if dtype is None else self.value.astype(dtype)


def constant(value, dtype=None):
    return _tensor(value, dtype)


def ones(shape, dtype=_np.float32):
    return _tensor(_np.ones(shape, dtype))


def matmul(a, b):
    return _tensor(_array(a) @ _array(b))


def square(x):
    return _tensor(_np.square(_array(x)))


def reduce_sum(x):
    return _tensor(_np.sum(_array(x)))


def slice(x, begin, size):
    index = tuple(
        _np.s_[int(b) :] if int(s) == -1 else _np.s_[int(b) : int(b) + int(s)]
        for b, s in zip(begin, size)
    )
    return _tensor(_array(x)[index])


def function(func=None, **options):
    if func is None:
        return lambda f: f
    return func


class _Namespace:
    def __init__(self, **members):
        self.__dict__.update(members)


_THREADS = {{"intra": 0, "inter": 0}}


def _setter(kind):
    def set_threads(n):
        _THREADS[kind] = int(n)

    return set_threads


version = _Namespace(GIT_VERSION="standin")
sysconfig = _Namespace(get_build_info=lambda: {{"is_cuda_build": False, "standin": True}})
test = _Namespace(is_built_with_cuda=lambda: False)
random = _Namespace(set_seed=lambda seed: None)
config = _Namespace(
    list_physical_devices=lambda kind=None: [],
    threading=_Namespace(
        set_intra_op_parallelism_threads=_setter("intra"),
        set_inter_op_parallelism_threads=_setter("inter"),
        get_intra_op_parallelism_threads=lambda: _THREADS["intra"],
        get_inter_op_parallelism_threads=lambda: _THREADS["inter"],
    ),
)
'''


def standin_wheel(folder: Path) -> Path:
    """The stand-in as a wheel, `tensorflow` VERSION, requiring numpy."""
    files = {"tensorflow/__init__.py": MODULE.format(version=VERSION)}
    return written_wheel(folder, "tensorflow", VERSION, "py3-none-any", files,
                         "Requires-Dist: numpy\n")  # fmt: skip
