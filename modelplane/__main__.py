"""`python -m modelplane` runs the command-line interface."""

from modelplane.cli import run

run()
