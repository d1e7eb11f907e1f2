// The text a reader gets from the served HTML without running scripts.
import { parse } from 'parse5';

/**
 * The text of the served HTML: <head>, scripts, styles, <noscript> (as a
 * browser with JavaScript ignores it) and <template> removed, whitespace
 * collapsed.
 */
export function servedText(html) {
  const out = [];
  const walk = (node) => {
    if (node.nodeName === '#text') {
      out.push(node.value);
      return;
    }
    if (['head', 'script', 'style', 'noscript', 'template'].includes(node.nodeName)) return;
    for (const child of node.childNodes || []) walk(child);
  };
  walk(parse(html));
  return out.join(' ').replace(/\s+/g, ' ').trim();
}
