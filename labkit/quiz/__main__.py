"""`python -m labkit.quiz {check FILE... | schema}`: the quiz authors' command (terminal.py)."""

import sys

from labkit.quiz.terminal import _main

sys.exit(_main(sys.argv[1:]))
