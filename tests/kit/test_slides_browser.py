"""`make slides M=NN` in a real browser: every module's deck opened from disk in headless Chromium.

For every slide of every deck: its content lies within the 16:9 slide and the window (a tall code
cell may scroll inside itself; nothing is cut off), MathJax has left no raw LaTeX in the page, and
nothing failed to load or came from anywhere but the disk. Links point at files that exist.
A few slides are saved as screenshots in outputs/slides/screenshots/ for a reviewer to look at.

The browser is the system's Chromium (Debian's `chromium` package), driven by playwright, which
never downloads a browser of its own here. Without Chromium the test is skipped on a laptop and
fails in CI (CI is set), where .ci/run installs it.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

from labkit.course.slides import HEIGHT, WIDTH, write_slides
from labkit.syllabus import all_modules, find_course_root

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = ROOT / "outputs" / "slides" / "screenshots"
CHROMIUM = os.environ.get("ATTENTION_LAB_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
LAUNCH_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
               "--disable-component-update", "--disable-sync", "--no-first-run"]

# Runs in the page once MathJax is done: shows each slide with all its fragments and measures it.
MEASURE = """() => {
  const problems = [];
  const slides = Reveal.getSlides();
  for (const slide of slides) {
    const where = Reveal.getIndices(slide);
    Reveal.slide(where.h, where.v, Number.MAX_SAFE_INTEGER);
    const label = `slide ${where.h}/${where.v || 0}`;
    const box = slide.getBoundingClientRect();
    if (slide.scrollHeight > slide.clientHeight + 2 || slide.scrollWidth > slide.clientWidth + 2) {
      problems.push(`${label}: content ${slide.scrollWidth}x${slide.scrollHeight} overflows the slide's `
                    + `${slide.clientWidth}x${slide.clientHeight}: ${slide.innerText.slice(0, 80)}`);
    }
    if (box.top < -1 || box.left < -1 || box.bottom > innerHeight + 1 || box.right > innerWidth + 1) {
      problems.push(`${label}: the slide lies outside the window: ${JSON.stringify(box)}`);
    }
  }
  return {count: slides.length, problems};
}"""

# Text left in the page that MathJax should have typeset: $...$ or a TeX command, outside code.
RAW_LATEX = r"""() => {
  const walker = document.createTreeWalker(document.querySelector('.reveal .slides'), NodeFilter.SHOW_TEXT);
  const found = [];
  const tex = /\$[^$\s][^$]*\$|\$\$|\\(?:frac|theta|sqrt|sum|mathrm|text|cdot|times|le|ge|top|in)\b/;
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    if (node.parentElement.closest('pre, code, script, style, mjx-container')) continue;
    if (tex.test(node.textContent)) found.push(node.textContent.trim().slice(0, 100));
  }
  return found;
}"""


@pytest.fixture(scope="session")
def browser():
    if not Path(CHROMIUM).exists():
        reason = f"no Chromium at {CHROMIUM} (apt-get install chromium) to test the slides in"
        if os.environ.get("CI"):
            pytest.fail(f"{reason}; CI must have it: .ci/run installs it")
        pytest.skip(reason)
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is in requirements.txt")
    with sync_api.sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture(scope="session")
def decks(tmp_path_factory):
    """Every module's deck, built once, in a folder of its own (as outputs/slides/ would hold them)."""
    out = tmp_path_factory.mktemp("slides")
    modules = [m for m in all_modules(find_course_root(ROOT)) if m.notebook]
    return {m.name: write_slides(m.notebook, out, ROOT) for m in modules}


def test_every_module_has_a_deck(decks):
    assert len(decks) >= 9, sorted(decks)


@pytest.mark.parametrize("number", [f"{n:02d}" for n in range(1, 10)])
def test_deck_fits_renders_its_math_and_loads_only_local_files(number, decks, browser):
    name = next((key for key in decks if key.startswith(number)), None)
    if name is None:
        pytest.skip(f"module {number} has no notebook")
    deck = decks[name]
    page = browser.new_page(viewport={"width": WIDTH, "height": HEIGHT})
    failures = []
    page.on("requestfailed", lambda request: failures.append(f"failed: {request.url} ({request.failure})"))
    page.on("request", lambda request: None if request.url.startswith(("file:", "data:", "blob:"))
            else failures.append(f"not from disk: {request.url}"))
    page.on("console", lambda message: failures.append(f"console {message.type}: {message.text}")
            if message.type == "error" else None)
    page.on("pageerror", lambda error: failures.append(f"page error: {error}"))
    page.goto(deck.as_uri())
    page.wait_for_function("window.Reveal && Reveal.isReady() && window.MathJax && MathJax.startup"
                           " && MathJax.startup.promise")
    page.evaluate("MathJax.startup.promise")
    page.evaluate("document.fonts.ready.then(() => true)")

    measured = page.evaluate(MEASURE)
    assert measured["count"] > 20, f"{name}: only {measured['count']} slides"
    assert not measured["problems"], f"{name}:\n" + "\n".join(measured["problems"])
    assert page.evaluate(RAW_LATEX) == [], f"{name}: LaTeX that MathJax did not typeset"
    assert page.evaluate("document.querySelectorAll('mjx-merror, [data-mjx-error]').length") == 0, \
        f"{name}: a formula MathJax could not parse"
    for href in page.evaluate("[...document.querySelectorAll('a[href]')].map(a => a.href)"):
        if href.startswith("file:"):
            target = Path(unquote(urlparse(href).path))
            assert target.exists(), f"{name}: the link {href} points at nothing"
    assert not failures, f"{name}:\n" + "\n".join(failures)
    if number in ("03", "06"):
        _screenshots(page, name)
    page.close()


def _screenshots(page, name: str) -> None:
    """The title, the first slide with a displayed formula, a figure, a solution and a quiz answer."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    picks = page.evaluate("""() => {
      const slides = Reveal.getSlides();
      const at = slide => slide ? Reveal.getIndices(slide) : null;
      return {
        title: at(slides[0]),
        formula: at(slides.find(s => s.querySelector('mjx-container[display="true"]'))),
        figure: at(slides.find(s => s.querySelector('.jp-OutputArea-output img'))),
        solution: at(slides.find(s => /^Solution/.test(s.textContent.trim()))),
        quiz: at(slides.find(s => s.querySelector('.fragment'))),
      };
    }""")
    for kind, where in picks.items():
        if where:
            page.evaluate(f"Reveal.slide({where['h']}, {where.get('v') or 0}, Number.MAX_SAFE_INTEGER)")
            page.wait_for_timeout(300)  # the fragment's fade-in
            page.screenshot(path=str(SCREENSHOTS / f"{name}-{kind}.png"))
