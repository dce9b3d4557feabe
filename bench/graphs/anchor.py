#!/usr/bin/env python3
"""GPU anchors for gpusweep's workloads, run with the torch of the GPU machine at hand
(the script of the first H100 run's records, 2026-11-26, kept here as it ran there;
bench/graphs/graphs.sh runs it beside the plugins).
  dqn: the canonical DQN update (MLP 4-128-128-2, batch 64, Huber, Adam lr 1e-3,
       replay on the device, gather sampling) eager vs captured in a CUDA graph
       (torch.cuda.graph, capturable Adam); updates/s, median of 5 blocks.
  gpt: the canonical transformer step (d 128, 2 layers, 4 heads, seq 128, vocab 64,
       batch 16, AdamW) eager vs torch.compile (MODE); tokens/s.
Usage: anchor.py dqn|gpt [MODE] [--device cuda]"""
import json, math, statistics, sys, time
import torch, torch.nn as nn, torch.nn.functional as F

dev = sys.argv[sys.argv.index("--device") + 1] if "--device" in sys.argv else "cuda"
args = [a for a in sys.argv[1:] if not a.startswith("--") and a != dev]
what = args[0]
mode = args[1] if len(args) > 1 else "eager"

def sync():
    if dev == "cuda":
        torch.cuda.synchronize()

def blocks(step, n_per, k=5, warm=20):
    for _ in range(warm):
        step()
    sync()
    out = []
    for _ in range(k):
        t = time.perf_counter()
        for _ in range(n_per):
            step()
        sync()
        out.append(n_per / (time.perf_counter() - t))
    return statistics.median(out), statistics.stdev(out) / statistics.mean(out)

if what == "dqn":
    torch.manual_seed(0)
    N, B = 50000, 64
    obs = torch.randn(N, 4, device=dev); nxt = torch.randn(N, 4, device=dev)
    act = torch.randint(0, 2, (N,), device=dev); rew = torch.ones(N, device=dev)
    done = (torch.rand(N, device=dev) < 0.02).float()
    q = nn.Sequential(nn.Linear(4, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 2)).to(dev)
    tq = nn.Sequential(nn.Linear(4, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 2)).to(dev)
    tq.load_state_dict(q.state_dict())
    graphed = mode == "graph"
    opt = torch.optim.Adam(q.parameters(), lr=1e-3, capturable=graphed and dev == "cuda")
    idx = torch.zeros(B, dtype=torch.long, device=dev)

    def update():
        i = idx
        qa = q(obs[i]).gather(1, act[i].unsqueeze(1)).squeeze(1)
        with torch.no_grad():
            y = rew[i] + 0.99 * (1 - done[i]) * tq(nxt[i]).max(1).values
        loss = F.smooth_l1_loss(qa, y)
        opt.zero_grad(set_to_none=False)
        loss.backward()
        opt.step()
        return loss

    def step_eager():
        idx.copy_(torch.randint(0, N, (B,), device=dev))
        update()

    if graphed:
        s = torch.cuda.Stream(); s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                update()
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            update()
        def step():
            idx.copy_(torch.randint(0, N, (B,), device=dev))
            g.replay()
    else:
        step = step_eager
    med, cv = blocks(step, 500)
    print(json.dumps({"anchor": "dqn_update", "mode": mode, "updates_per_s": round(med), "cv": round(cv, 3),
                      "torch": torch.__version__}))
else:
    V, D, L, H, T, B = 64, 128, 2, 4, 128, 16
    class Blk(nn.Module):
        def __init__(s):
            super().__init__()
            s.l1, s.l2 = nn.LayerNorm(D), nn.LayerNorm(D)
            s.qkv, s.o = nn.Linear(D, 3 * D), nn.Linear(D, D)
            s.mlp = nn.Sequential(nn.Linear(D, 4 * D), nn.GELU(), nn.Linear(4 * D, D))
        def forward(s, x):
            b, t, c = x.shape
            q, k, v = s.qkv(s.l1(x)).split(D, 2)
            q, k, v = (z.view(b, t, H, c // H).transpose(1, 2) for z in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + s.o(y.transpose(1, 2).reshape(b, t, c))
            return x + s.mlp(s.l2(x))
    class GPT(nn.Module):
        def __init__(s):
            super().__init__()
            s.wte, s.wpe = nn.Embedding(V, D), nn.Embedding(T, D)
            s.blocks = nn.ModuleList(Blk() for _ in range(L))
            s.lnf, s.head = nn.LayerNorm(D), nn.Linear(D, V, bias=False)
        def forward(s, idx, tgt):
            x = s.wte(idx) + s.wpe(torch.arange(idx.shape[1], device=idx.device))
            for b in s.blocks:
                x = b(x)
            return F.cross_entropy(s.head(s.lnf(x)).view(-1, V), tgt.reshape(-1))
    torch.manual_seed(0)
    corpus = torch.randint(0, V, (256, 4096), device=dev)
    m = GPT().to(dev)
    opt = torch.optim.AdamW(m.parameters(), lr=3e-4, weight_decay=0.01)
    fwd = m if mode == "eager" else torch.compile(m, mode=mode)
    off = torch.arange(T + 1, device=dev)
    last = {}
    def step():
        s = torch.randint(0, 256, (B, 1), device=dev); st = torch.randint(0, 4096 - T - 1, (B, 1), device=dev)
        w = corpus[s, st + off]
        loss = fwd(w[:, :-1], w[:, 1:])
        opt.zero_grad(set_to_none=True); loss.backward(); opt.step()
        last["l"] = loss.item()
    t0 = time.perf_counter(); step(); first = time.perf_counter() - t0
    med, cv = blocks(step, 50, warm=10)
    print(json.dumps({"anchor": "gpt_step", "mode": mode, "tokens_per_s": round(med * B * T), "cv": round(cv, 3),
                      "first_step_s": round(first, 1), "torch": torch.__version__}))
