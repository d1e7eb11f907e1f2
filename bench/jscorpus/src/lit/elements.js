// Lit custom elements that render a page document: in the light DOM (as
// many Lit apps configure it) or, with `shadow`, in an open shadow root.
import { LitElement, html, nothing } from 'lit';

const sections = (list) =>
  list.map(
    (s) => html`<section>
      ${s.heading ? html`<h2>${s.heading}</h2>` : nothing}
      ${s.paragraphs.map((p) => html`<p>${p}</p>`)}
      ${s.code ? html`<pre><code>${s.code}</code></pre>` : nothing}
      ${s.list ? html`<ul>${s.list.map((li) => html`<li>${li}</li>`)}</ul>` : nothing}
    </section>`,
  );

export function renderDoc(doc) {
  switch (doc.genre) {
    case 'article':
      return html`<article class="story">
        <header class="story-header">
          <h1>${doc.title}</h1>
          ${doc.dek ? html`<p class="dek">${doc.dek}</p>` : nothing}
          <p class="byline">${doc.byline} · <time>${doc.date}</time></p>
        </header>
        ${sections(doc.sections)}
      </article>`;
    case 'docs':
      return html`<div class="docs-layout">
        <nav class="docs-nav" aria-label="Documentation">
          <ul>${doc.nav.map((n) => html`<li><a href=${'#' + n.toLowerCase().replace(/ /g, '-')}>${n}</a></li>`)}</ul>
        </nav>
        <article class="docs-body"><h1>${doc.title}</h1><p class="dek">${doc.dek}</p>${sections(doc.sections)}</article>
      </div>`;
    case 'product':
      return html`<div class="product">
        <h1>${doc.title}</h1>
        <p class="price">${doc.price}</p>
        <button type="button" class="buy">Add to basket</button>
        ${sections(doc.sections)}
        <h2>Specifications</h2>
        <table class="specs"><tbody>${doc.specs.map(([k, v]) => html`<tr><th>${k}</th><td>${v}</td></tr>`)}</tbody></table>
        <h2>Reviews</h2>
        <ul class="reviews">${doc.reviews.map((r) => html`<li><p class="stars">${r.stars} out of 5 stars</p><p>${r.text}</p><p class="reviewer">${r.author}</p></li>`)}</ul>
      </div>`;
    default:
      return html`<div class="dashboard">
        <h1>${doc.title}</h1>
        <p class="dek">${doc.dek}</p>
        <ul class="cards">${doc.cards.map(([k, v]) => html`<li><span class="label">${k}</span> <strong>${v}</strong></li>`)}</ul>
        ${sections(doc.sections)}
        <table class="data">
          <caption>${doc.table.caption}</caption>
          <thead><tr>${doc.table.head.map((c) => html`<th>${c}</th>`)}</tr></thead>
          <tbody>${doc.table.rows.map((row) => html`<tr>${row.map((c) => html`<td>${c}</td>`)}</tr>`)}</tbody>
        </table>
      </div>`;
  }
}

const chrome = (site, inner) => html`<div class="app">
  <header class="site-header">
    <a class="brand" href="/">${site}</a>
    <nav aria-label="Main"><a href="/latest/">Latest</a> <a href="/topics/">Topics</a> <a href="/about/">About</a></nav>
  </header>
  <main class="content">${inner}</main>
  <footer class="site-footer"><p>© 2025 ${site}</p></footer>
</div>`;

/** Defines `name` as an element showing `doc` (with the site chrome unless `bare`). */
export function defineDocElement(name, doc, { shadow = false, bare = false } = {}) {
  customElements.define(
    name,
    class extends LitElement {
      createRenderRoot() {
        return shadow ? super.createRenderRoot() : this;
      }
      render() {
        return bare ? renderDoc(doc) : chrome(doc.site, renderDoc(doc));
      }
    },
  );
}

/** Defines `name` as an element that fetches its document from `url` when connected. */
export function defineFetchElement(name, url, site) {
  customElements.define(
    name,
    class extends LitElement {
      static properties = { doc: { state: true } };
      createRenderRoot() {
        return this;
      }
      connectedCallback() {
        super.connectedCallback();
        fetch(url).then((r) => r.json()).then((doc) => { this.doc = doc; });
      }
      render() {
        return chrome(site, this.doc ? renderDoc(this.doc) : html`<p class="loading">Loading…</p>`);
      }
    },
  );
}
