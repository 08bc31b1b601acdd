#!/usr/bin/env python3
"""Reference values for core/src/stats.rs tests (SciPy 1.17.1, statsmodels 0.15.0).

Run: pip install scipy statsmodels && python3 scripts/stats-reference.py
"""
import numpy as np
from scipy import stats
from statsmodels.stats.proportion import proportion_confint
from statsmodels.stats.multitest import multipletests
print("# Wilson 95% (statsmodels proportion_confint method='wilson', alpha=0.05)")
for k,n in [(0,18),(5,18),(12,18),(18,18),(1,1),(7,10),(30,54)]:
    lo,hi = proportion_confint(k,n,alpha=0.05,method='wilson')
    print(f"({k}, {n}, {lo:.12f}, {hi:.12f}),")
print("# McNemar exact two-sided = binomtest(b, b+c, 0.5) (scipy.stats.binomtest)")
for b,c in [(5,1),(0,6),(3,3),(9,2),(0,0),(1,0),(10,0)]:
    p = stats.binomtest(b, b+c, 0.5).pvalue if b+c>0 else 1.0
    print(f"({b}, {c}, {p:.12f}),")
print("# sign-flip exact two-sided (scipy.stats.permutation_test, permutation_type='samples', statistic=sum)")
def stat(x, axis): return np.sum(x, axis=axis)
for d in [[1,1,1,1,1,1],[1,1,1,1,1,-1],[2/3,1/3,1,0,0,-1/3],[0,0,0,0,0,0],[1,0,0,0,0,0],[1,1,1,1/3,2/3,0]]:
    r = stats.permutation_test((np.array(d),), stat, permutation_type='samples', alternative='two-sided', n_resamples=10**6)
    print(f"({d}, {r.pvalue:.12f}),")
print("# Holm (statsmodels multipletests method='holm')")
for ps in [[0.03125,0.0625,0.5],[0.01,0.04,0.03],[0.5,0.2,0.9]]:
    rej, adj, _, _ = multipletests(ps, method='holm')
    print(ps, [round(x,12) for x in adj])
