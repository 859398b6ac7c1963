"""`make slides M=NN` as the audience sees it: every module's deck, opened from disk in headless
Chromium at 1280x720.

reveal.js lays every slide out on one 1280x720 canvas and scales the canvas to the screen, so a
deck that fits at 1280x720 fits at 1920x1080, 1.5 times larger; and the deck without the worked
solutions is the full deck less its "Solution:" slides (test_slides.py holds that for every
deck). So every deck is measured once, in full at 1280x720, and the other size and variant on the
deck with the most solutions (module 10), which shows that the scaling and the variant hold.

Every slide is shown with all its fragments and measured. It fails on:
- an element whose content is clipped or scrolled (scrollHeight > clientHeight, or wider than it
  is shown, where the element hides or scrolls its overflow), or whose box lies beyond the slide;
- a slide without a title (a heading);
- text smaller than 16 px on the screen (its CSS size times reveal.js's scale);
- raw LaTeX left untypeset, a formula MathJax could not parse, a failed or non-local request, a
  console error, a link to a file that does not exist.

A contact sheet per deck (every slide as a thumbnail, in order, the full variant at 1280x720) is
saved as outputs/slides/contact/NN_slug.png, for a reviewer to see a whole deck at once.

One browser and two pages (one per screen size) serve every deck. The browser is the system's
Chromium (Debian's `chromium` package), driven by playwright, which never downloads a browser of
its own here. Without Chromium the tests are skipped, saying so, on a laptop, and fail in CI (CI
is set), where .ci/run installs it.
"""

from __future__ import annotations

import io
import os
import shutil
import sys
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

from labkit.course.slides import HEIGHT, WIDTH, deck_name, write_slides
from labkit.syllabus import all_modules, find_course_root

