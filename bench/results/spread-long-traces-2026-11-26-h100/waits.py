import json,sys,collections
for f in sys.argv[1:]:
    d=json.load(open(f)); s=d['schedules'][0]; segs=s['segments']
    tot=collections.Counter(); cnt=collections.Counter()
    for g in segs:
        tot[g['kind']]+=g['end']-g['start']; cnt[g['kind']]+=1
    sms=d['machine']['sms']
    print(f.split('/')[-1][:48].ljust(48), 'makespan %.0f'%s['makespan'], ' '.join(f"{k}:{tot[k]/sms:.0f}us/{cnt[k]}" for k in sorted(tot)))
