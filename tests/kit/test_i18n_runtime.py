"""labkit speaks the learner's language at run time (issue 28, CONTRIBUTING.md "The Chinese edition"):
check(), the quiz (widget, terminal, and its one answer key), predict, the course map and the explorer
say in Chinese what they say in English, and say no more of the answer in either. The language is
chosen as labkit.i18n documents it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import ipywidgets as widgets
import matplotlib

matplotlib.use("Agg")  # headless, whatever the environment says

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

import labkit.figures as figures  # noqa: E402
import labkit.i18n as i18n  # noqa: E402
import labkit.i18n.fonts as fonts  # noqa: E402
from labkit.checks import STRICT_ENV, check  # noqa: E402
from labkit.course_map import map_figures  # noqa: E402
from labkit.i18n import ENV, LANGUAGES, language, speaking, use_language  # noqa: E402
from labkit.i18n.catalog import key_of  # noqa: E402
from labkit.predict import predict  # noqa: E402
from labkit.quiz import Tries, parse_quiz, parse_response, run_terminal_quiz  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
CHINESE = re.compile(r"[\u4e00-\u9fff]")


@pytest.fixture(autouse=True)
def english_by_default(monkeypatch):
    """Each test decides its language: no ATTENTION_LAB_LANG from outside, none chosen in-process."""
    monkeypatch.delenv(ENV, raising=False)
    monkeypatch.delenv(STRICT_ENV, raising=False)  # a failing check prints its line and returns
    use_language(None)
    yield
    use_language(None)
    plt.close("all")


def with_translations(monkeypatch, extra: dict[str, str]) -> None:
    """The course's catalogs, plus translations of a few English texts a test makes up (as a
    notebook's or a quiz's catalog would hold them)."""
    table = {**i18n._translations(), **{key_of(en): zh for en, zh in extra.items()}}
    monkeypatch.setattr(i18n, "_translations", lambda: table)


# --------------------------------------------------------------------------- choosing the language


def test_use_language_beats_the_environment_which_beats_the_folder(monkeypatch, tmp_path):
    folder = tmp_path / "workspace" / "zh-CN"
    folder.mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    assert language() == "en"
    monkeypatch.chdir(folder)
    assert language() == "zh-CN", "a kernel running in a zh-CN folder speaks Chinese"
    monkeypatch.setenv(ENV, "en")
    assert language() == "en", "ATTENTION_LAB_LANG comes before the folder"
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(ENV, "zh-CN")
    assert language() == "zh-CN"
    use_language("en")
    assert language() == "en", "use_language (the command lines' --lang) comes first"
    with speaking("zh-CN"):
        assert language() == "zh-CN"
    assert language() == "en"


def test_a_bad_language_in_the_environment_names_the_valid_ones(monkeypatch):
    monkeypatch.setenv(ENV, "fr")
    with pytest.raises(ValueError) as error:
        language()
    assert ENV in str(error.value) and "'fr'" in str(error.value)
    assert all(lang in str(error.value) for lang in LANGUAGES)
    with pytest.raises(ValueError, match="zh-CN"):
        use_language("zh")


# ------------------------------------------------------------------------------------------ check()


def chinese_check(*args, **kwargs):
    with speaking("zh-CN"):
        return check(*args, **kwargs)


def test_check_says_right_and_not_yet_in_chinese(capsys):
    assert chinese_check("softmax", 1.0, 1.0).message == "✓ softmax：正确。"
    wrong = chinese_check("scale", 0.41, 0.125)
    assert not wrong and wrong.message.startswith("✗ scale：还不对——")
    assert capsys.readouterr().out.splitlines() == ["✓ softmax：正确。", wrong.message]


@pytest.mark.parametrize("got, expected, secret", [
    (7, 12, "12"),                                          # a number
    (True, False, "False"),                                 # a bool
    (torch.tensor(0.5), torch.tensor(0.875), "0.875"),      # a 0-d tensor is a value answer too
    ("causal", "bidirectional", "bidirectional"),           # a string
])
def test_a_wrong_value_is_said_in_chinese_without_the_expected_value(got, expected, secret):
    result = chinese_check("07/longest_context", got, expected)  # a course check: its hint from its catalog
    assert CHINESE.search(result.message) and "不对" in result.message
    assert secret not in result.message, result.message
    for english in ("not yet", "not right", "expected", "Hint"):
        assert english not in result.message, result.message


def test_a_wrong_tensor_is_said_in_chinese_by_kind_never_by_value():
    expected = torch.arange(12.0).reshape(3, 4) / 7
    shape = chinese_check("weights", torch.zeros(4, 3), expected).message
    assert "形状是 [4, 3]，应为 [3, 4]" in shape and "转置" in shape
    values = expected.clone()
    values[1, 2] += 1
    said = chinese_check("weights", values, expected).message
    assert "12 个值中有 1 个超出容差" in said and "[1, 2]" in said
    assert f"{expected[1, 2].item():.4g}" not in said, "the expected entry is never said"
    kind = chinese_check("mask", torch.ones(3, dtype=torch.long), torch.ones(3, dtype=torch.bool)).message
    assert "整型" in kind and "布尔型" in kind
    nan = chinese_check("softmax", torch.tensor([float("nan"), 0.5]), torch.tensor([0.5, 0.5])).message
    assert "NaN" in nan and "softmax" in nan and "结果是" not in nan, "where, not a verdict on a value"


def test_check_says_where_an_item_is_and_what_a_function_raised_in_chinese():
    assert "第 [1][0] 项" in chinese_check("pairs", [[1], [2]], [[1], [3]]).message
    assert "缺少键 ['v']" in chinese_check("cache", {"k": 1}, {"k": 1, "v": 2}).message

    def broken(x):
        raise KeyError("oops")

    raised = chinese_check("f", broken, lambda x: x, cases=[(torch.ones(2),)]).message
    assert "第 1 个用例（共 1 个），输入 float32 [2]：你的代码抛出了 KeyError" in raised

    def not_written(x):
        raise NotImplementedError

    todo = chinese_check("05/prefix_lm_mask", not_written, lambda x: x, cases=[1]).message
    assert "NotImplementedError" in todo and "提示" not in todo, "no hint for an exercise not begun"


def test_a_checks_texts_are_translated_from_their_catalog_when_shown(monkeypatch, tmp_path):
    """The texts a check reads by key (modules/NN_slug/checks.json) are shown in Chinese from their
    catalog; a text with no translation is shown as written; English is untouched."""
    import json

    from labkit.syllabus import ROOT_ENV

    hint, explain, named = "Count the keys each query may see.", "Each row is a distribution.", "Rows are queries."
    folder = tmp_path / "modules" / "05_masking"
    folder.mkdir(parents=True)
    (folder / "checks.json").write_text(json.dumps({
        "n": {"name": "the count", "explain": explain, "hint": hint, "mistakes": {"complement": named}},
        "m": {"hint": "A hint nobody translated."}}))
    monkeypatch.setenv(ROOT_ENV, str(tmp_path))
    with_translations(monkeypatch, {hint: "数一数每个查询能看到几个键。", explain: "每一行都是一个分布。",
                                    "the count": "计数", named: "行是查询。"})
    assert chinese_check("05/n", 7, 8).message == "✗ 计数：还不对——结果是 7，不对。提示：数一数每个查询能看到几个键。"
    assert chinese_check("05/n", 8, 8).message == "✓ 计数：正确。每一行都是一个分布。"
    mask = torch.ones(3, 3, dtype=torch.bool).tril()
    assert chinese_check("05/n", ~mask, mask).message.endswith("。提示：行是查询。")
    assert chinese_check("05/m", torch.zeros(3, 3), torch.eye(3) + 1).message.endswith(
        "。很可能的错误：结果全为 0，而正确结果并非如此。提示：A hint nobody translated.")
    assert check("05/n", 7, 8).message == f"✗ the count: not yet — it is 7: not right. Hint: {hint}"


def test_the_courses_check_texts_speak_chinese():
    """A course check's hint comes, in Chinese, from translations/zh-CN/checks/NN_slug.md."""
    from labkit.checks.texts import texts_for
    from labkit.i18n.catalog import read_catalog

    english = texts_for("05/prefix_lm_mask").hint_for("complement")
    catalog = Path(__file__).resolve().parents[2] / "translations" / "zh-CN" / "checks" / "05_masking.md"
    chinese = read_catalog(catalog).translations()[key_of(english)]
    mask = torch.ones(4, 4, dtype=torch.bool).tril()
    said = chinese_check("05/prefix_lm_mask", lambda n, p: ~mask, lambda n, p: mask, cases=[(4, 2)]).message
    assert said.startswith("✗ prefix_lm_mask：还不对——第 1 个用例（共 1 个），输入（4, 2）：")
    assert said.endswith(f"。提示：{chinese}") and CHINESE.search(chinese)


