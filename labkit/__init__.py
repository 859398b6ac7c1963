"""labkit: the course kit of Attention Lab, everything the notebooks and experiments use beside the model.

The model is `minimind_ref`; this package never changes it, only draws, checks, quizzes, times and
trains around it. A notebook imports what it needs in one line:

    from labkit import check, show_heatmaps, show_quiz

Public names, and the file that defines each (open it to see how it works):

    show_heatmaps                      heatmaps.py      one attention map or a grid, token labels, one colour scale
    show_figures_inline                figures.py       figures below the cells, whatever MPLBACKEND says
    interact, show_in                  widgets.py       sliders and outputs that look the same in every front end
    check                              checks/          an exercise's verdict: right, or "not yet", why, the
                                                        likely mistake and the check's hint (its texts by key)
    predict                            predict.py       commit to an answer before a cell shows the result;
                                                        predict.reveal shows it (texts: predictions.py)
    show_map                           course_map.py    the course map: MiniMind's block and attention's steps
                                                        with every shape, "you are here" (show_map("05"))
    show_quiz                          quiz/widget.py   a module's quiz as a form in the notebook
    explore, top_keys                  explorer.py      the attention explorer (module 09)
    grade                              grader/          the capstone's grader: a ladder of stages, the
                                                        first mistake located and named (module 10)
    TensorMemory                       memory.py        peak bytes of the tensors a block of torch code creates
    BytesWritten, NaiveConcatCache     memory.py        the bytes a block of torch code writes; a torch.cat cache
    train, IGNORE_INDEX, fixed_threads training.py      the one seeded training loop behind every trained model
    load_tiny_model, held_out_loss,    tiny_model.py    the small trained MiniMind of module 09, its checkpoint
      greedy_samples
    random_minimind, random_attention, models.py        models and attention layers with every weight random;
      attention_scores                                  a layer's scores before the softmax
    EPS32, relative_error              numerics.py      float32 tolerances and error measures, defined once; the
                                                        comparison engine check() and the grader share
    time_call, best_time,              timing.py        the one timer shared by experiments, notebooks, benchmarks:
      best_step_times                                   one call, the best of N, each step's best over N runs
    Experiment, print_table,           experiment.py    what every experiment script shares: flags, claims, figures;
      int_in, float_in, fraction,                       the bounded flag types (a bad value exits 2, naming the flag)
      int_list

Submodules without a short name: syllabus (which modules the course plans, where the course is,
where each module's parts are; standard library only, so `python -m labkit.syllabus check exp 03`
explains a wrong module number before anything is installed), quiz (the quiz package: files,
grading, the terminal quiz; `python -m labkit.quiz check`), tiny_data and tiny_heads (the tiny
model's data and head scores), reproduction (is a retrained model the committed one), references
(the references of the notebooks' exercise checks, kept out of the learner's copies), predictions
(the predictions' texts, modules/NN_slug/predictions.json, loaded and checked), upstream
(upstream MiniMind's causal-mask paths before and after its fix, and its float16 padding path,
module 05), roofline (attention's FLOPs and memory traffic, and the chips' ridge points, module 08),
rope_paper (RoPE's complex-number form and RoFormer's long-range bound, module 06), arguments (the
one check of the numbers a learner passes to the kit's functions: whole, real, flag).

Apart from these, `labkit.course` holds the classroom and maintainer tools that act on the course's
files: the command line behind the make targets, the learner's workspace copies, slides, the headless notebook
runner and the portability check. They use the kit; the kit never imports them.

Importing `labkit` costs nothing: each name is imported the first time it is used, so the syllabus
and the terminal quiz run with the standard library alone, and a notebook pays only for what it uses.
"""

from __future__ import annotations

import importlib

# public name -> the submodule that defines it
_HOME = {
    "show_heatmaps": "heatmaps",
    "show_figures_inline": "figures",
    "interact": "widgets",
    "show_in": "widgets",
    "check": "checks",
    "predict": "predict",
    "show_map": "course_map",
    "show_quiz": "quiz.widget",
    "explore": "explorer",
    "top_keys": "explorer",
    "grade": "grader",
    "TensorMemory": "memory",
    "BytesWritten": "memory",
    "NaiveConcatCache": "memory",
    "train": "training",
    "IGNORE_INDEX": "training",
    "fixed_threads": "training",
    "load_tiny_model": "tiny_model",
    "held_out_loss": "tiny_model",
    "greedy_samples": "tiny_model",
    "random_minimind": "models",
    "random_attention": "models",
    "attention_scores": "models",
    "EPS32": "numerics",
    "relative_error": "numerics",
    "time_call": "timing",
    "best_time": "timing",
    "best_step_times": "timing",
    "Experiment": "experiment",
    "print_table": "experiment",
    "int_in": "experiment",
    "float_in": "experiment",
    "fraction": "experiment",
    "int_list": "experiment",
}

__all__ = sorted(_HOME)


def __getattr__(name: str):
    """Import a public name's submodule the first time the name is asked for (PEP 562)."""
    if name not in _HOME:
        raise AttributeError(f"module 'labkit' has no attribute {name!r}; its public names are: {', '.join(__all__)}")
    value = getattr(importlib.import_module(f".{_HOME[name]}", __name__), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_HOME))
