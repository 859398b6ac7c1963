"""pytest set-up shared by tests/ and the notebooks that nbval runs.

Exercise checks (labkit/checks.py) only print "not yet" for a learner; under the
test suite a failing check must fail its notebook cell. The variable is set here, before any
kernel starts, so every notebook kernel that nbval launches inherits it.
"""

import os

os.environ["ATTENTION_LAB_STRICT_CHECKS"] = "1"
