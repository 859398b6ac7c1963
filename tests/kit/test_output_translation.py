"""What a program prints and draws, in the learner's language (issue 36, labkit/i18n/output.py).

The teaching code prints English; in Chinese, each printed line and each figure text is matched
against the English templates of the code that made it (labkit/i18n/templates.py) and shown with
the catalog's Chinese, the values put back unchanged. These tests hold the engine (templates,
matching, the stream, figures, the PNG record, the catalog's faithfulness rule); the scripts run in
Chinese as a learner runs them in tests/course/test_experiments.py.
"""

from __future__ import annotations

import io
import re
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # headless, whatever the environment says

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

import labkit.figures as figures  # noqa: E402
import labkit.i18n.fonts as fonts  # noqa: E402
from labkit.course.translation.check import template_problems  # noqa: E402
from labkit.experiment import print_table  # noqa: E402
from labkit.i18n import ENV, use_language  # noqa: E402
from labkit.i18n.catalog import key_of  # noqa: E402
from labkit.i18n.output import (  # noqa: E402
    OutputTranslator,
    TranslatingStream,
    figure_texts,
    install,
    png_texts,
    record_png,
    translate_figure,
    uninstall,
)
from labkit.i18n.prose import english_prose, english_words  # noqa: E402
from labkit.i18n.templates import Template, extended_context, source_templates  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
CHINESE = re.compile(r"[\u4e00-\u9fff]")


@pytest.fixture(autouse=True)
def english_by_default(monkeypatch):
    monkeypatch.delenv(ENV, raising=False)
    use_language(None)
    yield
    uninstall()
    use_language(None)


def translator(pairs: dict[str, str]) -> OutputTranslator:
    out = OutputTranslator({key_of(english): chinese for english, chinese in pairs.items()})
    for english in pairs:
        out.add(english)
    return out


def speak(pairs: dict[str, str]) -> OutputTranslator:
    """Install the process's translator (stdout, figures) and teach it `pairs`."""
    active = install()
    active.table = {**active.table, **{key_of(english): chinese for english, chinese in pairs.items()}}
    for english in pairs:
        active.add(english)
    return active


# ------------------------------------------------------------------------------------------ templates

def test_templates_are_read_from_prints_claims_and_figure_texts():
    source = '''
def run(exp, ax, n, scores):
    print(f"{n} queries x {n + 1} keys")
    print("scores:", tuple(scores.shape))
    print(f"{n:.3f}")
    exp.claim(n > 0, f"every weight is positive ({n} of them)")
    names = ["causal mask", "no mask"]
    for name in names:
        ax.plot([0], label=name)
    ax.set(title="Attention weights", xlabel="key position")
'''
    found = [text for _, _, text in source_templates(source)]
    assert "{n} queries x {n + 1} keys" in found
    assert "scores: {tuple(scores.shape)}" in found
    assert "every weight is positive ({n} of them)" in found
    assert {"causal mask", "no mask", "Attention weights", "key position"} <= set(found)
    assert "{n}" not in found, "a line of values alone needs no translation"


def test_a_line_is_matched_and_its_values_come_back_unchanged():
    tr = translator({"{n} queries x {k} keys": "{n} 个查询 x {k} 个键", "causal mask": "因果掩码",
                     "setting: {name}": "设置：{name}"})
    assert tr.line("12 queries x 7 keys") == "12 个查询 x 7 个键"
    assert tr.line("  causal mask") == "  因果掩码", "indentation is kept"
    assert tr.line("setting: causal mask") == "设置：因果掩码", "a value that is a known text is translated"
    assert tr.line("print(x)  # my own line") == "print(x)  # my own line", "an unknown line is shown as written"
    assert tr.text("causal mask\n3 queries x 4 keys") == "因果掩码\n3 个查询 x 4 个键"


def test_a_grid_title_is_translated_but_a_line_of_values_is_left_alone():
    """show_heatmaps' "layer 0, head 1" is composed from words: translated where they are known,
    while a printed list of heads, "[(1, 0), (1, 1)]", keeps its ASCII commas."""
    tr = translator({"layer": "层", "head": "头"})
    assert tr.line("layer 0, head 1") == "层 0，头 1"
    assert tr.line("[(1, 0), (1, 1), (1, 3)]") == "[(1, 0), (1, 1), (1, 3)]"
    assert tr.line("(0, 1)") == "(0, 1)"
    numbers = translator({"6": "6", "x": "倍", "layer": "层", "head": "头"})
    assert numbers.line("(2, 6, 4, 8)") == "(2, 6, 4, 8)", "a number some catalog holds is no word"
    assert numbers.line("x = q_proj(...)  [B, T, H*D]") == "x = q_proj(...)  [B, T, H*D]"
    assert translator({"causal mask": "因果掩码"}).line("causal mask: P x") == "因果掩码：P x"
    assert tr.text("head 1 off\n(layer)") == "head 1 off\n（层）", "a known text in brackets, a tick's second line"
    assert tr.line("my note: layer 2") == "my note: layer 2", "an unknown text is never half-translated"


