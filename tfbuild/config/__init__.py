"""The matrix: matrix.yaml read once into frozen objects (model), validated with file:line
errors (load, sections, variants, yamlread, values), and the facts it is checked against: the
benchmark suite (suite) and TensorFlow releases (tensorflow)."""
