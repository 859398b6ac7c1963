"""The SwiGLU feed-forward network that follows attention in every block.

down(silu(gate(x)) * up(x)): a gated MLP (Shazeer 2020, arXiv 2002.05202). `gate_proj` decides,
per hidden unit, how much of `up_proj`'s value passes; `down_proj` maps back to the model width.
Attention mixes information across positions; this mixes it across channels, a position at a time.
"""

import torch
import torch.nn.functional as F
from torch import nn

from .config import MiniMindConfig


class FeedForward(nn.Module):
    def __init__(self, config: MiniMindConfig):
        super().__init__()
        self.gate_proj = nn.Linear(config.hidden_size, config.intermediate_size, bias=False)
        self.up_proj = nn.Linear(config.hidden_size, config.intermediate_size, bias=False)
        self.down_proj = nn.Linear(config.intermediate_size, config.hidden_size, bias=False)
        self.dropout = config.dropout  # in training only

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # [B, T, C] -> [B, T, C]
        out = self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))
        return torch.dropout(out, self.dropout, self.training)
