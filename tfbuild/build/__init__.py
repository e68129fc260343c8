"""Building source variants: the recipe of a TensorFlow era (recipe), its Jinja templates
rendered (render), and the build on the Docker engine into the wheel store (stage)."""
