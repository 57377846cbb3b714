import sys, numpy as np, collections, glob
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
hd=sys.argv[1]
data={}
for f in sorted(glob.glob(f'ktrp/trace-hd{hd}-*-persistent.txt')):
    units=load(f); bysm=collections.defaultdict(list)
    for u in units: bysm[u[0]].append(u)
    tr=[]
    for sm,us in bysm.items():
        us.sort(key=lambda u:u[4][0,0])
        tr.append((us[0][1], us[0][4][0,0]))
        for a,b in zip(us,us[1:]): tr.append((a[3], b[4][0,0]))
    data[f]=np.array(tr)
for W in (0.5,1,2,4,8):
    G=[];N=[]
    for f,tr in data.items():
        s=np.sort(tr[:,0]); w=np.searchsorted(s,tr[:,0],side='right')-np.searchsorted(s,tr[:,0]-W,side='left')
        G.append(tr[:,1]-tr[:,0]); N.append(w)
    g=np.concatenate(G); n=np.concatenate(N)
    lo,hi=np.percentile(g,[2,98]); m=(g>=lo)&(g<=hi)
    A=np.stack([np.ones(m.sum()),n[m]-1],1); coef,res,_,_=np.linalg.lstsq(A,g[m],rcond=None)
    r2=1-res[0]/((g[m]-g[m].mean())**2).sum()
    print(f'hd{hd} W={W}: intercept {coef[0]:.3f} per-transition {coef[1]:.4f} R2 {r2:.3f} mean gap {g[m].mean():.3f} mean w {n.mean():.1f}')
