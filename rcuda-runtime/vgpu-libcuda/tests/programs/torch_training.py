"""A PyTorch training step as users write one: an MLP and a small CNN (cuDNN), a few hundred steps
each on synthetic data with fixed seeds, deterministic algorithms, the loss printed every 50 steps
(standard output) and the time each model took (standard error).
The same script prints the same losses on plain CUDA and on a vGPU of the same GPU."""
import os
import sys
import time

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch
from torch import nn

torch.manual_seed(1234)
torch.use_deterministic_algorithms(True)
torch.backends.cudnn.benchmark = False
device = torch.device("cuda")
steps = int(sys.argv[1]) if len(sys.argv) > 1 else 300


def train(name, model, inputs, targets, loss_fn):
    started = warm = time.perf_counter()
    model = model.to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    inputs, targets = inputs.to(device), targets.to(device)
    for step in range(1, steps + 1):
        batch = slice((step * 64) % (len(inputs) - 64), (step * 64) % (len(inputs) - 64) + 64)
        optimizer.zero_grad()
        loss = loss_fn(model(inputs[batch]), targets[batch])
        loss.backward()
        optimizer.step()
        if step % 50 == 0:
            print(f"{name} step {step} loss {loss.item():.6f}", flush=True)
        if step == 50:
            torch.cuda.synchronize()
            warm = time.perf_counter()
    torch.cuda.synchronize()
    ended = time.perf_counter()
    # standard error: what is compared with plain CUDA's run is standard output
    print(f"timing: {name} {steps} steps {ended - started:.3f} s, {(ended - warm) * 1000 / max(steps - 50, 1):.3f} ms"
          f" per step after the first 50", file=sys.stderr, flush=True)


generator = torch.Generator().manual_seed(42)
x = torch.randn(4096, 32, generator=generator)
y = (x[:, :8].sum(dim=1, keepdim=True) > 0).float()
train("mlp", nn.Sequential(nn.Linear(32, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 1)),
      x, y, nn.BCEWithLogitsLoss())

images = torch.randn(2048, 1, 28, 28, generator=generator)
labels = (images.mean(dim=(1, 2, 3)) * 10).long().clamp(-4, 5) + 4
cnn = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(8, 16, 3, padding=1),
                    nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(16 * 7 * 7, 10))
train("cnn", cnn, images, labels, nn.CrossEntropyLoss())
print("cudnn", torch.backends.cudnn.version(), "done")
