import json,sys,collections
d=json.load(open(sys.argv[1]));segs=d['schedules'][0]['segments']
by=collections.defaultdict(lambda: collections.defaultdict(list))
for s in segs: by[s['sm']][s['unit']].append(s)
d1=[];d2=[];fin=[];st=[]
for sm,units in by.items():
    us=sorted(units.items(), key=lambda kv: min(x['start'] for x in kv[1] if x['kind']=='compute'))
    for (ua,a),(ub,b) in zip(us,us[1:]):
        aend=max(x['end'] for x in a if x['kind'] in('compute','finish'))
        ared=max(x['end'] for x in a if x['kind']=='reduce')
        bfirst=min(x['start'] for x in b if x['kind']=='compute')
        d1.append(bfirst-aend); d2.append(bfirst-ared)
def q(v):
    v=sorted(v);n=len(v);return ' '.join(f'{v[int(p*(n-1))]:.2f}' for p in (0.1,0.25,0.5,0.75,0.9))+f' mean {sum(v)/n:.2f} n {n}'
print('next first compute - prev compute-side end:',q(d1))
print('next first compute - prev last reduce end :',q(d2))
print('makespan',d['schedules'][0]['makespan'], d['machine'])
