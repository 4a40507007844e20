import torch, torch.nn as nn, torch.nn.functional as F, json
from torch.profiler import profile, ProfilerActivity
class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.fc = nn.Linear(32 * 8 * 8, 10)
    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc(x.flatten(1))
m=SmallCNN(); opt=torch.optim.SGD(m.parameters(), lr=0.01)
x=torch.randn(32,3,32,32); y=torch.randint(0,10,(32,))
with profile(activities=[ProfilerActivity.CPU], record_shapes=True, with_flops=True) as p:
    opt.zero_grad(); loss=F.cross_entropy(m(x),y); loss.backward(); opt.step()
p.export_chrome_trace("t.json")
print(torch.__version__)
