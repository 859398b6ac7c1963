"""Heads of the trained tiny MiniMind park their weight on the BOS token when they have nothing to
do: the induction heads do it in the first copy of a repeated span, where nothing can be copied,
and leave BOS in the second copy; one head does it on random characters but not on code. And it is
the BOS token they park on, not whatever comes first: without BOS the parking is gone.

Three measurements of the mean attention weight on position 0 (labkit/tiny_heads.py,
`first_token_scores`), on prompts of BOS + n random printable characters + the same n again:
1. each induction head, over the queries of the first copy (nothing has occurred before, so there
   is nothing to copy) and over those of the second copy (the earlier occurrence is there);
2. the head that parks most (the "sink head"), on those prompts and on windows of held-out
   Python code (files the model never trained on), each after a BOS;
3. the same prompts with the BOS removed, so that position 0 holds an ordinary character.

Why it matters: a softmax row must sum to 1, so a head cannot say "nothing here"; it can only put
its weight somewhere harmless. Trained models learn to use the first token for that (an "attention
sink", Xiao et al., arXiv 2309.17453). Reading a heatmap, a bright first column means "this head is
idle here", not "the first token matters".
"""

from __future__ import annotations

import torch

from labkit import Experiment, int_in, print_table, show_heatmaps
from labkit.i18n import phrase
from labkit.tiny_heads import attention_weights, first_token_scores, measure_head_scores, repeated_probe, text_probe
from labkit.tiny_model import load_tiny_model_or_exit

PARKS = 0.5  # a head "parks" when it puts more than half its weight on position 0
IDLE = 0.4  # the induction heads, on average, put more than this on BOS in the first copy ...
TIMES = 5.0  # ... and parking in one setting is at least this many times the weight in the other


def add_arguments(parser):
    parser.add_argument("--count", type=int_in(1, 256), default=16, help="prompts per measurement (default 16)")
    parser.add_argument("--span", type=int_in(2, 47), default=24,
                        help="characters in the repeated span, n, from 2 to 47 (default 24)")
    # the tiny model has 256 positions
    parser.add_argument("--code-length", type=int_in(3, 256), default=64,
                        help="tokens per window of code, from 3 to 256 (default 64)")


def main(argv=None):
    exp = Experiment.start(__doc__, __file__, argv, add_arguments)
    args = exp.args
    model, tokenizer = load_tiny_model_or_exit()  # a missing checkpoint: says how to make it, exits 2
    torch.set_num_threads(1)  # small matrices: one thread is fastest on a shared machine

    n = args.span
    scores = measure_head_scores(model, seed=args.seed, count=args.count, span=n)
    inductions, sink = scores.induction_heads(), scores.sink_head
    spans = repeated_probe(args.count, n, seed=args.seed)
    on_spans = attention_weights(model, spans).mean(0)  # [L, H, T, T]
    first_copy = first_token_scores(on_spans, last_query=n)  # [L, H]: queries 1..n
    second_copy = on_spans[..., n + 1:, 0].mean(-1)  # queries n+1..2n
    code = attention_weights(model, text_probe(args.count, args.code_length, seed=args.seed)).mean(0)
    on_code = first_token_scores(code)
    without_bos = first_token_scores(attention_weights(model, spans[:, 1:]).mean(0))  # position 0: a character

    L, H = scores.first.shape
    role = {(layer, head): "induction" if (layer, head) in inductions else "sink" if (layer, head) == sink else ""
            for layer in range(L) for head in range(H)}
    rows = [[f"{layer}.{head}", role[(layer, head)], first_copy[layer, head].item(), second_copy[layer, head].item(),
             on_code[layer, head].item(), scores.first[layer, head].item(), without_bos[layer, head].item()]
            for layer in range(L) for head in range(H)]
    print(f"mean weight on position 0 ({args.count} prompts each; span n = {n}, code windows of "
          f"{args.code_length} tokens)")
    print_table(["head", "role", "1st copy", "2nd copy", "code", "spans, all", "spans, no BOS"], rows,
                ["", "", ".3f", ".3f", ".3f", ".3f", ".3f"])
    print("('1st copy' and '2nd copy': the queries of each copy; 'spans, all': every query; 'no BOS': the "
          "same prompts without BOS, position 0 being their first character)")
    print()

    idle = torch.stack([first_copy[h] for h in inductions]).mean().item() if inductions else 0.0
    busy = torch.stack([second_copy[h] for h in inductions]).mean().item() if inductions else 1.0
    exp.claim(bool(inductions) and idle > IDLE and idle > 2 * TIMES * busy,
              f"the induction heads park on BOS when there is nothing to copy: {idle:.2f} of their weight "
              f"in the first copy, {busy:.3f} in the second, where the earlier occurrence is")
    parked, on_code_sink = scores.first[sink].item(), on_code[sink].item()
    exp.claim(parked > PARKS and parked > TIMES * on_code_sink,
              f"head {sink} parks {parked:.2f} of its weight on BOS on random characters but only "
              f"{on_code_sink:.3f} on code, where it has work to do")
    moved = without_bos[sink].item()
    exp.claim(moved < parked / 2,
              f"it parks on the BOS token, not on the first position: without BOS, head {sink} puts "
              f"{moved:.3f} on position 0 (with BOS: {parked:.2f})")

    # One short prompt, drawn with and without its BOS: the sink head's bright first column moves away.
    short = repeated_probe(1, 10, seed=args.seed)[0]  # BOS + 10 characters + the same 10
    for name, caption, ids in (("with_bos", phrase("with BOS"), short),
                               ("without_bos", phrase("without BOS"), short[1:])):
        weights = attention_weights(model, ids)[0][sink]  # [T, T]
        fig = show_heatmaps(weights, x_labels=tokenizer.labels(ids), titles=f"head {sink[0]}.{sink[1]}, {caption}")
        exp.save(fig, name)
    return exp.finish()


if __name__ == "__main__":
    raise SystemExit(main())
