"""What the answer book and the slides show: the stored outputs of every notebook, both editions,
read as a front end displays them (tests/rendered.py). A live run's outputs are read the same way
by the learner-copy run (tests/kit/test_student_copies.py); strict nbval compares text only and
skips pictures, so neither would notice a figure that arrives as text without these."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from rendered import seen_problems

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb")) + sorted((ROOT / "notebooks" / "zh-CN").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.relative_to(ROOT / "notebooks").as_posix())
def test_stored_outputs_show_pictures_the_map_first_and_no_dumps(path):
    problems = seen_problems(nbformat.read(path, as_version=4), path.relative_to(ROOT).as_posix())
    assert not problems, "\n".join(problems)


def test_the_reader_sees_each_kind_of_problem():
    """Each rule can fail: a figure as text, a map that is not two pictures or not first, a module's
    repr, a tensor wall, a wall of numbers."""
    def notebook(*cells):
        nb = nbformat.v4.new_notebook()
        for source, outputs in cells:
            cell = nbformat.v4.new_code_cell(source)
            cell.outputs = [nbformat.v4.new_output(**output) for output in outputs]
            nb.cells.append(cell)
        return nb

    picture = {"output_type": "display_data",
               "data": {"image/png": "iVBOR", "text/plain": "<Figure size 9x9 with 1 Axes>"}}
    text_only = {"output_type": "display_data", "data": {"text/plain": "<Figure size 1220x560 with 1 Axes>"}}
    fine = notebook(("show_map('05')", [picture, picture]), ("plot()", [picture]))
    assert seen_problems(fine, "nb") == []
    assert seen_problems(notebook(("show_map('05')", [text_only, text_only])), "nb") == [
        "nb, cell 0: a figure shows as the text '<Figure size 1220x560 with 1 Axes>', not as a picture"] * 2 + [
        "nb, cell 0: the map should arrive as two pictures; it shows 0"]
    assert seen_problems(notebook(("plot()", [picture]), ("show_map('05')", [picture, picture])), "nb") == [
        "nb, cell 0: draws before the map (cell 1), which comes first"]
    model = "MiniMindForCausalLM(\n  (model): MiniMindModel(\n    (embed_tokens): Embedding(6400, 512)\n"
    assert "repr of a torch module" in seen_problems(
        notebook(("print(model)", [{"output_type": "stream", "name": "stdout", "text": model}])), "nb")[0]
    wall = "tensor([" + ",\n".join("[0.1, 0.2]" for _ in range(20)) + "])"
    assert "tensor over more than" in seen_problems(
        notebook(("x", [{"output_type": "execute_result", "data": {"text/plain": wall}, "execution_count": 1}])),
        "nb")[0]
    numbers = " ".join(str(i) for i in range(200))
    assert "prints 200 numbers" in seen_problems(
        notebook(("x", [{"output_type": "stream", "name": "stdout", "text": numbers}])), "nb")[0]