def test_a_scripts_own_catalog_wins_over_another_catalogs_translation(tmp_path, monkeypatch):
    """Every catalog is keyed by the English alone: "no" is a prediction's choice 不对称 in
    predictions/02_qkv.md, and a script's table of flags says 否 in its own catalog."""
    import labkit.i18n

    monkeypatch.setattr(labkit.i18n, "_translations", lambda: {key_of("no"): "不对称"})
    script = tmp_path / "experiments" / "01_demo" / "exp1_flags.py"
    catalog = tmp_path / "translations" / "zh-CN" / "experiments" / "01_demo" / "exp1_flags.md"
    script.parent.mkdir(parents=True)
    catalog.parent.mkdir(parents=True)
    script.write_text('from labkit.i18n import phrase\nprint(phrase("no"))\n', encoding="utf-8")
    catalog.write_text(f"<!-- zh-CN {key_of('no')} · line 2: output (phrase) -->\n否\n", encoding="utf-8")
    use_language("zh-CN")
    assert install(script).line("no") == "否"


def test_the_most_specific_template_wins():
    tr = translator({"{a}: {b}": "{a}：{b}", "loss: {value}": "损失：{value}"})
    assert tr.line("loss: 0.25") == "损失：0.25"
    assert Template("loss: {value}").weight > Template("{a}: {b}").weight


def test_a_value_that_holds_the_next_separator_is_split_where_the_values_are_known():
    """A name with a colon before ": {n}": the shortest first value ("positions") is no known text,
    so the split that makes the whole name a value wins; an unknown name keeps the first split."""
    tr = translator({"{name}: {n} tokens differ": "{name}：{n} 个 token 不同",
                     "positions: new token at 0": "位置：新 token 放在 0"})
    assert tr.line("positions: new token at 0: 23 tokens differ") == "位置：新 token 放在 0：23 个 token 不同"
    assert tr.line("my run: 3 tokens differ") == "my run：3 个 token 不同"
    assert tr.line("a: b: 3 tokens differ") == "a：b: 3 个 token 不同", "nothing known: the first split, as before"


def test_a_script_s_own_catalog_decides_where_two_catalogs_differ():
    """"step" is a float's spacing in 01's exp3 and a stage of Algorithm 0 in 08's exp4: each script
    shows its own catalog's word, whichever catalog the merged table read last."""
    shown = {}
    for script in ("experiments/01_attention_basics/exp3_stable_softmax.py", "experiments/08_flash/exp4_io_counts.py"):
        shown[script] = install(REPO / script).line("step")
        uninstall()
    assert list(shown.values()) == ["间距", "步骤"], shown


def test_the_stream_translates_whole_lines_and_flushes_a_partial_one():
    sink = io.StringIO()
    stream = TranslatingStream(sink, translator({"causal mask": "因果掩码"}))
    stream.write("causal")
    assert sink.getvalue() == "", "half a line waits for the rest"
    stream.write(" mask\nnext")
    assert sink.getvalue() == "因果掩码\n"
    stream.flush()
    assert sink.getvalue() == "因果掩码\nnext"


def test_install_wraps_stdout_once_and_uninstall_restores_it(capsys):
    before = sys.stdout
    install("print('claim holds')")
    install("print('claim holds')")
    assert isinstance(sys.stdout, TranslatingStream) and not isinstance(sys.stdout.stream, TranslatingStream)
    uninstall()
    assert sys.stdout is before


def test_a_translation_keeps_every_placeholder_and_number():
    assert template_problems("{n} of {k} heads in layer 1", "第 1 层 {k} 个头中的 {n} 个") == []
    assert template_problems("{n} heads", "个头")  # a value dropped
    assert template_problems("{n} heads", "{n} 个头，{m}")  # a value invented
    assert template_problems("layer 1: {n}", "层：{n}")  # a number dropped


