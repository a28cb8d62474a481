"""Loading a build folder onto a card through ttnn (runtime)."""
