#!/usr/bin/python3
"""PyTorch-eager reference for the canonical marl workload (docs/workloads.md "marl").

COMA on multi-agent grid coverage, written as a pymarl-style script: the env
is vectorised over episodes with tensor ops (advanced indexing for patches
and coverage), actions sampled with Categorical, the centralised critic an
nn.Sequential over the per-agent concatenation [state, others' actions
one-hot, agent one-hot] (state repeated for every agent, as pymarl's
COMACritic._build_inputs does), targets computed with the target critic
under no_grad.

Canonical config: 16x16 grid, 4 agents, budget 14, 5 actions, batch 128
episodes, batch_number 5, data_passes 5 (25 critic minibatch updates, then
one actor update on the whole batch), actor MLP 31-128-128-5 (Adam 5e-4),
critic MLP 288-256-256-5 (Adam 1e-3), gamma 0.99, one-step TD through the
target critic synced every 200 critic updates, critic loss read back every
step (sync_every 1).
One step = collect one batch of episodes + its updates;
unit: agent-steps/s (= 128 * 14 * 4 per step).
"""
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

from common import compiled, measure, parse_args

GRID, N_AGENTS, BUDGET, N_ACTIONS = 16, 4, 14, 5
PATCH, COVER, PAD = 5, 3, 2
BATCH, BATCH_NUMBER, DATA_PASSES = 128, 5, 5
ACTOR_LR, CRITIC_LR, GAMMA = 5e-4, 1e-3, 0.99
TARGET_SYNC = 200
OBS_DIM = PATCH * PATCH + 2 + N_AGENTS
STATE_DIM = GRID * GRID + 2 * N_AGENTS
CRITIC_IN = STATE_DIM + N_AGENTS * N_ACTIONS + N_AGENTS


def offsets(side):
    r = torch.arange(side) - side // 2
    dr, dc = torch.meshgrid(r, r, indexing="ij")
    return dr.reshape(-1), dc.reshape(-1)


class CoverageEnv:
    """Batch of episodes; map padded by PAD cells of 1 (nothing to gain there)."""

    moves = torch.tensor([[0, 0], [-1, 0], [1, 0], [0, 1], [0, -1]])  # stay N S E W

    def __init__(self, episodes, agents):
        self.e, self.a = episodes, agents
        side = GRID + 2 * PAD
        self.map = torch.ones(episodes, side, side)
        self.pos = torch.zeros(episodes, agents, 2, dtype=torch.long)
        self.ep = torch.arange(episodes).view(episodes, 1, 1)
        self.cover_dr, self.cover_dc = offsets(COVER)
        self.patch_dr, self.patch_dc = offsets(PATCH)
        self.agent_ids = torch.eye(agents).expand(episodes, agents, agents)

    def _cover(self):
        rows = self.pos[..., 0:1] + PAD + self.cover_dr
        cols = self.pos[..., 1:2] + PAD + self.cover_dc
        self.map[self.ep, rows, cols] = 1.0

    def _covered(self):
        return self.map[:, PAD:PAD + GRID, PAD:PAD + GRID].sum(dim=(1, 2))

    def reset(self):
        self.pos.random_(0, GRID)
        self.map.fill_(1.0)
        self.map[:, PAD:PAD + GRID, PAD:PAD + GRID] = 0.0
        self._cover()
        self.covered = self._covered()

    def step(self, actions):
        self.pos = (self.pos + self.moves[actions]).clamp_(0, GRID - 1)
        self._cover()
        now = self._covered()
        reward = now - self.covered
        self.covered = now
        return reward

    def observe(self):
        rows = self.pos[..., 0:1] + PAD + self.patch_dr
        cols = self.pos[..., 1:2] + PAD + self.patch_dc
        patch = self.map[self.ep, rows, cols]
        return torch.cat([patch, self.pos.float() / (GRID - 1), self.agent_ids], dim=-1)

    def state(self):
        inner = self.map[:, PAD:PAD + GRID, PAD:PAD + GRID].reshape(self.e, -1)
        return torch.cat([inner, self.pos.float().view(self.e, -1) / (GRID - 1)], dim=-1)


