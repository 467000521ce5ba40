"""neural."""
