"""tfbuild: which TensorFlow build, with which runtime settings, is fastest on this hardware."""

__version__ = "0.1.0"
