"""pytest set-up shared by tests/ and the notebooks that nbval runs.

Exercise checks (labkit/checks.py) only print "not yet" for a learner; under the
test suite a failing check must fail its notebook cell. The variable is set here, before any
kernel starts, so every notebook kernel that nbval launches inherits it.
"""

import os

os.environ["ATTENTION_LAB_STRICT_CHECKS"] = "1"

# The Chinese notebooks (notebooks/zh-CN/) are built from the English ones with the same code cells and
# stored outputs, byte for byte (tests/course/test_translation.py holds that), so nbval would only run
# the same code again; their kernels would also speak Chinese where the stored outputs are English.
collect_ignore_glob = ["notebooks/zh-CN/*"]