# ------------------------------------------------------------------------------------------- quiz

QUIZ = {
    "module": "01_attention_basics",
    "title": "Attention basics",
    "questions": [
        {"id": "scale", "type": "single", "question": "Why divide the scores by sqrt(d)?",
         "choices": ["To save memory", "To keep the softmax from saturating"], "answer": 1,
         "explanation": "Dot products grow like sqrt(d).", "hint": "Think about the variance."},
        {"id": "rows", "type": "multiple", "question": "Which hold for every row of weights?",
         "choices": ["It sums to 1", "It can be negative", "Every weight is >= 0"], "answer": [0, 2],
         "explanation": "Softmax gives positive numbers that sum to 1."},
        {"id": "count", "type": "numeric", "question": "How many weights do Q, K and V hold?",
         "answer": 786432, "tolerance": 0, "unit": "parameters", "explanation": "3 x 262,144."},
    ],
}
QUIZ_ZH = {
    "Attention basics": "注意力基础",
    "Why divide the scores by sqrt(d)?": "为什么要把分数除以 sqrt(d)？",
    "To keep the softmax from saturating": "让 softmax 不至于饱和",
    "Think about the variance.": "想想方差。",
    "Dot products grow like sqrt(d).": "点积随 sqrt(d) 增长。",
    "parameters": "个参数",
}
TRIES = {"scale": [[0, 0], [0, 1], [1]], "rows": [[[0]], [[1, 2], [0, 2]], [[0, 2]]],
         "count": [[1], [1, 786432], [786432, 1]]}


