"""The nightly wheel CI: the GitHub Actions workflow, the reference results it keeps, and the
PEP 503 index over the wheel store."""
