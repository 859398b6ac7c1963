"""The course's quizzes, in one import: the public names of this package, and the authors' command.

    model.py       the data model and grading: Quiz, Question, Feedback, Tries (hint after a first
                   wrong try, answer after a second), Score, parse_response, ROUTES (the express
                   route's quiz leaves out the questions marked deep_dive: Quiz.on_route)
    format.py      quiz files: load_quiz, parse_quiz, QuizError and the JSON Schema QUIZ_SCHEMA
    terminal.py    quiz_text, run_terminal_quiz (`make quiz M=NN [ROUTE=express]`) and the command below
    markdown.py    the quizzes' Markdown in a terminal: ANSI styles where shown, else plain text
    plain_math.py  formulas as Unicode, for the terminal
    widget.py      show_quiz: the quiz as a form in the notebook (imports ipywidgets itself)
    checks.py      run_check: runs a question's "check" (for the tests; imports torch itself)

Each module has quizzes/NN_slug.json, data only (quizzes/README.md documents the format for
authors). The notebook widget and `make quiz M=NN` both load it and grade it with these, so a
question is marked, and its feedback worded, the same everywhere.

None of the files imports this one, which keeps the imports free of cycles: format.py and
terminal.py import model.py, and model.py imports neither; markdown.py imports plain_math.py only.
Standard library only (the widget and the checks aside), so `make quiz` answers at once; loading a
quiz never runs its checks.

    python -m labkit.quiz check quizzes/*.json   validate quiz files (authors)
    python -m labkit.quiz schema                 print QUIZ_SCHEMA as JSON
"""

from labkit.quiz.format import (
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
from labkit.quiz.model import (
    ROUTES,
    Feedback,
    Question,
    Quiz,
    Score,
    Tries,
    format_number,
    letter,
    parse_response,
)
from labkit.quiz.terminal import quiz_text, run_terminal_quiz

__all__ = [
    "ROUTES", "Feedback", "Question", "Quiz", "Score", "Tries", "format_number", "letter", "parse_response",
    "ID_PATTERN", "MAX_CHOICES", "QUESTION_KEYS", "QUESTION_TYPES", "QUIZ_SCHEMA", "TOP_KEYS",
    "QuizError", "load_quiz", "parse_quiz", "quiz_text", "run_terminal_quiz",
]