def test_the_quiz_rule_and_the_answer_key_are_the_same_in_both_languages(monkeypatch):
    """Hint after a first wrong try, answer after a second or a right one, first tries scored: the
    same verdicts in Chinese, from the one answer key; only the words change."""
    with_translations(monkeypatch, QUIZ_ZH)
    quiz = parse_quiz(QUIZ)
    for question in quiz.questions:
        for responses in TRIES[question.id]:
            said = {}
            for lang in LANGUAGES:
                with speaking(lang):
                    tries = Tries(question)
                    said[lang] = [tries.submit(r) for r in responses]
                    said[lang].append((tries.first_right, tries.count, tries.revealed))
            en, zh = said["en"], said["zh-CN"]
            assert [(f.correct, f.revealed) for f in en[:-1]] == [(f.correct, f.revealed) for f in zh[:-1]]
            assert en[-1] == zh[-1]
            for feedback in zh[:-1]:
                assert CHINESE.search(feedback.message), feedback.message
                assert ("答案是" in feedback.message) == feedback.revealed, "the answer only when revealed"
                if question.hint and not feedback.revealed:
                    assert "提示：想想方差。" in feedback.message
    with speaking("zh-CN"):
        scale = quiz.questions[0]
        assert scale.grade(1).message == "正确！答案是 B：让 softmax 不至于饱和\n点积随 sqrt(d) 增长。"
        assert parse_response(quiz.questions[2], "786,432 个参数") == 786432, "the unit as shown is accepted"
        with pytest.raises(ValueError, match="没有选项 C"):
            parse_response(scale, "c")
    assert scale.grade(1).message.startswith("Right! The answer is B: To keep the softmax from saturating\n")


