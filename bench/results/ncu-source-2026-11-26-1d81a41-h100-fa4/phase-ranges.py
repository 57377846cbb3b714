# Run 158: the phase ranges (SASS source-page rows of the consumer loop, hand-assigned from the dumps) behind
# phases-by-helper.md. A one-off of this run: it imports the helper's loader (roles.py, not kept) from /tmp; the
# kept tool for these pages is bench/scripts/ncu-source-summary.py (phases, range, top, reasons).
import sys,importlib.util,collections
sys.path.insert(0,'/tmp/ncu157-analysis')
from roles import get,smp,ex,s,REASONS
PH_DET128C=[
 (49,159,'init (consumer prologue)'),
 (160,180,'top: wait full mbarrier (Q/dO/LSE/D TMA)'),
 (181,195,'top: slot reads (visit,kv_q,rank_flags) + tests'),
 (196,208,'top: wait kv_full (K/V TMA, first visit of tile)'),
 (209,238,'top: descriptors + LSE prefetch LDS.64'),
 (239,259,'S^T issue (8 SS HGMMA 64x64)'),
 (260,296,'dP^T issue (8 SS HGMMA) + mask setup'),
 (297,297,'wait S^T (DEPBAR.LE 1)'),
 (298,298,'need_mask branch (short_sb: LSE LDS / S2R)'),
 (299,423,'causal mask (diagonal tiles)'),
 (424,463,'P^T FFMA (scale,-LSE) + D prefetch LDS.64'),
 (464,464,'wait dP^T (DEPBAR.LE 0)'),
 (465,606,'exp2 + dS^T=P(dP-D) + bf16 pack (+DsFree sync @MUFU 505)'),
 (607,616,'dS STSM'),
 (617,618,'dV issue (RS HGMMA)'),
 (619,619,'dV issue: IMAD R7 WAR on STSM address'),
 (620,624,'dV issue (RS HGMMA)'),
 (625,627,'proxy fence (dS) + BAR.ARV DsReady'),
 (628,634,'deferred_slot copy (tid0 LDS bh/unit/last after dV issue)'),
 (635,646,'first_of_kv path (dK only)'),
 (647,661,'dq_now setup'),
 (662,665,'DsReady sync (other WG dS) -> 1st dQ HGMMA'),
 (666,684,'dQ issue (8 SS HGMMA 64x64 tnspB)'),
 (685,707,'dK issue (4 RS HGMMA)'),
 (708,708,'wait dV+dQ (DEPBAR.LE 1)'),
 (709,710,'BAR.ARV DsFree / BAR.SYNC DqEmpty'),
 (711,711,'DqEmpty wait (writer freed staging) @STS.128'),
 (712,719,'dQ staging STS.128'),
 (720,730,'dq_slot copy (tid0)'),
 (731,731,'wait dK (DEPBAR.LE 0)'),
 (732,733,'proxy fence after dQ staging'),
 (734,736,'BAR.ARV DqFull (waits fence)'),
 (737,747,'visit end: empty arrive + bh read (predicated)'),
 (748,1549,'last_of_kv: last dQ + dK/dV epilogue'),
 (1550,1551,'loop back'),
 (1552,1577,'exit'),
]
PH_FA4128C=[
 (346,555,'init (consumer prologue, per CTA)'),
 (556,563,'top: wait Q mbarrier'),
 (564,583,'LSE LDS + S issue setup'),
 (584,613,'S issue (8 SS HGMMA 64x64)'),
 (614,618,'wait dO mbarrier'),
 (619,666,'dP issue (8 SS HGMMA)'),
 (667,668,'wait S (DEPBAR.LE 1)'),
 (669,801,'mask/FFMA/exp2 + dPsum LDS'),
 (802,802,'wait dP (DEPBAR.LE 0)'),
 (803,921,'exp2 tail + dS + bf16 pack + STSM'),
 (922,934,'dV issue (RS HGMMA) [925: LOP3 short_sb WAR STSM addr]'),
 (935,939,'proxy fence (dS)'),
 (940,940,'BAR.SYNC 256 (dS ready, both WGs)'),
 (941,942,'dS sync -> 1st dQ HGMMA'),
 (943,959,'dQ issue (8 SS HGMMA tnspB)'),
 (960,961,'wait dV (DEPBAR.LE 1)'),
 (962,967,'release dO stage'),
 (968,968,'dK 1st HGMMA (warpgroup-arrive/tensor queue)'),
 (969,978,'dK issue rest'),
 (979,979,'wait dQ (DEPBAR.LE 1)'),
 (980,980,'BAR.SYNC dQ-empty'),
 (981,981,'dQ-empty wait @STS.128'),
 (982,988,'dQ staging STS.128'),
 (989,990,'proxy fence after dQ staging'),
 (991,991,'BAR.ARV dQ full (waits fence)'),
 (992,992,'wait dK (DEPBAR.LE 0)'),
 (993,995,'visit end: release Q stage + loop'),
 (996,1210,'epilogue dK/dV'),
 (1211,1300,'OOL waits'),
]
def phase_of(table,i):
    for a,b,n in table:
        if a<=i<=b: return n
    return '?'
def run(name,table,cyc_per_visit):
    rows,role=get(name)
    cons=[(i,r) for i,(r,ro) in enumerate(zip(rows,role)) if ro=='consumer']
    C=sum(smp(r) for i,r in cons)
    d=collections.OrderedDict((n,[0,collections.Counter()]) for a,b,n in table)
    for i,r in cons:
        n=phase_of(table,i)
        if n not in d: d[n]=[0,collections.Counter()]
        d[n][0]+=smp(r)
        for v,k in s.reasons_of(r): d[n][1][k]+=v
        listed=sum(v for v,k in s.reasons_of(r)); d[n][1]['gmma(unlisted)']+=smp(r)-listed
    print(f"## {name}: consumer samples {C}, cycles/visit {cyc_per_visit}")
    for n,(S,c) in d.items():
        top=" ".join(f"{k}={v}" for k,v in c.most_common(3))
        print(f"| {n} | {S} | {100*S/C:.1f}% | {S/C*cyc_per_visit:.0f} | {top} |")
    return rows,role,C
if __name__=='__main__':
    run('128-causal-16384-spread-symmetric-shift-det',PH_DET128C,7407553/ (264192/132))
    run('128-causal-16384-fa4',PH_FA4128C,6589599/(264192/132))
