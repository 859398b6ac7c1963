"""Cheapest first is what makes the grader precise: each early stage costs under a fifth of the
whole-model check, the whole-model check alone misses two known forward mistakes (and, being a
forward check, every backward one) and reports the others as the same symptom whatever step is
wrong, and with two mistakes at once only the ladder still names one.

Three measurements on the catalogue of labkit/grader:

- cost: the floating-point operations of each stage, counted by torch's FlopCounterMode on the
  reference layer (an operation count, the same on every machine);
- the whole-model stage alone: every planted mistake is run through stage 10 only (logits of a padded
  batch and greedy generation against transformers' twins), and we record whether it fails and
  where its first difference lies;
- two mistakes planted together (a class that inherits both planted steps): the ladder stops at
  the earlier one's stage and names it there, where the other has not yet had a chance to act;
  the last stage alone sees the sum of both, which matches no single entry of the catalogue.

Why it matters: "logits differ" is the answer a learner gets from a comparison of final outputs;
it cannot say which of a dozen steps broke, and it says nothing at all about a mistake that the
final check does not exercise.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import torch
from torch.utils.flop_counter import FlopCounterMode

import minimind_ref as mm
from labkit import Experiment, grade, int_in, print_table
from labkit.grader import BY_KEY, CATALOGUE, LADDER, STAGE, stage_number
from labkit.grader.compare import first_difference, same_behaviour
from labkit.grader.ladder import TOLERANCE, model_episodes, run_model, run_stage
from labkit.i18n import phrase, tr

# Pairs of mistakes planted together: the first is caught earlier on the ladder than the second.
PAIRS = (("unscaled", "rope_on_values"), ("repeat_tiled", "top_left_causal"),
         ("merge_without_transpose", "positions_from_zero"))


def add_arguments(parser):
    # one pair shows the claim; the others show it again, at other stages, for a few seconds more each
    parser.add_argument("--pairs", type=int_in(1, len(PAIRS)), default=1,
                        help=f"how many pairs of mistakes to plant together, 1 to {len(PAIRS)} (default 1)")


def stage_flops(seed: int) -> list[int]:
    """Floating-point operations of each stage, run with minimind_ref's own layer."""
    counts = []
    for stage in LADDER:
        with FlopCounterMode(display=False) as counter:
            if stage.episodes is None:
                run_model(mm.Attention, seed)
            else:
                run_stage(mm.Attention, stage, seed)
        counts.append(counter.get_total_flops())
    return counts


def share_of_logits_off(records, reference, episodes, layout: str) -> float:
    """The share of the padded batch's real-token logits outside the tolerance, in one layout."""
    e = next(i for i, episode in enumerate(episodes) if episode.label == layout)
    got, want = records[(e, -1, "logits")].out, reference[(e, -1, "logits")].out
    atol, rtol = TOLERANCE[torch.float32]
    real = episodes[e].calls[0].real  # [B, T]
    off = ((got - want).abs() > atol + rtol * want.abs()) | ~torch.isfinite(got)
    return off[real].float().mean().item()


def both(first: str, second: str) -> type:
    """A layer with two planted mistakes: each plant overrides its own step."""
    return type(f"{first}+{second}", (BY_KEY[first].plant, BY_KEY[second].plant), {})


