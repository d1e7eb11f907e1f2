// The page-side walker bench/mcp/capture_cost.js times against
// DOMSnapshot.captureSnapshot: one pass over the flat tree emitting what the
// Rust DOM reader needs (not used by oxwright; an experiment).
(() => {
  const S = globalThis.__oxSnap || (globalThis.__oxSnap = (() => {
    const ids = new WeakMap(), refs = new Map();
    let next = 1;
    const key = (n) => {
      let k = ids.get(n);
      if (k === undefined) { k = next++; ids.set(n, k); refs.set(k, new WeakRef(n)); }
      return k;
    };
    const node = (k) => { const r = refs.get(k); const n = r && r.deref(); return n && n.isConnected ? n : null; };
    return { key, node, refs };
  })());
  const KEEP = new Set(['alt', 'contenteditable', 'disabled', 'for', 'href', 'id', 'inert', 'label', 'list', 'multiple', 'open', 'placeholder', 'role', 'scope', 'size', 'title', 'type', 'value', 'name', 'tabindex', 'readonly', 'required', 'checked', 'selected', 'src']);
  const NO_KIDS = new Set(['HEAD', 'SCRIPT', 'STYLE', 'NOSCRIPT', 'TEMPLATE', 'IFRAME', 'FRAME', 'OBJECT', 'EMBED']);
  const P = [], K = [], T = [], V = [], I = [], A = [], St = [], iv = [], tv = [], ck = [], sel = [];
  const doc = document;
  // [node, parent index, state] — state: 0 nothing drawn above, else
  // the visibility that applies (parent has a box or is display:contents).
  const stack = [[doc, null, 'visible', null]];
  while (stack.length) {
    const [n, p, vis, pdisp] = stack.pop();
    const i = P.length;
    P.push(p);
    const t = n.nodeType;
    K.push(t);
    let childVis = null, childDisp = null;
    if (t === 1) {
      T.push(n.nodeName);
      V.push('');
      I.push(S.key(n));
      const at = [];
      for (const a of n.attributes) {
        const nm = a.name;
        if (KEEP.has(nm) || nm.startsWith('aria-')) at.push(nm, a.value);
      }
      A.push(at.length ? at : 0);
      let st = 0;
      if (vis !== null) {
        if (n.checkVisibility()) {
          const cs = getComputedStyle(n);
          st = [cs.display, cs.visibility];
          childVis = cs.visibility; childDisp = cs.display;
        } else {
          const cs = getComputedStyle(n);
          if (cs.display === 'contents') { childVis = cs.visibility; childDisp = 'contents'; }
        }
      }
      St.push(st);
      const tag = n.nodeName;
      if (tag === 'INPUT') { iv.push(i, n.value); if (n.checked) ck.push(i); }
      else if (tag === 'TEXTAREA') tv.push(i, n.value);
      else if (tag === 'OPTION' && n.selected) sel.push(i);
      if (NO_KIDS.has(tag)) continue;
    } else {
      T.push(n.nodeName);
      V.push(t === 3 ? n.data : '');
      I.push(0);
      A.push(0);
      St.push(t === 3 && vis !== null ? [pdisp, vis] : 0);
      if (t !== 9) continue;
      childVis = 'visible'; childDisp = 'block';
    }
    let kids = n.childNodes;
    if (t === 1) {
      if (n.shadowRoot) kids = n.shadowRoot.childNodes;
      else if (n.localName === 'slot' && n.getRootNode() instanceof ShadowRoot) {
        const a = n.assignedNodes();
        if (a.length) kids = a;
      }
    }
    for (let c = kids.length - 1; c >= 0; c--) stack.push([kids[c], i, childVis, childDisp]);
  }
  return JSON.stringify({ title: doc.title, url: doc.URL, base: doc.baseURI, p: P, k: K, t: T, v: V, id: I, a: A, s: St, iv, tv, ck, sel });
})()