def mlp(inp, hidden, out):
    return nn.Sequential(nn.Linear(inp, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                         nn.Linear(hidden, out))


def critic_inputs(states, actions):
    """states [N, STATE_DIM], joint actions [N, A] -> [N, A, CRITIC_IN]."""
    n = states.shape[0]
    onehot = F.one_hot(actions, N_ACTIONS).float().view(n, 1, N_AGENTS * N_ACTIONS)
    onehot = onehot.repeat(1, N_AGENTS, 1)
    mask = 1.0 - torch.eye(N_AGENTS).repeat_interleave(N_ACTIONS, dim=1)  # hide own action
    ids = torch.eye(N_AGENTS).expand(n, N_AGENTS, N_AGENTS)
    return torch.cat([states.unsqueeze(1).expand(n, N_AGENTS, STATE_DIM), onehot * mask, ids],
                     dim=-1)


def main():
    args = parse_args(__doc__, steps=1, warmup=2)
    t_setup = time.perf_counter()
    env = CoverageEnv(BATCH, N_AGENTS)
    actor = mlp(OBS_DIM, 128, N_ACTIONS)
    critic = mlp(CRITIC_IN, 256, N_ACTIONS)
    target_critic = mlp(CRITIC_IN, 256, N_ACTIONS)
    target_critic.load_state_dict(critic.state_dict())
    compiled(args, actor, critic, target_critic)
    actor_opt = torch.optim.Adam(actor.parameters(), lr=ACTOR_LR)
    critic_opt = torch.optim.Adam(critic.parameters(), lr=CRITIC_LR)
    counters = {"critic_updates": 0, "loss": 0.0}
    n = BUDGET * BATCH

    def collect():
        states, obs, actions, rewards = [], [], [], []
        with torch.no_grad():
            env.reset()
            for _ in range(BUDGET):
                s, o = env.state(), env.observe()
                a = torch.distributions.Categorical(logits=actor(o)).sample()
                rewards.append(env.step(a))
                states.append(s)
                obs.append(o)
                actions.append(a)
        return torch.stack(states), torch.stack(obs), torch.stack(actions), torch.stack(rewards)

    def td_targets(inputs, actions, rewards):
        # y_t = r_t + gamma * Q_target(s_{t+1}, u_{t+1})[u^a_{t+1}], y_T-1 = r_T-1
        with torch.no_grad():
            q_next = target_critic(inputs[BATCH:]).gather(2, actions[BATCH:].unsqueeze(2))
            y = rewards.view(n, 1).expand(n, N_AGENTS).clone()
            y[:-BATCH] += GAMMA * q_next.squeeze(2)
        return y

    def step():
        states, obs, actions, rewards = collect()
        states, obs = states.view(n, STATE_DIM), obs.view(n, N_AGENTS, OBS_DIM)
        actions, rewards = actions.view(n, N_AGENTS), rewards.view(n)
        inputs = critic_inputs(states, actions)
        targets = td_targets(inputs, actions, rewards)

        for _ in range(DATA_PASSES):
            for idx in torch.randperm(n).chunk(BATCH_NUMBER):
                q = critic(inputs[idx]).gather(2, actions[idx].unsqueeze(2)).squeeze(2)
                loss = F.mse_loss(q, targets[idx])
                critic_opt.zero_grad(set_to_none=True)
                loss.backward()
                critic_opt.step()
                counters["critic_updates"] += 1
                if counters["critic_updates"] % TARGET_SYNC == 0:
                    target_critic.load_state_dict(critic.state_dict())
                    targets = td_targets(inputs, actions, rewards)

        with torch.no_grad():
            q = critic(inputs)
        log_pi = F.log_softmax(actor(obs), dim=-1)
        baseline = (log_pi.detach().exp() * q).sum(-1)
        q_taken = q.gather(2, actions.unsqueeze(2)).squeeze(2)
        advantage = q_taken - baseline
        actor_loss = -(log_pi.gather(2, actions.unsqueeze(2)).squeeze(2) * advantage).mean()
        actor_opt.zero_grad(set_to_none=True)
        actor_loss.backward()
        actor_opt.step()
        counters["loss"] = loss.item()

    measure("marl", "agent_steps", step, float(BATCH * BUDGET * N_AGENTS), args,
            setup_s=time.perf_counter() - t_setup)


if __name__ == "__main__":
    main()
