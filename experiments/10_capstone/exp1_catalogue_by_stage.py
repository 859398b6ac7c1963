"""The grader catches every known mistake at the stage that adds the step it breaks, and names it,
whatever the random weights and inputs; the reference passes every stage.

The grader (labkit/grader) runs eleven stages. Ten check the forward pass, cheapest first: one head
without positions, all heads, grouped key/value heads, RoPE, the causal mask, a padded batch
(float32, then float16), a prefill then cached decoding, several tokens after a cache, q/k norm,
and the whole model against transformers' twins; the eleventh checks the backward pass, the
gradients of one layer with respect to its input and its weights. Each entry of its catalogue is
minimind_ref's attention with exactly one mistake planted (labkit/grader/mistakes.py). This
script grades every planted mistake with one seed or several (`--seeds`, from `--seed`; each seed
draws other weights and other inputs), counts which stage catches it and whether the grader names
it, and draws the counts: one row per mistake, one column per stage.

Why it matters: a mistake that only some inputs reveal, or that another mistake's signature could
explain, would make the grader's word unreliable; here every mistake lands on one stage, every
time, with its own name.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import torch

import minimind_ref as mm
from labkit import Experiment, grade, int_in, print_table
from labkit.grader import CATALOGUE, LADDER, STAGE, stage_number
from labkit.i18n import phrase, tr


def add_arguments(parser):
    # One seed by default: the notebook's table, within the 20-s budget of a default run; each
    # further seed grades the whole catalogue once more.
    parser.add_argument("--seeds", type=int_in(1, 20), default=1,
                        help="random models and inputs each mistake is graded with, 1 to 20 (default 1; "
                             "--seeds 5 --seed 7: five others)")


def seeds_named(seeds: list[int]) -> str:
    """"seed 3" or "seeds 3 to 7": which random models and inputs the grading drew."""
    return phrase(f"seed {seeds[0]}") if len(seeds) == 1 else phrase(f"seeds {seeds[0]} to {seeds[-1]}")


def catch_table(seeds: list[int]) -> tuple[torch.Tensor, dict, list[bool]]:
    """counts [mistakes, stages] of the seeds whose first failing stage was that one; for each
    mistake the number of seeds on which the grader named it (and it alone); and for each seed
    whether the reference passed every stage."""
    counts = torch.zeros(len(CATALOGUE), len(LADDER), dtype=torch.long)
    named = {mistake.key: 0 for mistake in CATALOGUE}
    reference = [grade(mm.Attention, seed=seed, quiet=True).passed for seed in seeds]
    for row, mistake in enumerate(CATALOGUE):
        for seed in seeds:
            report = grade(mistake.plant, seed=seed, quiet=True)
            if report.stage is not None:
                counts[row, stage_number(report.stage) - 1] += 1
            named[mistake.key] += report.matches == [mistake]
    return counts, named, reference


def main(argv=None):
    exp = Experiment.start(__doc__, __file__, argv, add_arguments)
    torch.set_num_threads(1)
    seeds = [exp.args.seed + i for i in range(exp.args.seeds)]
    counts, named, reference = catch_table(seeds)

    rows = []
    for row, mistake in enumerate(CATALOGUE):
        caught = {stage_number(LADDER[col]): int(n) for col, n in enumerate(counts[row]) if n}
        where = ", ".join(phrase(f"stage {number}: {n}") for number, n in caught.items())
        rows.append([mistake.title, where, f"{named[mistake.key]}/{len(seeds)}", mistake.module[:2]])
    drawn = seeds_named(seeds)
    print(f"{len(CATALOGUE)} planted mistakes, graded on {drawn} (models with random weights, random inputs)")
    print()
    print_table(["mistake", "first failing stage (seeds)", "named", "module"], rows)
    print()

    exp.claim(all(reference), f"the reference passes all {len(LADDER)} stages on {drawn}")
    expected = [stage_number(STAGE[m.stage]) - 1 for m in CATALOGUE]
    exp.claim(all(counts[row, col] == len(seeds) for row, col in enumerate(expected)),
              "every mistake is caught first at the stage the catalogue gives it, on every seed")
    exp.claim(all(n == len(seeds) for n in named.values()),
              "on every seed the grader names each mistake, and no other, from its output alone")
    busy = sorted({stage_number(LADDER[col]) for col in range(len(LADDER)) if counts[:, col].any()})
    exp.claim(len(busy) == len(LADDER), f"each of the {len(LADDER)} stages is the first to catch at least one mistake")

    fig, ax = plt.subplots(figsize=(8.5, 7.5))
    ax.imshow(counts.numpy(), cmap="Blues", vmin=0, vmax=len(seeds), aspect="auto")
    for (row, col), n in zip(counts.nonzero().tolist(), counts[counts > 0].tolist()):
        ax.text(col, row, str(n), ha="center", va="center", color="white", fontsize=9)
    # tr: the grader's stage titles in the learner's language, as its report shows them
    ax.set_xticks(range(len(LADDER)), [f"{i + 1}. {tr(s.title)}" for i, s in enumerate(LADDER)], rotation=40,
                  ha="right", fontsize=8)
    ax.set_yticks(range(len(CATALOGUE)), [m.title for m in CATALOGUE], fontsize=8)
    ax.set_title(f"first stage that fails, for each planted mistake ({drawn})")
    exp.save(fig, "catches")
    return exp.finish()


if __name__ == "__main__":
    raise SystemExit(main())