def test_english_prose_and_words_leave_code_and_formulas_alone():
    assert english_prose("the output is off by 3%") == ["the output is off by"]
    assert english_prose("max |softmax - reference| in float32, d_k = 64, x.shape (2, 6)") == []
    assert english_prose("因果掩码：masked_fill(-inf)，dtype torch.float32，'the cat sat'") == []
    assert english_words("层 layer") == ["layer"], "a single word is a word, not prose"
    assert english_words("SDPA and GQA") == ["and"], "acronyms are names"


def test_a_table_is_translated_and_aligned_by_terminal_width(capsys):
    speak({"setting": "设置", "equivariant": "等变"})
    print_table(["setting", "equivariant"], [["x", True], ["causal", False]])
    sys.stdout.flush()
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["设置", "等变"]
    widths = {sum(2 if CHINESE.match(ch) else 1 for ch in line.rstrip()) for line in lines[:2]}
    assert len(lines) == 4 and len(widths) == 1, f"columns line up on a terminal: {lines}"


# ------------------------------------------------------------------------------------------ figures

def _figure():
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1], label="causal mask")
    ax.set(title="Attention weights", xlabel="key position")
    ax.legend()
    return fig


def test_a_figure_is_translated_with_the_pinned_font_and_records_its_texts(tmp_path):
    assert fonts.chinese_font() == "Noto Sans CJK SC", "mplfonts==0.0.11 (requirements.txt) is installed"
    speak({"causal mask": "因果掩码", "Attention weights": "注意力权重", "key position": "键的位置"})
    fig = _figure()
    translate_figure(fig)
    path = tmp_path / "fig.png"
    fig.savefig(path, dpi=50)
    record_png(path, figure_texts(fig, 50))
    plt.close(fig)
    texts = [entry["text"] for entry in png_texts(path)]
    assert {"因果掩码", "注意力权重", "键的位置"} <= set(texts)
    assert not any(english_words(text) for text in texts), texts
    assert plt.imread(path).shape[2] in (3, 4), "still a PNG any reader opens"


def test_tick_labels_set_by_hand_are_translated(tmp_path):
    """matplotlib keeps labels given to set_xticks(ticks, labels) or ax.set(xticklabels=...) in a
    FuncFormatter, and draws them again at each save."""
    speak({"no ablation": "不消融", "causal mask": "因果掩码"})
    fig, (left, right) = plt.subplots(1, 2)
    left.bar([0, 1], [1, 2])
    left.set(xticks=[0, 1], xticklabels=["no ablation", "causal mask"])
    right.set_xticks([0, 1], ["causal mask", "0.5"])
    translate_figure(fig)
    path = tmp_path / "ticks.png"
    fig.savefig(path, dpi=30)
    record_png(path, figure_texts(fig, 30))
    plt.close(fig)
    ticks = [entry["text"] for entry in png_texts(path) if entry.get("tick")]
    assert {"不消融", "因果掩码", "0.5"} <= set(ticks) and not [t for t in ticks if english_words(t)], ticks


def test_without_a_chinese_font_a_figure_stays_english(monkeypatch):
    speak({"causal mask": "因果掩码"})
    monkeypatch.setattr(figures, "chinese_font", lambda: None)
    monkeypatch.setattr(fonts, "chinese_font", lambda: None)
    fig = _figure()
    translate_figure(fig)
    assert fig.axes[0].get_legend().get_texts()[0].get_text() == "causal mask", "English, never boxes"
    plt.close(fig)


def test_png_texts_of_a_plain_png_is_none(tmp_path):
    fig = plt.figure()
    fig.savefig(tmp_path / "plain.png", dpi=20)
    plt.close(fig)
    assert png_texts(tmp_path / "plain.png") is None
    (tmp_path / "not.png").write_bytes(b"text")
    with pytest.raises(ValueError, match="not a PNG"):
        record_png(tmp_path / "not.png", [])


# Every experiment script that has a catalog runs in Chinese, as the Chinese README says (LANG=zh-CN),
# in tests/course/test_experiments.py: its claims hold, and it prints no English prose and draws no
# English label.


# ------------------------------------------------------------------------------------------ what the notebooks showed

