"""python -m labkit.course: the command line behind the make targets (see cli.py)."""

import sys

from labkit.course.cli import main

sys.exit(main())