def test_the_terminal_quiz_shows_the_quiz_through_its_catalog(monkeypatch):
    with_translations(monkeypatch, QUIZ_ZH)
    lines: list[str] = []
    answers = ["a", "b"]

    def answer(prompt: str) -> str:
        if not answers:
            raise EOFError  # Ctrl-D: stop with the score so far
        return answers.pop(0)

    with speaking("zh-CN"):
        score = run_terminal_quiz(parse_quiz(QUIZ), input_fn=answer,
                                  print_fn=lambda *a: lines.append(" ".join(map(str, a))), width=100)
    assert lines[0] == "注意力基础" and lines[1] == "=" * 10, "a Chinese title is underlined by columns"
    assert "第 1 题（共 3 题）" in lines and "为什么要把分数除以 sqrt(d)？" in lines
    assert "  A. To save memory" in lines, "a text with no translation is shown as written"
    assert "  B. 让 softmax 不至于饱和" in lines
    assert "提示：想想方差。" in lines
    assert lines[-1] == "得分：3 题中首次答对 0 题，已作答 1 题，跳过 0 题，还有 2 题没有做到。"
    assert score.right == 0 and score.answered == 1


def test_make_quiz_lang_zh_cn_runs_the_terminal_quiz_in_chinese():
    """The command behind `make quiz M=03 LANG=zh-CN`: --lang zh-CN on labkit.course."""
    env = {k: v for k, v in os.environ.items() if k != ENV}
    done = subprocess.run([sys.executable, "-m", "labkit.course", "--lang", "zh-CN", "quiz", "03"], input="z\nq\n",
                          capture_output=True, text=True, cwd=REPO, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "第 1 题（共" in out and "得分只计第一次作答" in out and "你的答案：" in out
    assert "没有选项 Z" in out and "在第 1 题" in out and "得分：" in out
    english = subprocess.run([sys.executable, "-m", "labkit.course", "--lang", "en", "quiz", "03"], input="q\n",
                             capture_output=True, text=True, cwd=REPO, env=env, timeout=120).stdout
    assert "Question 1 of" in english and not CHINESE.search(english)


def test_the_quiz_widget_speaks_chinese_with_the_same_key(monkeypatch):
    from labkit.quiz.widget import quiz_bundle, quiz_widget

    with_translations(monkeypatch, QUIZ_ZH)
    quiz = parse_quiz(QUIZ)
    with speaking("zh-CN"):
        box = quiz_widget(quiz)
        bundle = quiz_bundle(quiz, box)
        first = box.children[1]
        label, prompt, radio, buttons, feedback = first.children
        assert "第 1 题（共 3 题）" in label.value and "为什么要把分数除以" in prompt.value
        assert [name for name, _ in radio.options] == ["A. To save memory", "B. 让 softmax 不至于饱和"]
        assert buttons.children[0].description == "检查"
        buttons.children[0].click()
        assert "请先选择一个答案。" in feedback.value
        radio.value = 0
        buttons.children[0].click()
        assert "提示：想想方差。" in feedback.value and "答案是" not in feedback.value
        radio.value = 1
        buttons.children[0].click()
        assert "答案是 B" in feedback.value
        assert box.children[-1].value == "得分：3 题中首次答对 0 题，已作答 1 题"
    assert bundle["text/plain"].startswith("测验：注意力基础（3 题）")
    assert "make quiz M=01 LANG=zh-CN" in bundle["text/plain"]


# ---------------------------------------------------------------------------------------- predict


def parts(box):
    yield box
    for child in getattr(box, "children", ()):
        yield from parts(child)


QUESTION = "After the softmax, each row sums to?"
PREDICTION = {"key": "01-row-sum", "question": QUESTION,
              "choices": [{"text": "1", "when": True},
                          {"text": "the number of keys", "when": False, "why": "That is before normalising."}],
              "answer": "1", "explanation": "The softmax divides each row by its sum."}
NUMBER = {"key": "01-bytes", "question": "A question nobody translated?", "number": {"unit": "furlongs"},
          "low": "Too few.", "high": "Too many.", "explanation": "Counted."}
PREDICT_ZH = {QUESTION: "softmax 之后，每一行的和是多少？", "the number of keys": "键的个数",
              "That is before normalising.": "那是归一化之前。", "The softmax divides each row by its sum.":
              "softmax 用每一行的和去除这一行。"}


def test_predict_shows_the_translated_texts_and_keeps_the_english_answer(monkeypatch, capsys, tmp_path):
    import json

    import labkit.predict as predict_module

    with_translations(monkeypatch, PREDICT_ZH)  # the course's catalogs, read before the course moves
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "notebooks" / "01_attention_basics.ipynb").write_text("{}")
    (tmp_path / "modules" / "01_attention_basics").mkdir(parents=True)
    (tmp_path / "modules" / "01_attention_basics" / "predictions.json").write_text(
        json.dumps({"module": "01_attention_basics", "predictions": [PREDICTION, NUMBER]}))
    (tmp_path / "workspace" / "zh-CN").mkdir(parents=True)
    monkeypatch.setenv("ATTENTION_LAB_COURSE", str(tmp_path))
    monkeypatch.chdir(tmp_path / "workspace" / "zh-CN")  # a Chinese learner's copy: the folder decides
    monkeypatch.setattr(predict_module, "_PREDICTIONS", {})
    predict("01-row-sum")
    guess = predict_module._PREDICTIONS["01-row-sum"]
    text = guess._text()
    box = guess._widget()
    field = next(w for w in parts(box) if isinstance(w, widgets.RadioButtons))
    button = next(w for w in parts(box) if isinstance(w, widgets.Button))
    assert text.splitlines()[:3] == ["预测：softmax 之后，每一行的和是多少？", "  (a) 1", "  (b) 键的个数"]
    assert "预测：" in box.children[0].value and "每一行的和" in box.children[0].value
    assert field.options == (("1", "1"), ("键的个数", "the number of keys")) and button.description == "提交"
    capsys.readouterr()
    with predict.reveal("01-row-sum") as seen:
        seen.result(True)
    waiting = capsys.readouterr().out
    assert CHINESE.search(waiting) and "01-row-sum" in waiting and "1" not in waiting.replace("01-row-sum", "")
    field.value = "the number of keys"
    button.click()
    assert guess.answer == "the number of keys", "the answer is the English choice the code compares"
    with predict.reveal("01-row-sum") as seen:
        seen.result(True)
    assert capsys.readouterr().out.splitlines() == ["你的预测：键的个数。不太对。", "结果：1。", "那是归一化之前。",
                                                    "softmax 用每一行的和去除这一行。"]
    predict("01-bytes", answer=2048)
    untranslated = predict_module._PREDICTIONS["01-bytes"]
    assert untranslated._text().splitlines()[0] == "预测：A question nobody translated?"
    capsys.readouterr()
    with predict.reveal("01-bytes") as seen:
        seen.result(4096)
    assert capsys.readouterr().out.splitlines()[0] == "你的预测：2,048 furlongs。偏低，差了 2 倍。"
    predict_module._PREDICTIONS.clear()
    predict("01-row-sum", answer="键的个数")  # a choice written as shown counts as that choice
    assert predict_module._PREDICTIONS["01-row-sum"].answer == "the number of keys"
    with pytest.raises(ValueError, match="predict\\('01-row-sum', answer='2'\\)：请从选项中选一个，照显示的样子写："
                                         "'1', '键的个数'"):
        predict("01-row-sum", answer="2")  # refused by name, in the learner's language
    predict("01-bytes")
    box = predict_module._PREDICTIONS["01-bytes"]._widget()
    number, button = (next(w for w in parts(box) if isinstance(w, kind)) for kind in (widgets.Text, widgets.Button))
    number.value = "inf"  # float() reads it: the refusal is said in the widget, in Chinese
    button.click()
    status = [w for w in parts(box) if isinstance(w, widgets.HTML)][-1]
    assert "预测必须是一个有限的数" in status.value and predict_module._PREDICTIONS["01-bytes"].answer is None
    monkeypatch.chdir(tmp_path / "workspace")
    assert guess._text().splitlines()[0] == f"Predict: {QUESTION}"


