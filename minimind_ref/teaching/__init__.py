"""minimind_ref.teaching: the course's helpers, kept apart from the model.

The model code never imports this package; this package may import the model. Its own imports at
import time are the standard library only (the parent package brings torch), so the command line
answers at once and runs where only the pinned environment is installed: anything heavy
(matplotlib, ipywidgets, nbclient) is imported by the module or function that needs it.

    catalog.py        which modules the course plans and which of their parts exist on disk
    __main__.py       the command line behind the make targets:
                      python -m minimind_ref.teaching {list, exp NN, experiments, quiz NN, notebooks [NN],
                      portability [NN], student, slides NN}
    experiment.py     what every experiment script shares: flags, seeding, claims, saved figures
    heatmaps.py       show_heatmaps: one attention map or a grid, token labels, one colour scale
    figures.py        show_figures_inline: figures below the cells, whatever MPLBACKEND says
    interact.py       interact and show_in: widgets whose output is the same in every front end
    memory.py         TensorMemory: peak bytes of the tensors a block of torch code creates (module 08)
    checks.py         check(...): an exercise's verdict, right or "not yet" and why
    quiz.py           the quizzes' public names in one import; `python -m` it to check quiz files
    quiz_model.py     a quiz's data model, grading and typed answers, shared by every front end
    quiz_format.py    quiz files: loading, validation and the JSON Schema
    quiz_terminal.py  quiz_text and the terminal quiz behind `make quiz M=NN`
    quiz_widget.py    show_quiz: the same quiz as an ipywidgets form in a notebook
    training.py       train(): the one seeded training loop behind every model the course trains
    models.py         random_minimind: a MiniMind with every weight random, for tests and experiments
    student.py        student copies of the notebooks: solutions out, checks kept (make student)
    slides.py         a notebook as an offline reveal.js deck (make slides M=NN)
    tiny_data.py      the tiny model's byte tokenizer and data: repeated spans and stdlib source text
    tiny_model.py     the small trained MiniMind: recipe, training, safetensors checkpoint (make train-tiny)
    tiny_heads.py     head scores (previous-token, induction, first-token) and head ablation
    explorer.py       an ipywidgets attention explorer on show_heatmaps (module 09)
    reproduction.py   is a retrained model the committed one: machine fingerprints, bit for bit or within bounds
    notebook_runner.py  execute_notebook: headless runs with a time limit per cell, no hang on widgets
    portability.py    run notebooks as other machines would (make portability), LastBitNoise
"""

from .catalog import PLANNED_MODULES, CourseError, Module, all_modules, find_course_root, get_module

__all__ = ["PLANNED_MODULES", "CourseError", "Module", "all_modules", "find_course_root", "get_module"]