def main(argv=None):
    exp = Experiment.start(__doc__, __file__, argv, add_arguments)
    seed = exp.args.seed
    flops = stage_flops(seed)
    whole = stage_number(STAGE["whole_model"]) - 1  # the last forward stage; the backward one follows
    last = flops[whole]
    # tr: the grader's stage and mistake titles in the learner's language, as its report shows them
    print_table(["stage", "floating-point operations", "share of stage 10"],
                [[f"{i + 1}. {tr(s.title)}", f, f / last] for i, (s, f) in enumerate(zip(LADDER, flops))],
                ["", ",d", ".3f"])
    print()

    episodes, reference = model_episodes(seed), run_model(None, seed)
    at_end = {m.key: run_model(m.plant, seed) for m in CATALOGUE}
    rows, missed, missed_backward, starts, shares = [], [], [], set(), []
    for mistake in CATALOGUE:
        difference = first_difference(at_end[mistake.key], reference, episodes, None)
        ladder_stage = stage_number(STAGE[mistake.stage])
        cost = sum(flops[:ladder_stage])
        if difference is None:
            (missed_backward if mistake.stage == "backward" else missed).append(mistake.title)
            seen = phrase("passes")
        elif difference.quantity == "logits":
            starts.add((difference.where["batch"], difference.where["query"]))
            shares.append(share_of_logits_off(at_end[mistake.key], reference, episodes, difference.episode))
            seen = phrase(f"logits differ from sequence {difference.where['batch']}, "
                          f"position {difference.where['query']}")
        else:
            seen = f"{difference.call}: {difference.quantity}"
        rows.append([mistake.title, ladder_stage, cost / last, seen])
    print_table(["mistake", "ladder stage", "ladder cost / stage 10", "stage 10 alone"], rows, ["", "", ".2f", ""])
    print()

    pairs = PAIRS[: exp.args.pairs]
    pair_rows, pair_named, pair_unmatched = [], [], []
    for first, second in pairs:
        cls = both(first, second)
        report = grade(cls, seed=seed, quiet=True)
        end = run_model(cls, seed)
        end_matches = [m.key for m in CATALOGUE if same_behaviour(end, at_end[m.key], episodes)]
        pair_named.append(report.stage.key == BY_KEY[first].stage and [m.key for m in report.matches] == [first])
        pair_unmatched.append(end_matches == [])
        pair_rows.append([f"{tr(BY_KEY[first].title)} + {tr(BY_KEY[second].title)}", stage_number(report.stage),
                          ", ".join(m.title for m in report.matches) or "-", ", ".join(end_matches) or "none"])
    print_table(["two mistakes", "ladder stops at", "ladder names", "stage 10 alone matches"], pair_rows)
    print()

    exp.claim(max(flops[:whole]) < last / 5,
              f"each of stages 1 to 9 costs under a fifth of stage 10 (at most {max(flops[:whole]) / last:.3f} of it)")
    early = [sum(flops[:stage_number(STAGE[m.stage])]) / last for m in CATALOGUE
             if m.stage not in ("whole_model", "backward")]
    exp.claim(max(early) < 0.5, f"the ladder catches each mistake of stages 1 to 9 for under half the cost of "
                                f"stage 10 alone (at most {max(early):.2f} of it)")
    exp.claim(len(missed) == 2 and {"-1e9 filled in float16", "no causal mask after a cache"} == set(missed),
              f"stage 10 alone misses {len(missed)} forward mistakes: {', '.join(tr(title) for title in missed)} "
              f"(no float16, no multi-token step)")
    backward = [m.title for m in CATALOGUE if m.stage == "backward"]
    exp.claim(len(backward) >= 2 and missed_backward == backward,
              f"stage 10 alone misses all {len(backward)} backward mistakes too (their forward is right); "
              f"stage 11, which catches them, costs {flops[-1] / last:.2f} of stage 10 on its own")
    caught_at_end = len(CATALOGUE) - len(missed) - len(missed_backward)
    median = sorted(shares)[len(shares) // 2]
    exp.claim(len(shares) >= caught_at_end // 2 and all(position <= 1 for _, position in starts) and median > 0.5,
              f"{len(shares)} of the {caught_at_end} mistakes stage 10 alone catches show as logits that differ from "
              f"the first or second position on, most of them off (median share {median:.2f}): "
              f"the same symptom whatever the step, where the ladder spreads them over "
              f"{len({m.stage for m in CATALOGUE})} stages")
    exp.claim(all(pair_named), "with two mistakes planted, the ladder stops at the earlier one's stage and names it")
    exp.claim(all(pair_unmatched), "with two mistakes planted, stage 10 alone matches no entry of the catalogue")

    fig, ax = plt.subplots(figsize=(8, 4))
    caught = [sum(m.stage == s.key for m in CATALOGUE) for s in LADDER]
    bars = ax.bar(range(1, len(LADDER) + 1), flops, color="tab:blue")
    for bar, n in zip(bars, caught):
        ax.annotate(f"{n} caught", (bar.get_x() + bar.get_width() / 2, bar.get_height()), ha="center",
                    va="bottom", fontsize=8)
    ax.set_yscale("log")
    ax.set_xticks(range(1, len(LADDER) + 1), [s.title for s in LADDER], rotation=40, ha="right", fontsize=8)
    ax.set(ylabel="floating-point operations", title="cost of each stage, and the mistakes it is the first to catch")
    exp.save(fig, "cost")
    return exp.finish()


if __name__ == "__main__":
    raise SystemExit(main())
