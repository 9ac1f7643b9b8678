"""A PyTorch CUDA graph as users make one (torch.cuda.graph): a model's forward pass captured once on a side
stream after a warm-up there, then replayed with new input copied into its static tensor, each replay's sum printed
beside the same model run eagerly. `torch_graph.py PAUSE_S` waits that long after the first replay, so that a test can
move the vGPU between two replays. The same script prints the same lines on plain CUDA and on a vGPU of the same GPU."""
import os
import sys
import time

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch
from torch import nn

torch.manual_seed(1234)
torch.use_deterministic_algorithms(True)
pause = float(sys.argv[1]) if len(sys.argv) > 1 else 0.0
model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10)).cuda()
inputs = torch.randn(32, 64, device="cuda")
static_input = torch.zeros_like(inputs)

with torch.no_grad():
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            model(static_input)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_output = model(static_input)
    for replay in range(1, 6):
        static_input.copy_(inputs * replay)
        graph.replay()
        eager = model(inputs * replay)
        print("replay %d: graph %.6f, eager %.6f, equal %s"
              % (replay, static_output.sum().item(), eager.sum().item(), torch.equal(static_output, eager)))
        if replay == 1 and pause > 0:
            time.sleep(pause)
