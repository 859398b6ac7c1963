"""The course's small trained MiniMind: its size, its training recipe, its checkpoint (module 09).

Heatmaps of random weights teach little: attention patterns mean something only once a model has
learned. Nothing can be downloaded, so the course trains its own: a `MiniMindForCausalLM` small
enough to train on a laptop CPU in a few minutes, on data every machine has (see tiny_data.py),
saved in the safetensors format (plain tensors and a text header: loading it runs no code).

    make train-tiny                  # train it, save the checkpoint, report what it learned
    make train-tiny ARGS=--check     # train it again; check the result equals the saved file, bit for bit

    from minimind_ref.teaching.tiny_model import load_tiny_model, load_tiny_model_or_exit
    model, tokenizer = load_tiny_model()          # eval mode; FileNotFoundError says how to make it
    model, tokenizer = load_tiny_model_or_exit()  # in a script: prints that message and exits 2 instead

Training takes about three minutes on one CPU thread (2000 steps; the committed checkpoint's
report, tiny_minimind.json, records the time it took).

Bit for bit: the weights depend on the recipe (sizes, steps, learning rate, seed), the training
text (its SHA-256 is recorded), the torch version and the number of CPU threads, since a sum split
across threads is rounded differently. Training therefore runs on exactly `THREADS` thread(s),
whatever the machine has. Given those, the same bytes come out every time on the same kind of CPU
(tests train twice at a reduced size and compare, and retrain the first PREFIX_STEPS steps of the
real recipe and compare with the hash the report recorded; `--check` retrains the full model and
compares it with the committed file). The safetensors header holds one key only: the format stores
its keys in a hash map, so several keys would come out in a different order, and different bytes,
from one save to the next.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import platform
import sys
import tempfile
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Tuple

import torch
import torch.nn.functional as F

from .. import MiniMindConfig, MiniMindForCausalLM
from .tiny_data import (BOS, HELD_OUT_FILES, TRAIN_FILES, VOCAB_SIZE, ByteTokenizer, DataMix,
                        held_out_text, text_sha256, train_text)
from .training import TrainingLog, train

CHECKPOINT_DIR = Path(__file__).resolve().parent / "checkpoints"
CHECKPOINT = CHECKPOINT_DIR / "tiny_minimind.safetensors"
REPORT = CHECKPOINT_DIR / "tiny_minimind.json"  # what the training measured: times, losses, head scores

THREADS = 1  # training and evaluation threads: results depend on it (see the module docstring)
TIED = "lm_head.weight"  # the same matrix as model.embed_tokens.weight: saved once, under that name
METADATA_KEY = "attention_lab.tiny_minimind"  # the one key of the checkpoint's text header
PREFIX_STEPS = 20  # the report records the weights' hash after this many steps, for a fast test

SAMPLE_PROMPTS = (  # greedy samples printed after training: code, and a span to continue by induction
    "    def __init__(self",
    "import ",
    "for line in ",
    "Zq8#mW!v2Zq8#m",
)


def tiny_config() -> MiniMindConfig:
    """The tiny model's shape: MiniMind's layout, shrunk. Byte-level vocabulary (256 bytes + BOS)."""
    return MiniMindConfig(hidden_size=128, num_hidden_layers=2, num_attention_heads=4,
                          num_key_value_heads=4, vocab_size=VOCAB_SIZE, max_position_embeddings=256,
                          bos_token_id=BOS, eos_token_id=BOS)


@dataclass(frozen=True)
class Recipe:
    """How the tiny model is trained. Every field changes the weights."""

    steps: int = 2000
    lr: float = 3e-3
    warmup: int = 100
    seed: int = 0
    batch_size: int = 16
    seq_len: int = 128
    synthetic: int = 8  # rows of each batch that are repeated random spans; the rest are code
    first_copy_from: int = 1200  # the step from which a span's unpredictable first copy is scored

    @classmethod
    def with_steps(cls, steps: int, seed: int = 0) -> "Recipe":
        """The recipe stretched or shrunk to `steps` steps (warm-up and phases in proportion)."""
        if steps < 1:
            raise ValueError(f"steps must be at least 1, got {steps}.")
        base = cls()
        return cls(steps=steps, seed=seed, warmup=max(1, base.warmup * steps // base.steps),
                   first_copy_from=base.first_copy_from * steps // base.steps)

    @property
    def mix(self) -> DataMix:
        return DataMix(self.batch_size, self.seq_len, self.synthetic, self.first_copy_from)


@contextmanager
def fixed_threads(threads: int = THREADS) -> Iterator[None]:
    """Run the block on exactly `threads` CPU threads, then restore the previous setting."""
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def build_model(seed: int = 0) -> MiniMindForCausalLM:
    """A freshly initialised tiny model, its weights drawn from `seed`."""
    torch.manual_seed(seed)
    return MiniMindForCausalLM(tiny_config())


def train_tiny(recipe: Recipe = Recipe(), steps: Optional[int] = None, progress: bool = False,
               log_every: int = 0) -> Tuple[MiniMindForCausalLM, TrainingLog]:
    """Train the tiny model by `recipe` with the course's shared loop; returns (model in eval
    mode, log). `steps` stops early: the first `steps` steps of the same run (warm-up and learning
    rate as in the full run, as long as steps <= recipe.warmup), for tests."""
    if steps is not None and steps > recipe.warmup and steps != recipe.steps:
        raise ValueError(f"steps={steps} would change the learning-rate schedule: stop early only "
                         f"within the warm-up (steps <= {recipe.warmup}) or train all {recipe.steps}.")
    with fixed_threads():
        model = build_model(recipe.seed)
        log = train(model, recipe.mix.batch_fn(train_text()), steps=steps or recipe.steps, lr=recipe.lr,
                    seed=recipe.seed, warmup=recipe.warmup, progress=progress, log_every=log_every)
    return model, log


# ----------------------------------------------------------------------------- checkpoints


def _tensors(model: MiniMindForCausalLM) -> Dict[str, torch.Tensor]:
    """The state dict to save: every tensor once (the tied output matrix is the embedding)."""
    state = model.state_dict()
    if model.config.tie_word_embeddings:
        state.pop(TIED)
    return {name: tensor.detach().contiguous() for name, tensor in state.items()}


def _header(model: MiniMindForCausalLM, recipe: Recipe) -> Dict[str, str]:
    """The safetensors metadata: everything the weights depend on, as one JSON text under one key.
    One key, because the file format does not keep the order of several keys (it stores them in
    a hash map), and the file's bytes must not change from one save to the next."""
    about = {
        "config": model.config.to_dict(),
        "recipe": asdict(recipe),
        "text_sha256": text_sha256(),
        "torch": torch.__version__.split("+")[0],
        "threads": THREADS,
    }
    return {METADATA_KEY: json.dumps(about, sort_keys=True)}


