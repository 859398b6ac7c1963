"""The grader's report in Chinese (`--lang zh-CN`, `make grade ... LANG=zh-CN`, and a notebook in
notebooks/zh-CN): every line it prints is Chinese, for a correct layer and for a wrong one, in
the stage lines, the verdict, the diagnosis and a usage error. What stays as written is what is
the same in both editions: code identifiers, numbers, shapes, paths."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from labkit.grader.__main__ import main

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent

# Three plain English words in a row (no underscore, dot, digit or bracket in them: those are code)
# is a sentence left in English; a Chinese line may quote code and numbers, never prose.
PROSE = re.compile(r"(?<![\w.(\[=/-])[A-Za-z]{2,}(?:,? [A-Za-z]{2,}){2,}(?![\w(\[=/])")
CJK = re.compile(r"[\u4e00-\u9fff]")


def english_lines(text: str) -> list[str]:
    """The lines of a report that hold English prose: a run of three words, or letters and no Chinese
    character at all (beyond the learner's prints, which the report quotes after '|')."""
    found = []
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("|"):
            continue
        if PROSE.search(line) or (re.search(r"[A-Za-z]{3,}", line) and not CJK.search(line)):
            found.append(line)
    return found


def _correct(folder: Path) -> Path:
    """A correct layer written unlike the reference (grader_styles), as a learner's file."""
    shutil.copy(HERE / "grader_styles.py", folder / "grader_styles.py")
    path = folder / "my_attention.py"
    path.write_text("from grader_styles import EinsumAttention\n\n\nclass MyAttention(EinsumAttention):\n    pass\n")
    return path


def _wrong(folder: Path) -> Path:
    """A layer with a known mistake (repeat_kv tiled), which stage 3 catches and names."""
    path = folder / "my_attention.py"
    path.write_text("from labkit.grader.mistakes import RepeatTiled\n\n\nclass MyAttention(RepeatTiled):\n    pass\n")
    return path


def test_the_english_detector_sees_the_english_report():
    """The check below can fail: the English report is English to it, line by line."""
    report = ("  stage  3 of 11: grouped key/value heads ... ✗\n"
              "✗ MyAttention: not yet — stage 3 of 11, grouped key/value heads, fails.\n"
              "  expected 0.23, got 0.227\n")
    assert len(english_lines(report)) == 3
    assert english_lines("  应为 0.23，实为 0.227\n  出错处：一次调用；q @ k.transpose(-2, -1)\n") == []


@pytest.mark.parametrize("make_file, status, verdict", [
    (_correct, 0, "✓ MyAttention：正确。"),
    (_wrong, 1, "✗ MyAttention：还不对"),
])
def test_the_report_in_chinese_has_no_english_line(tmp_path, capsys, make_file, status, verdict):
    path = make_file(tmp_path)
    assert main([str(path), "--lang", "zh-CN"]) == status
    out, err = capsys.readouterr()
    assert verdict in out and not err, out + err
    assert english_lines(out) == [], "\n".join(english_lines(out))
    if status == 1:  # the whole diagnosis: where, what differs, which mistake, where it is taught
        assert "阶段  3/11：分组的键值头 …… ✗" in out and "诊断：repeat_kv 的顺序错了。" in out


def test_a_usage_error_in_chinese(tmp_path, capsys):
    assert main([str(tmp_path), "--lang", "zh-CN"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("用法错误：") and "是一个文件夹，不是文件" in err
    assert english_lines(err) == [], err


@pytest.mark.parametrize("argv, words", [
    ([], "缺少必需的参数：file"),
    (["my_attention.py", "--bogus"], "无法识别的参数：--bogus"),
])
def test_a_command_line_mistake_in_chinese(capsys, argv, words):
    """argparse's own usage errors: the usage line, what is wrong and how to run the grader, in Chinese."""
    with pytest.raises(SystemExit) as ended:
        main([*argv, "--lang", "zh-CN"])
    err = capsys.readouterr().err
    assert ended.value.code == 2 and err.startswith("用法：python -m labkit.grader") and words in err, err
    assert "请给出定义你的注意力类的 .py 文件" in err and english_lines(err) == [], err


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_grade_without_a_file_says_so_in_chinese(tmp_path):
    shutil.copy(ROOT / "Makefile", tmp_path / "Makefile")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAKE") and k != "ATTENTION_LAB_LANG"}
    result = subprocess.run(["make", "-s", "-C", str(tmp_path), "grade", "LANG=zh-CN", f"PYTHON={sys.executable}"],
                            capture_output=True, text=True, env=env, timeout=60)
    assert result.returncode == 2
    assert "make grade 需要你的文件，例如：make grade FILE=path/to/my_attention.py" in result.stderr
    assert not (tmp_path / ".venv").exists()


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_grade_passes_lang_on(tmp_path):
    path = _wrong(tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAKE") and k != "ATTENTION_LAB_LANG"}
    result = subprocess.run(["make", "-s", "-C", str(ROOT), "grade", f"FILE={path}", "LANG=zh-CN",
                             f"PYTHON={sys.executable}", f"PY={sys.executable}"],
                            capture_output=True, text=True, env=env)
    assert result.returncode == 2, result.stdout + result.stderr  # make's status for the grader's 1
    assert "✗ MyAttention：还不对" in result.stdout and english_lines(result.stdout) == [], result.stdout
