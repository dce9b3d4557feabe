#!/usr/bin/python3
"""PyTorch-eager reference for the canonical dqn workload (docs/workloads.md "dqn").

Written the way a typical CleanRL/SB3-style script is: gym's CartPole-v1
dynamics in plain Python, a numpy ring buffer sampled with np.random and
handed to torch with torch.as_tensor, epsilon-greedy decided on the host
(the forward only runs when exploiting), the target network refreshed with
load_state_dict(state_dict()) every 100 updates.

Canonical config (plugin defaults): num_envs 1, batch 64, MLP 4-128-128-2,
Adam 1e-3, gamma 0.99, Huber loss, replay 50000, learning starts 1000
(filled at setup with a random policy), epsilon 1.0 -> 0.05 over 10000 env
steps, target sync every 100 updates, replay_on_device=false,
target_sync=roundtrip, loss read back every step (sync_every 1).
One step = one env step + one gradient update; unit: updates/s.
"""
import math
import random
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from common import compiled, measure, parse_args

GAMMA = 0.99
LR = 1e-3
BATCH = 64
CAPACITY = 50000
LEARNING_STARTS = 1000
EPS_START, EPS_END, EPS_DECAY = 1.0, 0.05, 10000
TARGET_SYNC = 100


class CartPole:
    """gym's classic_control CartPole-v1 (Euler), max 500 steps."""

    gravity, masscart, masspole, length, force_mag, tau = 9.8, 1.0, 0.1, 0.5, 10.0, 0.02
    total_mass = masscart + masspole
    polemass_length = masspole * length
    theta_threshold = 12 * 2 * math.pi / 360
    x_threshold = 2.4

    def __init__(self, rng):
        self.rng = rng
        self.state = None
        self.steps = 0

    def reset(self):
        self.state = self.rng.uniform(-0.05, 0.05, size=(4,))
        self.steps = 0
        return np.array(self.state, dtype=np.float32)

    def step(self, action):
        x, x_dot, theta, theta_dot = self.state
        force = self.force_mag if action == 1 else -self.force_mag
        costheta, sintheta = math.cos(theta), math.sin(theta)
        temp = (force + self.polemass_length * theta_dot**2 * sintheta) / self.total_mass
        thetaacc = (self.gravity * sintheta - costheta * temp) / (
            self.length * (4.0 / 3.0 - self.masspole * costheta**2 / self.total_mass))
        xacc = temp - self.polemass_length * thetaacc * costheta / self.total_mass
        x = x + self.tau * x_dot
        x_dot = x_dot + self.tau * xacc
        theta = theta + self.tau * theta_dot
        theta_dot = theta_dot + self.tau * thetaacc
        self.state = (x, x_dot, theta, theta_dot)
        self.steps += 1
        terminated = bool(x < -self.x_threshold or x > self.x_threshold
                          or theta < -self.theta_threshold or theta > self.theta_threshold)
        truncated = self.steps >= 500
        return np.array(self.state, dtype=np.float32), 1.0, terminated, truncated


class ReplayBuffer:
    def __init__(self, capacity, obs_dim):
        self.obs = np.zeros((capacity, obs_dim), dtype=np.float32)
        self.next_obs = np.zeros((capacity, obs_dim), dtype=np.float32)
        self.actions = np.zeros(capacity, dtype=np.int64)
        self.rewards = np.zeros(capacity, dtype=np.float32)
        self.dones = np.zeros(capacity, dtype=np.float32)
        self.capacity, self.pos, self.size = capacity, 0, 0

    def add(self, obs, action, reward, next_obs, terminated):
        i = self.pos
        self.obs[i] = obs
        self.next_obs[i] = next_obs
        self.actions[i] = action
        self.rewards[i] = reward
        self.dones[i] = terminated
        self.pos = (self.pos + 1) % self.capacity
        self.size = min(self.size + 1, self.capacity)

    def sample(self, batch_size):
        idx = np.random.randint(0, self.size, size=batch_size)
        return (torch.as_tensor(self.obs[idx]), torch.as_tensor(self.actions[idx]),
                torch.as_tensor(self.rewards[idx]), torch.as_tensor(self.next_obs[idx]),
                torch.as_tensor(self.dones[idx]))


class QNetwork(nn.Module):
    def __init__(self, obs_dim=4, hidden=128, n_actions=2):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(obs_dim, hidden), nn.ReLU(),
                                 nn.Linear(hidden, hidden), nn.ReLU(),
                                 nn.Linear(hidden, n_actions))

    def forward(self, x):
        return self.net(x)


def main():
    args = parse_args(__doc__, steps=300, warmup=200)
    t_setup = time.perf_counter()
    random.seed(args.seed)
    np.random.seed(args.seed)
    env = CartPole(np.random.default_rng(args.seed))
    q_net, target_net = QNetwork(), QNetwork()
    target_net.load_state_dict(q_net.state_dict())
    compiled(args, q_net, target_net)
    optimizer = torch.optim.Adam(q_net.parameters(), lr=LR)
    rb = ReplayBuffer(CAPACITY, 4)
    state = {"obs": env.reset(), "env_steps": 0, "updates": 0, "loss": 0.0}

    def env_step(random_policy):
        eps = EPS_START + (EPS_END - EPS_START) * min(1.0, state["env_steps"] / EPS_DECAY)
        if random_policy or random.random() < eps:
            action = random.randrange(2)
        else:
            with torch.no_grad():
                action = q_net(torch.as_tensor(state["obs"]).unsqueeze(0)).argmax(dim=1).item()
        next_obs, reward, terminated, truncated = env.step(action)
        rb.add(state["obs"], action, reward, next_obs, terminated)
        state["obs"] = env.reset() if (terminated or truncated) else next_obs
        state["env_steps"] += 1

    while state["env_steps"] < LEARNING_STARTS:
        env_step(random_policy=True)

    def step():
        env_step(random_policy=False)
        obs, actions, rewards, next_obs, dones = rb.sample(BATCH)
        with torch.no_grad():
            target_max = target_net(next_obs).max(dim=1).values
            td_target = rewards + GAMMA * target_max * (1.0 - dones)
        q = q_net(obs).gather(1, actions.unsqueeze(1)).squeeze(1)
        loss = F.huber_loss(q, td_target, delta=1.0)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        state["updates"] += 1
        if state["updates"] % TARGET_SYNC == 0:
            target_net.load_state_dict(q_net.state_dict())
        state["loss"] = loss.item()

    measure("dqn", "updates", step, 1.0, args, setup_s=time.perf_counter() - t_setup)


if __name__ == "__main__":
    main()
