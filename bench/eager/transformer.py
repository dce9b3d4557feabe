#!/usr/bin/python3
"""PyTorch-eager reference for the canonical transformer workload
(docs/workloads.md "transformer").

A nanoGPT-style decoder-only LM (the usual PyTorch-1.x idiom: fused qkv
nn.Linear, attention written out with a registered causal-mask buffer and
masked_fill, nn.GELU MLP, nn.LayerNorm pre-norm, learned positions, no-bias
head, GPT-2 init): d_model 128, 2 layers, 4 heads, FFN 4x, seq_len 128,
vocab 64, batch 16, AdamW(lr 3e-4, weight_decay 0.01) on all parameters,
cross-entropy. Data: a random hierarchical order-2 Markov chain (bigram rows
m_b ~ Dirichlet(0.2), P(.|a,b) ~ Dirichlet(8 m_b + 0.01)); a corpus of 256
streams x 4096 tokens sampled at setup (start pair: uniform plus a 64-token
burn-in, instead of the plugin's exact stationary draw: same kind of text,
same work); each step gathers 16 random windows of 129 tokens (never across
a stream's end) with torch.randint and indexing. grad_accum 1. Loss read
back every step (sync_every 1).
One step = one optimiser step on 16 x 128 tokens; unit: tokens/s.
"""
import math
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from common import compiled, measure, parse_args

VOCAB, D, LAYERS, HEADS, SEQ, BATCH, LR, WD = 64, 128, 2, 4, 128, 16, 3e-4, 0.01
STREAMS, STREAM_LEN, BURN_IN = 256, 4096, 64


def sample_corpus(rng):
    m = rng.dirichlet(np.full(VOCAB, 0.2), size=VOCAB)  # [b, c]
    p = np.stack([np.stack([rng.dirichlet(8 * m[b] + 0.01) for b in range(VOCAB)])
                  for _ in range(VOCAB)])  # [a, b, c]
    cdf = np.cumsum(p, axis=-1)
    n = BURN_IN + STREAM_LEN
    toks = np.empty((STREAMS, n), dtype=np.int64)
    toks[:, :2] = rng.integers(0, VOCAB, size=(STREAMS, 2))
    for i in range(2, n):
        rows = cdf[toks[:, i - 2], toks[:, i - 1]]  # [S, V]
        u = rng.random((STREAMS, 1)) * rows[:, -1:]
        toks[:, i] = np.minimum((rows < u).sum(axis=1), VOCAB - 1)
    return torch.from_numpy(toks[:, BURN_IN:].copy())


class CausalSelfAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.c_attn = nn.Linear(D, 3 * D)
        self.c_proj = nn.Linear(D, D)
        self.register_buffer("bias", torch.tril(torch.ones(SEQ, SEQ)).view(1, 1, SEQ, SEQ))

    def forward(self, x):
        b, t, c = x.size()
        q, k, v = self.c_attn(x).split(D, dim=2)
        k = k.view(b, t, HEADS, c // HEADS).transpose(1, 2)
        q = q.view(b, t, HEADS, c // HEADS).transpose(1, 2)
        v = v.view(b, t, HEADS, c // HEADS).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :t, :t] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(b, t, c)
        return self.c_proj(y)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln_1 = nn.LayerNorm(D)
        self.attn = CausalSelfAttention()
        self.ln_2 = nn.LayerNorm(D)
        self.mlp = nn.Sequential(nn.Linear(D, 4 * D), nn.GELU(), nn.Linear(4 * D, D))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = nn.Embedding(VOCAB, D)
        self.wpe = nn.Embedding(SEQ, D)
        self.blocks = nn.ModuleList([Block() for _ in range(LAYERS)])
        self.ln_f = nn.LayerNorm(D)
        self.lm_head = nn.Linear(D, VOCAB, bias=False)
        self.apply(self._init_weights)
        for name, p in self.named_parameters():
            if name.endswith("c_proj.weight") or name.endswith("mlp.2.weight"):
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * LAYERS))

    @staticmethod
    def _init_weights(module):
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)

    def forward(self, idx, targets):
        t = idx.size(1)
        pos = torch.arange(t, dtype=torch.long)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.blocks:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))
        return F.cross_entropy(logits.view(-1, VOCAB), targets.reshape(-1))


def main():
    args = parse_args(__doc__, steps=3, warmup=2)
    t_setup = time.perf_counter()
    corpus = sample_corpus(np.random.default_rng(args.seed))  # [S, L]
    offsets = torch.arange(SEQ + 1)
    model = GPT()
    compiled(args, model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=WD)
    last = {"loss": 0.0}

    def get_batch():
        s = torch.randint(0, STREAMS, (BATCH, 1))
        start = torch.randint(0, STREAM_LEN - SEQ, (BATCH, 1))
        w = corpus[s, start + offsets]  # [B, SEQ + 1]
        return w[:, :-1], w[:, 1:]

    def step():
        x, y = get_batch()
        loss = model(x, y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        last["loss"] = loss.item()

    measure("transformer", "tokens", step, float(BATCH * SEQ), args,
            setup_s=time.perf_counter() - t_setup)


if __name__ == "__main__":
    main()
