"""`python -m modelplane` runs the command-line interface."""

import sys

from modelplane.cli import main

sys.exit(main())