ROOT = Path(__file__).resolve().parents[2]
CONTACT = ROOT / "outputs" / "slides" / "contact"
CHROMIUM = os.environ.get("ATTENTION_LAB_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
LAUNCH_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync"]
SIZES = [(WIDTH, HEIGHT), (1920, 1080)]
MIN_TEXT_PX = 16
THUMB_SCALE = 0.375  # contact-sheet thumbnails: 480x270 for a 1280x720 slide
THUMB_COLUMNS = 5

# Runs in the page once MathJax is done: shows each slide with all its fragments and measures what
# is on the screen. Returns, per slide, its label and its problems.
MEASURE = """([minText, shoot]) => {
  const scale = Reveal.getScale();
  const out = [];
  for (const slide of Reveal.getSlides()) {
    const where = Reveal.getIndices(slide);
    Reveal.slide(where.h, where.v, Number.MAX_SAFE_INTEGER);
    const problems = [];
    const title = slide.querySelector('h1, h2, h3, h4');
    if (!title || !title.innerText.trim()) problems.push('no title');
    const frame = slide.getBoundingClientRect();
    const text = el => (el.innerText || el.textContent || '').trim().replace(/\\s+/g, ' ').slice(0, 60);
    for (const el of slide.querySelectorAll('*')) {
      if (el.closest('aside.notes') || el.parentElement.closest('mjx-container, svg')) continue;
      const style = getComputedStyle(el);
      if (style.display === 'none' || style.visibility === 'hidden') continue;
      const hides = v => v !== 'visible';
      if ((el.scrollHeight > el.clientHeight + 1 && el.clientHeight > 0 && hides(style.overflowY))
          || (el.scrollWidth > el.clientWidth + 1 && el.clientWidth > 0 && hides(style.overflowX))) {
        problems.push(`<${el.tagName.toLowerCase()} class="${el.className}"> shows `
                      + `${el.clientWidth}x${el.clientHeight} of its ${el.scrollWidth}x${el.scrollHeight}: `
                      + text(el));
        continue;
      }
      const box = el.getBoundingClientRect();
      if (box.width > 0 && box.height > 0 && (box.bottom > frame.bottom + 1 || box.right > frame.right + 1
          || box.top < frame.top - 1 || box.left < frame.left - 1)) {
        problems.push(`<${el.tagName.toLowerCase()}> lies beyond the slide `
                      + `(${Math.round(box.right - frame.left)}x${Math.round(box.bottom - frame.top)} of `
                      + `${Math.round(frame.width)}x${Math.round(frame.height)}): ${text(el)}`);
      }
    }
    const walker = document.createTreeWalker(slide, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const parent = node.parentElement;
      if (!node.textContent.trim() || parent.closest('aside.notes, mjx-container, svg, style, script')) continue;
      if (!parent.getClientRects().length) continue;
      const px = parseFloat(getComputedStyle(parent).fontSize) * scale;
      if (px < minText - 0.05) {
        problems.push(`text at ${px.toFixed(1)} px: ${node.textContent.trim().slice(0, 40)}`);
        break;
      }
    }
    out.push({label: `${where.h + 1}.${(where.v || 0) + 1}`, h: where.h, v: where.v || 0, problems});
  }
  return out;
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


def chromium_reason() -> str | None:
    """Why the browser tests cannot run here, or None."""
    if not Path(CHROMIUM).exists():
        return f"no Chromium at {CHROMIUM} (apt-get install chromium, or set ATTENTION_LAB_CHROMIUM)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright is not installed (it is in requirements.txt: make setup)"
    return None


@pytest.fixture(scope="session")
def browser():
    reason = chromium_reason()
    if reason:
        if os.environ.get("CI"):
            pytest.fail(f"{reason}; CI must have it: .ci/run installs it")
        pytest.skip(f"the browser tests need Chromium: {reason}")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture(scope="session")
def pages(browser):
    """One page per screen size, reused for every deck; each collects its failed requests and errors."""
    made = {}
    for width, height in SIZES:
        scale = THUMB_SCALE if (width, height) == (WIDTH, HEIGHT) else 1
        page = browser.new_page(viewport={"width": width, "height": height}, device_scale_factor=scale)
        page.failures = []
        page.on("requestfailed", lambda r, p=page: p.failures.append(f"failed: {r.url} ({r.failure})"))
        page.on("request", lambda r, p=page: None if r.url.startswith(("file:", "data:", "blob:"))
                else p.failures.append(f"not from disk: {r.url}"))
        page.on("console", lambda m, p=page: p.failures.append(f"console {m.type}: {m.text}")
                if m.type == "error" else None)
        page.on("pageerror", lambda e, p=page: p.failures.append(f"page error: {e}"))
        made[(width, height)] = page
    yield made
    for page in made.values():
        page.close()


MODULES = [m for m in all_modules(find_course_root(ROOT)) if m.notebook]


@pytest.fixture(scope="session")
def slides_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("slides")


def open_deck(page, deck: Path) -> None:
    page.failures.clear()
    page.goto(deck.as_uri())
    page.wait_for_function("window.Reveal && Reveal.isReady() && window.MathJax && MathJax.startup"
                           " && MathJax.startup.promise")
    page.evaluate("MathJax.startup.promise")
    page.evaluate("document.fonts.ready.then(() => true)")


def measure(page, deck: Path, contact_sheet: Path | None = None) -> list[dict]:
    """Every slide of `deck` with its problems (see MEASURE); a contact sheet if asked."""
    open_deck(page, deck)
    slides = page.evaluate(MEASURE, [MIN_TEXT_PX, False])
    if contact_sheet is not None:
        save_contact_sheet(page, slides, contact_sheet)
    return slides


def save_contact_sheet(page, slides: list[dict], path: Path) -> None:
    from PIL import Image

    thumbs = []
    for slide in slides:
        page.evaluate(f"Reveal.slide({slide['h']}, {slide['v']}, Number.MAX_SAFE_INTEGER)")
        thumbs.append(Image.open(io.BytesIO(page.screenshot(animations="disabled"))).convert("RGB"))
    width, height = thumbs[0].size
    rows = -(-len(thumbs) // THUMB_COLUMNS)
    gap = 6
    sheet = Image.new("RGB", (THUMB_COLUMNS * (width + gap) + gap, rows * (height + gap) + gap), (90, 90, 90))
    for index, thumb in enumerate(thumbs):
        row, column = divmod(index, THUMB_COLUMNS)
        sheet.paste(thumb, (gap + column * (width + gap), gap + row * (height + gap)))
    path.parent.mkdir(parents=True, exist_ok=True)
    sheet.save(path, optimize=True)


def test_without_chromium_the_browser_tests_say_why(monkeypatch):
    monkeypatch.setattr(sys.modules[__name__], "CHROMIUM", "/nonexistent/chromium")
    assert chromium_reason() == ("no Chromium at /nonexistent/chromium "
                                 "(apt-get install chromium, or set ATTENTION_LAB_CHROMIUM)")


# (module, variants, sizes): every deck in full at 1280x720; the sample adds the rest.
SAMPLE = "10_capstone"
RUNS = [(m, [True], [(WIDTH, HEIGHT)]) for m in MODULES] + [
    (m, [True, False], [(1920, 1080)]) for m in MODULES if m.name == SAMPLE] + [
    (m, [False], [(WIDTH, HEIGHT)]) for m in MODULES if m.name == SAMPLE]


@pytest.mark.parametrize(("module", "variants", "sizes"), RUNS,
                         ids=[f"{m.name}-{'+'.join('full' if v else 'no-solutions' for v in vs)}-{s[0][0]}"
                              for m, vs, s in RUNS])
def test_every_slide_fits_is_titled_and_readable(module, variants, sizes, slides_dir, pages):
    """No clipped or scrolled content, every slide titled, no text under 16 px; the math is
    typeset, and only local files are loaded."""
    problems = []
    for solutions in variants:
        deck = write_slides(module.notebook, slides_dir, ROOT, solutions=solutions)
        assert deck.name == deck_name(module.notebook, solutions)
        for size in sizes:
            page = pages[size]
            sheet = CONTACT / f"{module.name}.png" if solutions and size == (WIDTH, HEIGHT) else None
            slides = measure(page, deck, sheet)
            assert len(slides) > 5, f"{deck.name}: only {len(slides)} slides"
            for slide in slides:
                problems += [f"{deck.name} at {size[0]}x{size[1]}, slide {slide['label']}: {p}"
                             for p in slide["problems"]]
            problems += [f"{deck.name}: {failure}" for failure in page.failures]
            if size == (WIDTH, HEIGHT):
                problems += [f"{deck.name}: raw LaTeX: {t}" for t in page.evaluate(RAW_LATEX)]
                if page.evaluate("document.querySelectorAll('mjx-merror, [data-mjx-error]').length"):
                    problems.append(f"{deck.name}: a formula MathJax could not parse")
                for href in page.evaluate("[...document.querySelectorAll('a[href]')].map(a => a.href)"):
                    if href.startswith("file:") and not Path(unquote(urlparse(href).path)).exists():
                        problems.append(f"{deck.name}: the link {href} points at nothing")
    assert not problems, f"{len(problems)} problems:\n" + "\n".join(problems[:60])
