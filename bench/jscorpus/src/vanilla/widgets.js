// Plain scripts of the corpus: inserting a document, walls, and the
// incidental widgets of static pages (comments, consent, recommendations…).
import { renderDocHTML, renderSectionsHTML, esc } from './render.mjs';

/** Fetches `url` (a page document as JSON) and puts it into `target`. */
export async function fetchInto(target, url, { articleTag = true } = {}) {
  const el = document.querySelector(target);
  const res = await fetch(url);
  if (!res.ok) {
    el.textContent = `Could not load this page (HTTP ${res.status}).`;
    return;
  }
  const doc = await res.json();
  el.removeAttribute('aria-busy');
  el.innerHTML = renderDocHTML(doc, { articleTag });
  document.title = doc.title;
}

/** Fetches the rest of an article (`{ sections }` as JSON) into `target` after load. */
export function fetchRest(target, url) {
  const go = async () => {
    const rest = await (await fetch(url)).json();
    document.querySelector(target).outerHTML = renderSectionsHTML(rest.sections);
  };
  if (document.readyState === 'complete') go();
  else window.addEventListener('load', go);
}

/** Puts `doc` into `target` now. */
export function insertDoc(target, doc, { articleTag = true } = {}) {
  document.querySelector(target).innerHTML = renderDocHTML(doc, { articleTag });
}

/** Removes what `selector` matches (a "please enable JavaScript" wall). */
export function removeWall(selector) {
  document.querySelectorAll(selector).forEach((el) => el.remove());
}

/** Puts `doc` into `target` `delayMs` after the load event. */
export function insertAfterLoad(target, doc, delayMs, { articleTag = true } = {}) {
  const go = () => setTimeout(() => insertDoc(target, doc, { articleTag }), delayMs);
  if (document.readyState === 'complete') go();
  else window.addEventListener('load', go);
}

/** Defines `name` as an element that shows `doc` in an open shadow root. */
export function defineShadowArticle(name, doc) {
  customElements.define(
    name,
    class extends HTMLElement {
      connectedCallback() {
        if (this.shadowRoot) return;
        const root = this.attachShadow({ mode: 'open' });
        root.innerHTML = `<style>:host{display:block;max-width:42rem}h1{font-size:2rem}p{line-height:1.6}</style>${renderDocHTML(doc)}`;
      }
    },
  );
}

/** A comments widget: loads its comments a little after the page's load event. */
export function comments(target, url) {
  window.addEventListener('load', () =>
    setTimeout(async () => {
      const list = await (await fetch(url)).json();
      document.querySelector(target).innerHTML =
        `<p class="count">${list.length} comments</p><ol>` +
        list.map((c) => `<li><p class="who">${esc(c.author)}</p><p>${esc(c.text)}</p></li>`).join('') +
        '</ol>';
    }, 300),
  );
}

/** A cookie-consent banner. */
export function consentBanner() {
  const el = document.createElement('div');
  el.className = 'consent';
  el.setAttribute('role', 'dialog');
  el.innerHTML = '<p>We use cookies to measure how the site is read. <button type="button">Accept</button> <button type="button">Decline</button></p>';
  el.querySelectorAll('button').forEach((b) => b.addEventListener('click', () => el.remove()));
  document.body.append(el);
}

/** Recommended products, fetched into `target`. */
export async function recommendations(target, url) {
  const items = await (await fetch(url)).json();
  document.querySelector(target).innerHTML =
    '<h2>You may also like</h2><ul class="recs">' + items.map((i) => `<li><a href="#">${esc(i.name)}</a> <span>${esc(i.price)}</span></li>`).join('') + '</ul>';
}

/** A newsletter sign-up box rendered into an (empty) mount point. */
export function newsletter(target) {
  document.querySelector(target).innerHTML =
    '<form class="newsletter"><label>Get the weekly newsletter <input type="email" placeholder="you@example.com"></label> <button>Sign up</button></form>';
}
