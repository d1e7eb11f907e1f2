// The same views as HTML strings: for static pages at build time and for the
// pages whose plain scripts insert a document with innerHTML.

const esc = (s) => String(s).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

const sections = (list) =>
  list
    .map(
      (s) =>
        '<section>' +
        (s.heading ? `<h2>${esc(s.heading)}</h2>` : '') +
        s.paragraphs.map((p) => `<p>${esc(p)}</p>`).join('') +
        (s.code ? `<pre><code>${esc(s.code)}</code></pre>` : '') +
        (s.list ? `<ul>${s.list.map((li) => `<li>${esc(li)}</li>`).join('')}</ul>` : '') +
        '</section>',
    )
    .join('\n');

/** The HTML of a document's body (article, docs, product, dashboard). */
export function renderDocHTML(doc, { articleTag = true } = {}) {
  switch (doc.genre) {
    case 'article': {
      const inner =
        `<header class="story-header"><h1>${esc(doc.title)}</h1>` +
        (doc.dek ? `<p class="dek">${esc(doc.dek)}</p>` : '') +
        `<p class="byline">${esc(doc.byline)} · <time>${esc(doc.date)}</time></p></header>\n` +
        sections(doc.sections);
      return articleTag ? `<article class="story">${inner}</article>` : inner;
    }
    case 'docs':
      return (
        `<div class="docs-layout"><nav class="docs-nav" aria-label="Documentation"><ul>` +
        doc.nav.map((n) => `<li><a href="#${n.toLowerCase().replace(/ /g, '-')}">${esc(n)}</a></li>`).join('') +
        `</ul></nav><article class="docs-body"><h1>${esc(doc.title)}</h1><p class="dek">${esc(doc.dek)}</p>\n` +
        sections(doc.sections) +
        `</article></div>`
      );
    case 'product':
      return (
        `<div class="product"><h1>${esc(doc.title)}</h1><p class="price">${esc(doc.price)}</p>` +
        `<button type="button" class="buy">Add to basket</button>\n` +
        sections(doc.sections) +
        `<h2>Specifications</h2><table class="specs"><tbody>` +
        doc.specs.map(([k, v]) => `<tr><th>${esc(k)}</th><td>${esc(v)}</td></tr>`).join('') +
        `</tbody></table><h2>Reviews</h2><ul class="reviews">` +
        doc.reviews.map((r) => `<li><p class="stars">${r.stars} out of 5 stars</p><p>${esc(r.text)}</p><p class="reviewer">${esc(r.author)}</p></li>`).join('') +
        `</ul></div>`
      );
    default:
      return (
        `<div class="dashboard"><h1>${esc(doc.title)}</h1><p class="dek">${esc(doc.dek)}</p><ul class="cards">` +
        doc.cards.map(([k, v]) => `<li><span class="label">${esc(k)}</span> <strong>${esc(v)}</strong></li>`).join('') +
        `</ul>\n` +
        sections(doc.sections) +
        `<table class="data"><caption>${esc(doc.table.caption)}</caption><thead><tr>` +
        doc.table.head.map((c) => `<th>${esc(c)}</th>`).join('') +
        `</tr></thead><tbody>` +
        doc.table.rows.map((row) => `<tr>${row.map((c) => `<td>${esc(c)}</td>`).join('')}</tr>`).join('') +
        `</tbody></table></div>`
      );
  }
}

export { esc };

/** The HTML of a list of sections alone. */
export const renderSectionsHTML = sections;
