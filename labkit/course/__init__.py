"""labkit.course: the classroom and maintainer tools, which act on the course's files.

    cli.py              the command line behind the make targets: python -m labkit.course
                        {list, exp NN, experiments, quiz NN, notebooks [NN], portability [NN], workspace [NN],
                         slides NN}
    student.py          the learner's copies in workspace/: solutions out, checks kept (make lab, make workspace)
    slides.py           a notebook as an offline reveal.js deck (make slides M=NN)
    notebook_runner.py  execute_notebook: headless runs with a time limit per cell, no hang on widgets
    portability.py      run notebooks as other machines would (make portability), LastBitNoise
    machines.py         the other machines it stands in for: their environment variables

Which modules exist and where their parts are is the kit's `labkit/syllabus.py`, which these
tools import; no file of the kit imports this package (tests/kit/test_packaging.py holds that).
This package's __init__ imports nothing.
"""
