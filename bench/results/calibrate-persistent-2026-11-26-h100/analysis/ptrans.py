import sys, numpy as np, collections
def load(path):
    units=[]; cur=None
    with open(path) as f:
        for line in f:
            if line[0]=='u':
                p=line.split(); cur=[int(p[1]),int(p[2]),int(p[3]),int(p[5]) if len(p)>5 else None,[]]; units.append(cur)
            elif line[0]=='v':
                cur[4].append(tuple(int(x) for x in line.split()[1:5]))
    t0=min(u[1] for u in units)
    return [(u[0],(u[1]-t0)/1e3,(u[2]-t0)/1e3,(u[3]-t0)/1e3,np.array(u[4],dtype=np.float64).reshape(-1,4)/1e3-t0/1e3) for u in units]
units=load(sys.argv[1])
bysm=collections.defaultdict(list)
for u in units: bysm[u[0]].append(u)
tr=[]
for sm,us in bysm.items():
    us.sort(key=lambda u:u[4][0,0])
    for a,b in zip(us,us[1:]): tr.append((a[3], b[4][0,0]))
tr=np.array(tr); g=tr[:,1]-tr[:,0]
starts=np.sort(tr[:,0]); ends=np.sort(tr[:,1])
n=np.searchsorted(starts,tr[:,0]+1e-9,side='right')-np.searchsorted(ends,tr[:,0]+1e-9,side='right')
# also count transitions starting within +-2us of this one
w=np.searchsorted(starts,tr[:,0]+2)-np.searchsorted(starts,tr[:,0]-2)
print(sys.argv[1].split('/')[-1], 'n=%d gap mean %.2f med %.2f'%(len(g),g.mean(),np.median(g)))
for lo,hi in ((0,5),(5,20),(20,50),(50,90),(90,133)):
    m=(w>=lo)&(w<hi)
    if m.sum(): print('   starting within 2us: %3d-%3d: gap mean %.2f (n %d)'%(lo,hi,g[m].mean(),m.sum()))
