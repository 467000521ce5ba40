"""chaining."""
