"""Networks shaped like the field's production models, small enough to test and benchmark on a
CPU. Each takes a batch first; particle-based ones take any number of particles.

  ParticleNetLike  EdgeConv blocks over a kNN graph rebuilt inside the model (TopK + gather)
  ParTLike         a transformer encoder over particles, then a class token attending to them
  DeepTauLike      a CNN over an eta-phi grid with a dense side branch of high-level features
  DeepJetLike      Conv1d over charged candidates, then an LSTM, then dense layers
  DeepMetLike      an embedding of each particle's type (int64) with its features -> a weight
                   per particle -> the weighted missing-momentum sum
  GravNetLike      a kNN in a learned space, distance-weighted aggregation of neighbours
"""
import torch
from torch import nn


def knn_gather(features, coords, k):
    """features [N, P, F] of each point's k nearest neighbours in `coords` [N, P, C]:
    [N, P, k, F], and the squared distances to them [N, P, k]."""
    n, p, f = features.shape
    difference = coords.unsqueeze(2) - coords.unsqueeze(1)
    distances = (difference * difference).sum(dim=3)
    nearest = torch.topk(distances, k + 1, dim=2, largest=False)
    index = nearest.indices[:, :, 1:]
    gathered = torch.gather(features.unsqueeze(1).expand(n, p, p, f), 2,
                            index.unsqueeze(3).expand(n, p, k, f))
    return gathered, nearest.values[:, :, 1:]


class EdgeConvBlock(nn.Module):
    def __init__(self, features, width, k):
        super().__init__()
        self.k = k
        self.edge = nn.Sequential(nn.Linear(2 * features, width), nn.ReLU(),
                                  nn.Linear(width, width), nn.ReLU())

    def forward(self, points, coords):
        neighbours, _ = knn_gather(points, coords, self.k)
        centre = points.unsqueeze(2).expand_as(neighbours)
        return self.edge(torch.cat([centre, neighbours - centre], dim=3)).max(dim=2).values


class ParticleNetLike(nn.Module):
    def __init__(self, k=8):
        super().__init__()
        self.block1 = EdgeConvBlock(7, 32, k)
        self.block2 = EdgeConvBlock(32, 32, k)
        self.head = nn.Sequential(nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 5))

    def forward(self, points):
        hidden = self.block1(points, points[:, :, 0:2])  # eta, phi place the first graph
        hidden = self.block2(hidden, hidden)  # the second graph is in the learned features
        return torch.softmax(self.head(hidden.mean(dim=1)), dim=1)


class ParTLike(nn.Module):
    def __init__(self, width=32, heads=4):
        super().__init__()
        self.embed = nn.Sequential(nn.Linear(7, width), nn.ReLU(), nn.Linear(width, width))
        self.encoder = nn.TransformerEncoderLayer(width, heads, dim_feedforward=64,
                                                  dropout=0.0, batch_first=True)
        self.class_token = nn.Parameter(torch.randn(1, 1, width) * 0.1)
        self.class_attention = nn.MultiheadAttention(width, heads, batch_first=True)
        self.head = nn.Linear(width, 5)

    def forward(self, particles):
        hidden = self.encoder(self.embed(particles))
        token = self.class_token.expand(particles.shape[0], 1, self.class_token.shape[2])
        attended, _ = self.class_attention(token, hidden, hidden, need_weights=False)
        return torch.softmax(self.head(attended[:, 0, :]), dim=1)


class DeepTauLike(nn.Module):
    def __init__(self):
        super().__init__()
        self.grid = nn.Sequential(nn.Conv2d(4, 16, 3, padding=1), nn.ReLU(),
                                  nn.Conv2d(16, 16, 3, padding=1), nn.ReLU(),
                                  nn.Conv2d(16, 8, 1), nn.ReLU())
        self.side = nn.Sequential(nn.Linear(20, 32), nn.ReLU())
        self.head = nn.Sequential(nn.Linear(8 * 11 * 11 + 32, 64), nn.ReLU(), nn.Linear(64, 4))

    def forward(self, grid, high_level):
        hidden = torch.cat([torch.flatten(self.grid(grid), 1), self.side(high_level)], dim=1)
        return torch.softmax(self.head(hidden), dim=1)


class DeepJetLike(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv1d(16, 32, 1), nn.ReLU(), nn.Conv1d(32, 16, 1), nn.ReLU())
        self.lstm = nn.LSTM(16, 32, batch_first=True)
        self.head = nn.Sequential(nn.Linear(32 + 6, 32), nn.ReLU(), nn.Linear(32, 6))

    def forward(self, charged, global_features):
        hidden = self.conv(charged.transpose(1, 2)).transpose(1, 2)
        _, (last, _) = self.lstm(hidden)
        return torch.softmax(self.head(torch.cat([last[0], global_features], dim=1)), dim=1)


class DeepMetLike(nn.Module):
    """Weights each particle from its features and an embedding of its type (int64 codes 0..7),
    and answers sum(weight * (px, py))."""

    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(8, 4)
        self.weight = nn.Sequential(nn.Linear(6 + 4, 32), nn.ReLU(), nn.Linear(32, 1),
                                    nn.Sigmoid())

    def forward(self, particles, types):
        weights = self.weight(torch.cat([particles, self.embedding(types)], dim=2))
        return (weights * particles[:, :, 0:2]).sum(dim=1)


class GravNetLike(nn.Module):
    def __init__(self, k=8):
        super().__init__()
        self.k = k
        self.space = nn.Linear(7, 3)
        self.features = nn.Sequential(nn.Linear(7, 16), nn.ReLU())
        self.head = nn.Sequential(nn.Linear(7 + 32, 32), nn.ReLU(), nn.Linear(32, 2))

    def forward(self, hits):
        coords = self.space(hits)
        features = self.features(hits)
        neighbours, distances = knn_gather(features, coords, self.k)
        weights = torch.exp(-10.0 * distances).unsqueeze(3)
        weighted = neighbours * weights
        aggregated = torch.cat([weighted.mean(dim=2), weighted.max(dim=2).values], dim=2)
        return self.head(torch.cat([hits, aggregated], dim=2))


def examples(generator, batch, particles=32):
    """(name, module, inputs, input names, output names, variable dimensions) of each network;
    the variable dimensions are the particle counts, beyond the batch."""
    def randn(*shape):
        return torch.randn(*shape, generator=generator)
    return [
        ("particlenet", ParticleNetLike(), (randn(batch, particles, 7),),
         ["points"], ["probabilities"], {"points": [1]}),
        ("part", ParTLike(), (randn(batch, particles, 7),),
         ["particles"], ["probabilities"], {"particles": [1]}),
        ("deeptau", DeepTauLike(), (randn(batch, 4, 11, 11), randn(batch, 20)),
         ["grid", "high_level"], ["probabilities"], {}),
        ("deepjet", DeepJetLike(), (randn(batch, 25, 16), randn(batch, 6)),
         ["charged", "global_features"], ["probabilities"], {"charged": [1]}),
        ("deepmet", DeepMetLike(),
         (randn(batch, particles, 6), torch.randint(0, 8, (batch, particles), generator=generator)),
         ["particles", "types"], ["met_xy"], {"particles": [1], "types": [1]}),
        ("gravnet", GravNetLike(), (randn(batch, particles, 7),),
         ["hits"], ["energy_fractions"], {"hits": [1], "energy_fractions": [1]}),
    ]