def checkpoint_bytes(model: MiniMindForCausalLM, recipe: Recipe) -> bytes:
    """The checkpoint file's exact bytes (safetensors: a JSON header, then the raw tensors)."""
    from safetensors.torch import save

    return save(_tensors(model), metadata=_header(model, recipe))


def save_checkpoint(model: MiniMindForCausalLM, recipe: Recipe, path: Path = CHECKPOINT) -> str:
    """Write the checkpoint to `path`; returns its SHA-256."""
    data = checkpoint_bytes(model, recipe)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return hashlib.sha256(data).hexdigest()


def checkpoint_metadata(path: Path = CHECKPOINT) -> dict:
    """The text header of a checkpoint: config, recipe, text hash, torch version, threads."""
    from safetensors import safe_open

    _require(path)
    with safe_open(str(path), framework="pt") as handle:
        header = handle.metadata() or {}
    if METADATA_KEY not in header:
        raise ValueError(f"{path} is not a checkpoint of the tiny MiniMind (its header lacks {METADATA_KEY!r}).")
    return json.loads(header[METADATA_KEY])


def load_tiny_model(path: Path = CHECKPOINT) -> Tuple[MiniMindForCausalLM, ByteTokenizer]:
    """The trained tiny model (eval mode) and its tokenizer. A missing file raises
    FileNotFoundError that says how to make it."""
    from safetensors.torch import load_file

    path = Path(path)
    _require(path)
    config = MiniMindConfig(**checkpoint_metadata(path)["config"])
    model = MiniMindForCausalLM(config)
    missing, unexpected = model.load_state_dict(load_file(str(path)), strict=False)
    if unexpected or set(missing) - {TIED}:
        raise ValueError(f"{path} does not fit the tiny model: missing {sorted(missing)}, unexpected {sorted(unexpected)}.")
    return model.eval(), ByteTokenizer()


def load_tiny_model_or_exit(path: Path = CHECKPOINT) -> Tuple[MiniMindForCausalLM, ByteTokenizer]:
    """load_tiny_model() for a command-line script: when the checkpoint is missing, print the
    message that says how to make it (no traceback) and exit with status 2, as for a bad argument."""
    try:
        return load_tiny_model(path)
    except FileNotFoundError as error:
        print(error, file=sys.stderr)
        raise SystemExit(2) from None


def _require(path: Path) -> None:
    if not Path(path).is_file():
        raise FileNotFoundError(
            f"The tiny trained MiniMind is missing ({path}). Make it with `make train-tiny` "
            f"(a few minutes on a CPU); it is saved to {CHECKPOINT.relative_to(CHECKPOINT.parents[3])}.")


