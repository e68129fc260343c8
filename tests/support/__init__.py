"""What tests share besides fixtures: paths, running tfbuild as a user does, Docker helpers,
synthetic and replayed sessions, toy wheels, golden files. Imported as `support.*` (pytest puts
tests/ on the path)."""
