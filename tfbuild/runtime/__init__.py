"""Runtimes, where a wheel is installed and the payload runs: the interface (base), a local venv
(venv), a container (container), which one a variant gets (make), and the records at their edges
(records: what a benchmark process is told, what results record of a runtime)."""