def test_values_that_are_code_or_numbers_are_never_rewritten():
    """A value is translated only when it is a whole known text with English words whose Chinese
    differs: a prediction's unit "x", a quiz's "16" or "0", the term "logits" stay as printed, and a
    line of values is never reformatted by the composed rules."""
    tr = translator({"x": "倍", "16": "16", "0": "0", "logits": "logit", "causal mask": "因果掩码",
                     "layer": "层", "head": "头"})
    for line in ["x: (6, 4)", "logits      (1, 5, 6400)", "strides (32, 16, 4, 1)", "        [1, 0, 0, 0, 0],",
                 "x: (1, 4, 8)  W_q: (8, 8)  W_o: (8, 8)", "        [0, 0, 0, 0, 0, 1, 1, 1]], dtype=torch.int32)"]:
        assert tr.line(line) == line
    assert tr.line("causal mask: (1, 4)") == "因果掩码：(1, 4)", "a known text with English words still is"
    assert tr.line("layer 0, head 1") == "层 0，头 1"


def test_a_table_header_of_constants_is_a_template_and_a_row_keeps_its_columns():
    source = '''print(f"{'L':>6} {'no cache':>16} {'with cache':>12}")
print(f"{'':10} boundaries {low:.2f} -> {high}")
print(f"{'dtype':9} {'fill':10} {'hidden weight':>14}")
'''
    found = [text for _, _, text in source_templates(source)]
    assert "L         no cache   with cache" in found, "constants are folded in, their format spec applied"
    assert "boundaries {low} -> {high}" in found
    assert "dtype     fill        hidden weight" in found
    tr = translator({"hidden weight": "隐藏权重", "no: overflow": "否：溢出", "even": "均匀"})
    row = "float16   -1e9     no: overflow            0.0        even"
    shown = tr.line(row)
    assert shown.split("  ")[0] == "float16" and "否：溢出" in shown and shown.rstrip().endswith("均匀")
    english_ends = [m.end() for m in re.finditer(r"\S+(?: \S+)*", row)][1:]
    shown_ends = [sum(2 if CHINESE.match(ch) or ch == "：" else 1 for ch in shown[:m.end()])
                  for m in re.finditer(r"\S+(?: \S+)*", shown)][1:]
    assert shown_ends == english_ends, f"each column ends where it did: {shown!r}"
    assert tr.line("float16   -1e9   -inf") == "float16   -1e9   -inf", "a row of values is as written"
    padded = translator({"{name} {n} bytes written": "{name} {n} 字节已写入", "doubling from 4": "从 4 起倍增"})
    assert padded.line("doubling from 4    1,015,808 bytes written") == "从 4 起倍增    1,015,808 字节已写入", \
        "a padded column's words stay one value"


def test_a_line_whose_first_value_prints_its_leading_spaces_is_matched():
    tr = translator({"{pad} boundaries {low}": "{pad} 边界 {low}"})
    assert tr.line("           boundaries 5.38").strip() == "边界 5.38"


def test_a_dict_placeholder_is_written_so_that_it_reads_back_as_one_field():
    source = 'print(f"one head: loss {loss:.3f}, accuracy", {k: round(v, 3) for k, v in acc.items()})\n'
    (_, _, template), = source_templates(source)
    assert template == "one head: loss {loss}, accuracy { {k: round(v, 3) for k, v in acc.items()} }"
    assert Template(template).fields == ["loss", "{k: round(v, 3) for k, v in acc.items()}"]
    tr = translator({template: "单头：损失 {loss}，正确率 { {k: round(v, 3) for k, v in acc.items()} }"})
    assert tr.line("one head: loss 0.000, accuracy {'pair': 1.0}") == "单头：损失 0.000，正确率 {'pair': 1.0}"


def test_texts_kept_in_data_are_followed_to_where_they_are_shown():
    source = '''
ways = {"repeat_kv, then fused SDPA": f1, "SDPA": f2}
for name, fn in ways.items():
    print(f"{name:<30} {fn()}")
ablation = {"baseline": 1.0}
for h in range(2):
    ablation[f"head {h} off"] = 0.5
for name, result in ablation.items():
    print(f"{name:12s} {result:6.2f}")
def accepts(value):
    try:
        return "yes"
    except RuntimeError:
        return "no: overflow"
print(f"{'dtype':9} {accepts(1):>13}")
for name, row in zip(["previous", "induction"], rows):
    print(f"{name:10} " + "  ".join(f"{v:9.3f}" for v in row))
print("; ".join(["causal mask", "no mask"]))
print(f"{len(x)} {'x_1'}", [1, 2], ("(1, 2)", "3"))
'''
    found = {text for _, _, text in source_templates(source)}
    assert {"repeat_kv, then fused SDPA", "baseline", "head {h} off", "yes", "no: overflow", "previous",
            "induction", "causal mask", "no mask"} <= found
    assert "SDPA" not in found and "(1, 2)" not in found and "3" not in found, "no English word, no unit"
    later = "for name in names:\n    print(f'{name}: done')\n"
    earlier = extended_context(None, 'names = ["causal"]\n')
    assert "causal" in {text for _, _, text in source_templates(later, earlier)}, "a name bound in an earlier cell"


