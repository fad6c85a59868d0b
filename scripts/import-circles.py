#!/usr/bin/env python3
"""Import circles between the files of src/: fails when two files of
different concerns import each other, directly or through others, or when
a file imports one of a layer above its own (RULES).

A file's imports are its `crate::…` and `super::…` paths (use lists
expanded), resolved to the file that defines the module; imports of a
parent module and test modules are left out. The pairs listed in ALLOWED
are one concern split for size, and say so in their module comments.
"""
import re,os,sys,collections
files={}
for root,_,fs in os.walk('src'):
    for f in fs:
        if f.endswith('.rs'):
            p=os.path.join(root,f)
            mod=p[4:-3].split('/')
            if mod[-1]=='mod': mod=mod[:-1]
            if mod==['lib']: mod=[]
            files[tuple(mod)]=p
def resolve(parts):
    parts=list(parts)
    while parts:
        if tuple(parts) in files: return tuple(parts)
        parts.pop()
    return None
g=collections.defaultdict(set)
for mod,p in files.items():
    src=open(p).read()
    src=re.sub(r'#\[cfg\(test\)\]\s*mod tests \{.*','',src,flags=re.S)
    parent=mod[:-1] if not p.endswith('mod.rs') else mod[:-1]
    def expand(text):
        # crate::a::{b, c::{d, e}} -> crate::a::b, crate::a::c::d ...
        out=[]
        m=re.match(r'(\w+(?:::\w+)*)::\{(.*)\}$',text,re.S)
        if not m: return [text]
        head,body=m.group(1),m.group(2)
        depth=0;cur='';items=[]
        for ch in body:
            if ch=='{':depth+=1
            if ch=='}':depth-=1
            if ch==',' and depth==0: items.append(cur.strip());cur=''
            else: cur+=ch
        if cur.strip(): items.append(cur.strip())
        for it in items:
            it=it.split(' as ')[0].strip()
            if it=='self': out.append(head)
            else: out.extend(expand(head+'::'+it))
        return out
    extra=[]
    for u in re.finditer(r'use\s+((?:crate|super)::[^;]*\{[^;]*);',src):
        extra.extend(expand(re.sub(r'\s+',' ',u.group(1))))
    src=src+'\n'+'\n'.join(' '+e+' ' for e in extra)
    for m in re.finditer(r'\b(crate|super)((?:::[a-z_][a-z0-9_]*)+)',src):
        names=m.group(2).split('::')[1:]
        base=list(parent) if m.group(1)=='super' else []
        if m.group(1)=='super' and p.endswith('mod.rs'): base=list(mod[:-1])
        t=resolve(base+names)
        if t and t!=mod and t!=() and not (len(t)<len(mod) and mod[:len(t)]==t):
            g[mod].add(t)
# tarjan
idx={};low={};st=[];on=set();out=[];c=[0]
sys.setrecursionlimit(10000)
def sc(v):
    idx[v]=low[v]=c[0];c[0]+=1;st.append(v);on.add(v)
    for w in g[v]:
        if w not in idx: sc(w);low[v]=min(low[v],low[w])
        elif w in on: low[v]=min(low[v],idx[w])
    if low[v]==idx[v]:
        comp=[]
        while True:
            w=st.pop();on.discard(w);comp.append(w)
            if w==v:break
        if len(comp)>1: out.append(comp)
for v in list(files):
    if v not in idx: sc(v)
ALLOWED = [
    {'grammar::check::parser', 'grammar::check::repetition'},
]
# (files under this module, must not import modules under these, because)
ENGINE_ABOVE_DECODE = ['engine::model', 'engine::embed', 'engine::rerank']
RULES = [
    ('remote', ['engine', 'php', 'loader'], 'the HTTP backend stands beside the engine, not on it'),
    ('engine', ['remote', 'php', 'loader'], 'the engine stands beside the HTTP backend, not on it'),
    ('backend', ['engine', 'remote', 'php', 'loader'], 'the backend contract is below every backend'),
    ('chat', ['engine', 'remote', 'php', 'backend'], 'chat templates are pure: no backend'),
    ('schema', ['engine', 'remote', 'php', 'backend'], 'schemas are pure: no backend'),
    ('grammar', ['engine', 'remote', 'php', 'backend', 'schema'], 'grammars are pure: no backend'),
    ('engine::llama', ['engine::cache', 'engine::decode'] + ENGINE_ABOVE_DECODE,
     'llama.cpp itself is the engine\'s lowest room'),
    ('engine::cache', ['engine::decode'] + ENGINE_ABOVE_DECODE, 'the caches stand on llama/ only'),
    ('engine::decode', ENGINE_ABOVE_DECODE, 'decoding stands on cache/ and llama/, below the model'),
]
def under(mod, prefix):
    return '::'.join(mod).startswith(prefix) and (len('::'.join(mod)) == len(prefix) or '::'.join(mod)[len(prefix)] == ':')
broken = []
for mod, targets in g.items():
    if mod and mod[-1] == 'tests':
        continue
    for low, forbidden, why in RULES:
        if not under(mod, low):
            continue
        for t in targets:
            if any(under(t, f) for f in forbidden):
                broken.append('%s imports %s: %s' % ('::'.join(mod), '::'.join(t), why))
    if not under(mod, 'php'):
        for t in targets:
            if under(t, 'php'):
                broken.append('%s imports %s: the binding is the top: nothing imports it' % ('::'.join(mod), '::'.join(t)))
for b in sorted(set(broken)):
    print('layering:', b)
bad = [sorted('::'.join(x) for x in comp) for comp in out]
bad = [c for c in bad if set(c) not in ALLOWED]
for c in bad:
    print('import circle:', ' <-> '.join(c))
sys.exit(1 if bad or broken else 0)
