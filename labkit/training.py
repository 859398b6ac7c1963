"""A small, deterministic training loop for the course's tiny models.

Several modules train a model for seconds on the CPU so that there is something real to look at:
a single attention layer learning a key-value lookup (02), heads that specialise (03), an MHA model
to uptrain into GQA (04), a model trained with and without its causal mask (05), and the tiny
MiniMind behind the heatmap exercises. They all train through `train()`, so a learner meets one
loop, not five, and every run is reproducible from its seed.

    from labkit.training import train, next_token_loss

    def batch(step, generator):                  # any data: return (inputs, targets)
        ids = torch.randint(0, 16, (32, 12), generator=generator)
        return ids[:, :-1], ids[:, 1:]

    log = train(model, batch, steps=300, lr=3e-3, seed=0)
    log.losses[-1], log.seconds

`model(inputs)` may return a tensor of logits or an object with `.logits` (as
`MiniMindForCausalLM` does); the default loss is next-token cross-entropy on those logits.

Training runs on one CPU thread unless told otherwise (`threads=`). The course's models are tiny,
so each step is hundreds of small operations: on a quiet machine two threads save little (2.5 s
against 3.0 s for module 05's 300 steps), and on a busy one they cost a great deal, because at
every operation each thread waits for the other, which the busy machine keeps descheduling (42 to
110 s against 3 to 12 s, measured with one other busy program on 2 cores). One thread also makes
the sums, and so the trained weights, the same whatever thread count the machine offers.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

from .arguments import flag, real, whole

Batch = tuple[torch.Tensor, torch.Tensor]
BatchFn = Callable[[int, torch.Generator], Batch]
LossFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]

IGNORE_INDEX = -100  # targets with this value add nothing to the loss (padding, prompt tokens)
# More threads than this have no use for the course's tiny models; torch gives each its own pool,
# and a thousand ran this machine out of memory.
MAX_THREADS = 64


@dataclass
class TrainingLog:
    """What a run did: the loss after every step and the wall time it took."""

    losses: list[float] = field(default_factory=list)
    seconds: float = 0.0

    def final_loss(self, last: int = 20) -> float:
        """The mean of the last `last` losses: one step's loss is too noisy to report."""
        if not self.losses:
            raise ValueError("no training steps were run, so there is no final loss")
        tail = self.losses[-last:]
        return sum(tail) / len(tail)


def logits_of(output) -> torch.Tensor:
    """A model's logits, whether it returns them directly or in an output object."""
    return output if isinstance(output, torch.Tensor) else output.logits


def next_token_loss(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Cross-entropy of `logits` [..., V] against `targets` [...], skipping IGNORE_INDEX."""
    if logits.shape[:-1] != targets.shape:
        raise ValueError(f"logits {tuple(logits.shape)} need targets of shape {tuple(logits.shape[:-1])}, "
                         f"got {tuple(targets.shape)}")
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), targets.reshape(-1),
                           ignore_index=IGNORE_INDEX)


@contextmanager
def fixed_threads(threads: int = 1) -> Iterator[None]:
    """Run the block on exactly `threads` CPU threads, then restore the previous setting."""
    threads = whole("fixed_threads", "threads", threads, low=1, high=MAX_THREADS)
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def learning_rate(step: int, steps: int, lr: float, warmup: int) -> float:
    """Linear warm-up for `warmup` steps, then a cosine decay to a tenth of `lr`."""
    if step < warmup:
        return lr * (step + 1) / warmup
    progress = (step - warmup) / max(1, steps - warmup)
    return lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress)))


def train(model: nn.Module, batch: BatchFn, *, steps: int, lr: float = 3e-3, seed: int = 0,
          warmup: int | None = None, weight_decay: float = 0.0, clip: float = 1.0,
          loss_fn: LossFn = next_token_loss, progress: bool = False, log_every: int = 0,
          threads: int = 1) -> TrainingLog:
    """Train `model` in place with AdamW for `steps` steps and return the losses.

    `batch(step, generator)` returns `(inputs, targets)`; it draws its randomness from `generator`,
    which is seeded from `seed`, so the same call trains the same weights bit for bit (on the same
    machine and torch version). `progress=True` draws a progress bar on stderr; `log_every=N` prints
    the loss every N steps. `clip` caps the gradient's norm at each step (0: no cap). It runs on
    `threads` CPU threads (see the module docstring), and the caller's thread count is restored
    afterwards.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"train: model must be a torch.nn.Module, got {type(model).__name__}.")
    for name, function in (("batch", batch), ("loss_fn", loss_fn)):
        if not callable(function):
            raise TypeError(f"train: {name} must be a function, got {type(function).__name__}.")
    steps, seed = whole("train", "steps", steps, low=1), whole("train", "seed", seed, low=0, high=2**64 - 1)
    warmup = None if warmup is None else whole("train", "warmup", warmup, low=0)
    lr = real("train", "lr", lr, low=0, low_open=True)
    weight_decay = real("train", "weight_decay", weight_decay, low=0)
    clip = real("train", "clip", clip, low=0)  # 0: no clipping; below 0, clipping would reverse the gradient
    progress, log_every = flag("train", "progress", progress), whole("train", "log_every", log_every, low=0)
    threads = whole("train", "threads", threads, low=1, high=MAX_THREADS)
    with fixed_threads(threads):  # restores the caller's thread count, even after an error
        warmup = max(1, steps // 20) if warmup is None else max(1, warmup)
        generator = torch.Generator().manual_seed(seed)
        optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay)
        log = TrainingLog()
        model.train()
        start = time.perf_counter()
        for step in range(steps):
            for group in optimizer.param_groups:
                group["lr"] = learning_rate(step, steps, lr, warmup)
            inputs, targets = batch(step, generator)
            loss = loss_fn(logits_of(model(inputs)), targets)
            if not torch.isfinite(loss):
                raise FloatingPointError(f"the loss became {loss.item()} at step {step}: lower lr (now {lr})")
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            if clip:
                nn.utils.clip_grad_norm_(model.parameters(), clip)
            optimizer.step()
            log.losses.append(loss.item())
            if progress:
                _draw_progress(step + 1, steps, log.losses[-1], time.perf_counter() - start)
            if log_every and ((step + 1) % log_every == 0 or step + 1 == steps):
                print(f"step {step + 1:>5}/{steps}  loss {log.final_loss(log_every):.4f}")
        if progress:
            print(file=sys.stderr)
        log.seconds = time.perf_counter() - start
        model.eval()
        return log


def _draw_progress(done: int, total: int, loss: float, seconds: float, width: int = 30) -> None:
    filled = width * done // total
    bar = "#" * filled + "-" * (width - filled)
    print(f"\r[{bar}] {done}/{total}  loss {loss:.4f}  {seconds:5.1f}s", end="", file=sys.stderr, flush=True)