def test_a_sources_own_catalog_decides_its_own_lines():
    """One English, two Chinese: "step" is 步数 in a notebook and 间距 in a script."""
    tr = OutputTranslator({key_of("step"): "步数", key_of("step: {n}"): "步数：{n}"})
    own = {key_of("step"): "间距", key_of("step: {n}"): "间距：{n}"}
    tr.add_source('print(f"step: {n}")\nprint("step")\n', catalog=own)
    assert tr.line("step: 3") == "间距：3" and tr.line("step") == "间距"


def test_a_templates_placeholders_are_not_read_for_terms(tmp_path):
    from labkit.course.translation.check import faithful_problems

    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "glossary.json").write_text((REPO / "docs" / "glossary.json").read_text(encoding="utf-8"),
                                                   encoding="utf-8")
    script = tmp_path / "experiments" / "01_x" / "exp1_y.py"
    script.parent.mkdir(parents=True)
    script.write_text('print(f"heads: {attentions}")\nprint(f"the attention of {n}")\n', encoding="utf-8")
    catalog = tmp_path / "translations" / "zh-CN" / "experiments" / "01_x" / "exp1_y.md"
    catalog.parent.mkdir(parents=True)
    catalog.write_text(f"<!-- zh-CN {key_of('heads: {attentions}')} · line 1: output (print) -->\n"
                       f"头：{{attentions}}\n\n<!-- zh-CN {key_of('the attention of {n}')} · line 2: output (print) "
                       f"-->\n"
                       f"{{n}} 的权重\n",
                       encoding="utf-8")
    problems = faithful_problems(tmp_path, "experiments:01_x/exp1_y")
    assert len(problems) == 1 and "line 2" in problems[0] and "attention" in problems[0], problems


def test_one_english_translated_two_ways_is_listed():
    """All catalogs merge into one table keyed by the English. Where two catalogs translate one
    English two ways, a printed template's own catalog decides for its own lines (the case above);
    two texts shown through tr() share the table, so only one of their Chinese can be shown: each
    such conflict is listed for a maintainer to settle (one Chinese, or different English)."""
    from labkit.course.translation.check import conflicts

    found = conflicts(REPO)
    shared = {english: ways for english, ways in found.items()  # two of its Chinese are shown by tr()
              if sum(any(not output for _, output in where) for where in ways.values()) > 1}
    assert not shared, "one English, two Chinese, both shown through tr():\n" + "\n".join(
        f"{english!r}: " + "; ".join(f"{zh!r} in {', '.join(p for p, _ in where)}" for zh, where in ways.items())
        for english, ways in shared.items())


def test_a_row_inside_a_value_is_translated_and_the_depth_still_ends():
    """A header whose names are joined into one placeholder is a row inside a value; a value whose
    cells match templates whose values are rows again must end (it once recursed without end)."""
    tr = translator({"step {names}": "步骤 {names}", "MiniMind2 fused": "MiniMind2 融合", "{x} of {y}": "{y} 的 {x}"})
    english = "step      MiniMind2 fused   MiniMind2 fused"
    shown = tr.line(english)
    assert shown.startswith("步骤") and shown.count("MiniMind2 融合") == 2, shown
    wide = sum(bool(CHINESE.match(ch)) for ch in shown)
    assert len(shown) + wide == len(english), "the last column ends where it did"
    line = "  ".join(["a b of c d"] * 6)
    assert isinstance(tr.line(f"{line} of {line}"), str)


def test_a_list_of_known_texts_is_translated_whole_or_not_at_all():
    tr = translator({"stage {n}: {titles}": "阶段 {n}：{titles}", "scores not scaled": "分数未缩放",
                     "keys not transposed": "键未转置"})
    assert tr.line("stage 1: scores not scaled; keys not transposed") == "阶段 1：分数未缩放；键未转置"
    assert tr.line("stage 1: scores not scaled; my own note") == "阶段 1：scores not scaled; my own note"