def sha256_of(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def parameter_count(model: MiniMindForCausalLM) -> int:
    """Distinct parameters (the tied embedding counted once)."""
    return sum(p.numel() for p in model.parameters())


# ------------------------------------------------------------------------- what it learned


@torch.no_grad()
def held_out_loss(model: MiniMindForCausalLM, seq_len: int = 128) -> float:
    """Mean next-byte loss (nats) on the held-out files, read in consecutive windows of
    seq_len - 1 bytes, each after a BOS. Chance (uniform over the vocabulary) is ln(257)."""
    text = held_out_text()
    width = seq_len - 1
    count = text.numel() // width
    windows = text[: count * width].view(count, width)
    ids = torch.cat([torch.full((count, 1), BOS), windows], dim=1)  # [N, seq_len]
    with fixed_threads():
        logits = model(ids[:, :-1]).logits
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1)).item()


def greedy_samples(model: MiniMindForCausalLM, tokenizer: ByteTokenizer, prompts=SAMPLE_PROMPTS,
                   new_tokens: int = 40) -> List[Tuple[str, str]]:
    """(prompt, greedy continuation) for each prompt."""
    samples = []
    with fixed_threads():
        for prompt in prompts:
            ids = torch.tensor([tokenizer.encode(prompt)])
            out = model.generate(ids, max_new_tokens=new_tokens)
            samples.append((prompt, tokenizer.decode(out[0, ids.shape[1]:])))
    return samples


def report(model: MiniMindForCausalLM, recipe: Recipe, log: Optional[TrainingLog], path: Path,
           cpu_seconds: Optional[float], prefix_sha256: Optional[str]) -> dict:
    """Everything a learner (and the tests) want to know about a trained checkpoint."""
    from .tiny_heads import measure_head_scores, repeat_loss, repeated_probe

    with fixed_threads():
        scores = measure_head_scores(model)
        probe = repeated_probe()
        spans = repeat_loss(model, probe, span=24)
    rounded = lambda t: [[round(v, 4) for v in row] for row in t.tolist()]  # noqa: E731
    return {
        "checkpoint": Path(path).name,
        "sha256": sha256_of(path),
        "bytes": Path(path).stat().st_size,
        "parameters": parameter_count(model),
        "config": model.config.to_dict(),
        "recipe": asdict(recipe),
        "depends_on": {
            "text_sha256": text_sha256(),
            "train_files": list(TRAIN_FILES),
            "held_out_files": list(HELD_OUT_FILES),
            "torch": torch.__version__,
            "threads": THREADS,
            "python_used": platform.python_version(),
        },
        "training": None if log is None else {
            "wall_seconds": round(log.seconds, 1),
            "cpu_seconds": None if cpu_seconds is None else round(cpu_seconds, 1),
            "final_loss": round(log.final_loss(50), 4),
        },
        "prefix_check": None if prefix_sha256 is None else {"steps": PREFIX_STEPS, "sha256": prefix_sha256},
        "held_out_loss": round(held_out_loss(model, recipe.seq_len), 4),
        "chance_loss": round(math.log(VOCAB_SIZE), 4),
        "repeat_loss": round(spans, 4),
        "samples": [{"prompt": p, "completion": c} for p, c in greedy_samples(model, ByteTokenizer())],
        "head_scores": {"previous": rounded(scores.previous), "induction": rounded(scores.induction),
                        "first": rounded(scores.first)},
        "previous_token_head": list(scores.previous_token_head),
        "induction_heads": [list(h) for h in scores.induction_heads()],
        "sink_head": list(scores.sink_head),
    }


def load_report(path: Path = REPORT) -> dict:
    if not Path(path).is_file():
        raise FileNotFoundError(f"{path} is missing: `make train-tiny` writes it with the checkpoint.")
    return json.loads(Path(path).read_text())


# ------------------------------------------------------------------------------ command line


def _print_report(info: dict) -> None:
    from .experiment import print_table

    print()
    print(f"parameters: {info['parameters']:,}; checkpoint {info['checkpoint']}: {info['bytes'] / 1e6:.2f} MB")
    print(f"sha256: {info['sha256']}")
    print(f"held-out loss: {info['held_out_loss']:.3f} nats per byte (chance, uniform over "
          f"{VOCAB_SIZE} tokens: ln {VOCAB_SIZE} = {info['chance_loss']:.3f})")
    print(f"loss on the second copy of a repeated random span: {info['repeat_loss']:.3f} "
          f"(guessing among 95 printable characters: ln 95 = {math.log(95):.3f})")
    print("\ngreedy samples (prompt | continuation):")
    for sample in info["samples"]:
        print(f"  {sample['prompt']!r} | {sample['completion']!r}")
    print("\nhead scores on BOS + 24 random characters + the same 24 again, the mean attention weight on:")
    print("the previous token; the token after the earlier occurrence (second copy); position 0, BOS")
    scores = info["head_scores"]
    rows = [[layer, head, scores["previous"][layer][head], scores["induction"][layer][head],
             scores["first"][layer][head]]
            for layer in range(len(scores["previous"])) for head in range(len(scores["previous"][0]))]
    print_table(["layer", "head", "previous", "induction", "first"], rows, ["", "", ".3f", ".3f", ".3f"])
    print(f"previous-token head: {tuple(info['previous_token_head'])}; induction heads (score above 0.5): "
          f"{[tuple(h) for h in info['induction_heads']] or 'none'}; the head that parks most on BOS: "
          f"{tuple(info['sink_head'])}")