# ------------------------------------------------------------------------- the map and the explorer


def texts(figure) -> list[str]:
    return [t.get_text() for t in figure.findobj(matplotlib.text.Text) if t.get_text()]


def test_the_course_map_labels_are_chinese_where_a_font_can_draw_them(monkeypatch):
    monkeypatch.setattr(figures, "chinese_font", lambda: "DejaVu Sans")  # stands in for an installed CJK font
    monkeypatch.setattr(fonts, "chinese_font", lambda: "DejaVu Sans")
    with speaking("zh-CN"):
        block, forward = map_figures("05")
    assert texts(block)[0].startswith("MiniMind 的解码器：你在这里，模块 05")
    said = texts(forward)
    assert said[0].startswith("逐步拆解注意力：你在这里，模块 05")
    assert {"做什么", "模块", "掩码", "拆分注意力头", "追加到 KV cache", "softmax", "RoPE"} <= set(said)
    assert "q @ k.T / sqrt(D)" in said, "code stays code"
    chinese = [t for t in forward.findobj(matplotlib.text.Text) if CHINESE.search(t.get_text())]
    assert chinese and all("DejaVu Sans" in t.get_fontfamily() for t in chinese)


def test_without_a_chinese_font_the_map_stays_english_rather_than_empty_boxes(monkeypatch):
    monkeypatch.setattr(figures, "chinese_font", lambda: None)
    monkeypatch.setattr(fonts, "chinese_font", lambda: None)
    with speaking("zh-CN"):
        english = [texts(f) for f in map_figures("05")]
    assert english == [texts(f) for f in map_figures("05")]
    assert not any(CHINESE.search(t) for figure in english for t in figure)


