"""The course's quizzes, in one import: the public names of quiz_model.py, quiz_format.py and
quiz_terminal.py, and the authors' command.

    quiz_model.py     the data model and grading: Quiz, Question, Feedback, Score, parse_response
    quiz_format.py    quiz files: load_quiz, parse_quiz, QuizError and the JSON Schema QUIZ_SCHEMA
    quiz_terminal.py  quiz_text, run_terminal_quiz (`make quiz M=NN`) and the command below

Each module has quizzes/NN_slug.json, data only (quizzes/README.md documents the format for
authors). The notebook widget (quiz_widget.py) and `make quiz M=NN` both load it and grade it with
these, so a question is marked, and its feedback worded, the same everywhere.

This file only gathers the three, so that `from labkit.quiz import ...` keeps
reaching every public name. None of the three imports it, which keeps the imports free of cycles:
quiz_format.py and quiz_terminal.py import quiz_model.py, and quiz_model.py imports neither.

Standard library only, so `make quiz` answers at once; the widget imports ipywidgets itself.

    python -m labkit.quiz check quizzes/*.json   validate quiz files (authors)
    python -m labkit.quiz schema                 print QUIZ_SCHEMA as JSON
"""

import sys

from labkit.quiz_format import (
    ID_PATTERN,
    MAX_CHOICES,
    QUESTION_KEYS,
    QUESTION_TYPES,
    QUIZ_SCHEMA,
    TOP_KEYS,
    QuizError,
    load_quiz,
    parse_quiz,
)
from labkit.quiz_model import (
    Feedback,
    Question,
    Quiz,
    Score,
    format_number,
    letter,
    parse_response,
)
from labkit.quiz_terminal import _main, quiz_text, run_terminal_quiz

__all__ = [
    "Feedback", "Question", "Quiz", "Score", "format_number", "letter", "parse_response",
    "ID_PATTERN", "MAX_CHOICES", "QUESTION_KEYS", "QUESTION_TYPES", "QUIZ_SCHEMA", "TOP_KEYS",
    "QuizError", "load_quiz", "parse_quiz", "quiz_text", "run_terminal_quiz",
]

if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
