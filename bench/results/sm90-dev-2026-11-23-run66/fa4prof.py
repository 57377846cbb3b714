# Runs FA4's backward for one shape a few times (for ncu): python3 fa4prof.py HD CAUSAL DET
import sys, site
site.addsitedir('/tmp/site')
import torch
from flash_attn.cute import flash_attn_func
hd, causal, det = int(sys.argv[1]), sys.argv[2] == "1", sys.argv[3] == "1"
s, h, b = 16384, 2048 // hd, 1
torch.manual_seed(0)
q, k, v = [torch.randn(b, s, h, hd, device="cuda", dtype=torch.bfloat16, requires_grad=True) for _ in range(3)]
do = torch.randn(b, s, h, hd, device="cuda", dtype=torch.bfloat16)
r = flash_attn_func(q, k, v, causal=causal, deterministic=det)
out = r[0] if isinstance(r, tuple) else r
for _ in range(2):
    torch.autograd.grad(out, (q, k, v), do, retain_graph=True)
torch.cuda.synchronize()
print("ok", hd, causal, det)