def test_the_explorer_speaks_chinese(monkeypatch):
    import minimind_ref as mm
    from labkit.explorer import explore
    from labkit.tiny_data import ByteTokenizer

    monkeypatch.setattr(figures, "chinese_font", lambda: "DejaVu Sans")
    monkeypatch.setattr(fonts, "chinese_font", lambda: "DejaVu Sans")
    torch.manual_seed(0)
    config = mm.MiniMindConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                               num_key_value_heads=2, vocab_size=257, max_position_embeddings=128)
    with speaking("zh-CN"):
        explorer = explore(mm.MiniMindForCausalLM(config).eval(), ByteTokenizer(), prompt="abcab", layer=1)
        assert explorer.layer.description == "层" and explorer.layer.options[0][0] == "所有层"
        assert explorer.title() == "第 1 层，所有头：红框标出查询 5（b）"
        assert explorer.top_keys_text.splitlines()[0] == "查询 5 'b'：它权重最大的 3 个键"
        assert explorer.top_keys_text.splitlines()[1].startswith("  第 1 层，头 0：")
        shown = [ax for ax in explorer.figure.axes if ax.images]
        assert shown[0].get_title() == "第 1 层，头 0" and shown[0].get_ylabel() == "查询"
        assert shown[-1].get_xlabel() == "键"


def test_interact_labels_its_controls_in_the_current_language(monkeypatch):
    from labkit.widgets import interact

    with_translations(monkeypatch, {"factor": "倍数"})
    with speaking("zh-CN"):
        shown = interact(lambda factor, zorp: None, factor=widgets.FloatSlider(value=0.5), zorp=(1, 8))
    assert [c.description for c in shown.controls.values()] == ["倍数", "zorp"], "no catalog translates 'zorp'"
    assert repr(shown).endswith("factor=0.5, zorp=4)"), "the text form names the code's keywords"