def _print_losses(log: TrainingLog, recipe: Recipe, rows: int = 10) -> None:
    """The training loss, averaged over each tenth of the run."""
    size = max(1, len(log.losses) // rows)
    print("training loss (mean over each stretch of steps; the rise after step "
          f"{recipe.first_copy_from} is the random first copies, scored from then on):")
    for start in range(0, len(log.losses), size):
        chunk = log.losses[start:start + size]
        print(f"  steps {start + 1:>5}-{start + len(chunk):<5} {sum(chunk) / len(chunk):.3f}")


def _check(progress: bool) -> int:
    """Retrain by the committed checkpoint's own recipe and compare the bytes with it."""
    expected = CHECKPOINT
    _require(expected)
    saved = checkpoint_metadata(expected)
    recipe = Recipe(**saved["recipe"])
    print(f"Rebuilding {expected.name} by its recipe: {recipe}.")
    if saved.get("text_sha256") != text_sha256():
        print(f"Cannot rebuild bit for bit: this Python's standard-library text (sha256 {text_sha256()[:12]}...) "
              f"is not the text the checkpoint was trained on ({saved.get('text_sha256', '?')[:12]}...).")
        return 1
    model, _ = train_tiny(recipe, progress=progress)
    with tempfile.TemporaryDirectory() as folder:
        rebuilt = save_checkpoint(model, recipe, Path(folder) / CHECKPOINT.name)
    committed = sha256_of(expected)
    if rebuilt == committed:
        print(f"Rebuilt bit for bit: sha256 {rebuilt} matches {expected.name}.")
        return 0
    print(f"The rebuilt checkpoint differs from {expected.name}: sha256 {rebuilt} != {committed}.")
    print(f"It was made with torch {saved.get('torch')} on {saved.get('threads')} thread(s); this is torch "
          f"{torch.__version__}. Another torch version or CPU instruction set can round differently.")
    return 1


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="make train-tiny ARGS=...", description="Train the course's tiny MiniMind (module 09) "
        "on the CPU, save it as safetensors and report its held-out loss, samples and head scores.")
    parser.add_argument("--check", action="store_true",
                        help="retrain by the committed checkpoint's recipe and check the result equals it, bit for "
                             "bit (about as long as training; saves nothing)")
    parser.add_argument("--out", type=Path, default=CHECKPOINT, help=f"where to save (default: {CHECKPOINT.name} "
                        f"in {CHECKPOINT_DIR.name}/); the report goes next to it, as .json")
    parser.add_argument("--steps", type=int, default=Recipe.steps, help=f"training steps (default {Recipe.steps})")
    parser.add_argument("--seed", type=int, default=Recipe.seed, help=f"seed (default {Recipe.seed})")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    args = parser.parse_args(argv)
    progress = not args.no_progress
    if args.check:
        return _check(progress)
    recipe = Recipe.with_steps(args.steps, args.seed)
    print(f"Training the tiny MiniMind: {recipe.steps} steps of {recipe.batch_size} sequences x {recipe.seq_len} "
          f"tokens ({recipe.synthetic} of them repeated random spans), on {THREADS} CPU thread(s).")

    prefix, _ = train_tiny(recipe, steps=min(PREFIX_STEPS, recipe.warmup))
    prefix_sha = hashlib.sha256(checkpoint_bytes(prefix, recipe)).hexdigest()
    cpu_start = time.process_time()
    model, log = train_tiny(recipe, progress=progress)
    cpu_seconds = time.process_time() - cpu_start
    _print_losses(log, recipe)
    sha = save_checkpoint(model, recipe, args.out)
    print(f"trained in {log.seconds:.1f} s wall clock ({cpu_seconds:.1f} s of CPU time on {THREADS} thread(s): "
          f"about the wall time on an idle machine); saved {args.out} (sha256 {sha[:12]}...)")
    info = report(model, recipe, log, args.out, cpu_seconds, prefix_sha)
    args.out.with_suffix(".json").write_text(json.dumps(info, indent=1) + "\n")
    _print_report(info)
    return 0


if __name__ == "__main__":
    sys.exit(main())
