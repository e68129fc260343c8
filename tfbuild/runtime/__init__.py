"""Runtimes, where a wheel is installed and the payload runs: the interface (base), a local venv
(venv), a container (container), and which one a variant gets (make)."""
