// Views of a page document in JSX, compiled once for React and once for
// Preact (the build's jsxImportSource picks the runtime). Pure: no hooks.

function Sections({ sections }) {
  return sections.map((s, i) => (
    <section key={i}>
      {s.heading ? <h2>{s.heading}</h2> : null}
      {s.paragraphs.map((p, j) => <p key={j}>{p}</p>)}
      {s.code ? <pre><code>{s.code}</code></pre> : null}
      {s.list ? <ul>{s.list.map((li, j) => <li key={j}>{li}</li>)}</ul> : null}
    </section>
  ));
}

function ArticleView({ doc }) {
  return (
    <article className="story">
      <header className="story-header">
        <h1>{doc.title}</h1>
        {doc.dek ? <p className="dek">{doc.dek}</p> : null}
        <p className="byline">{doc.byline} · <time>{doc.date}</time></p>
      </header>
      <Sections sections={doc.sections} />
    </article>
  );
}

function DocsView({ doc }) {
  return (
    <div className="docs-layout">
      <nav className="docs-nav" aria-label="Documentation">
        <ul>{doc.nav.map((n, i) => <li key={i}><a href={'#' + n.toLowerCase().replace(/ /g, '-')}>{n}</a></li>)}</ul>
      </nav>
      <article className="docs-body">
        <h1>{doc.title}</h1>
        <p className="dek">{doc.dek}</p>
        <Sections sections={doc.sections} />
      </article>
    </div>
  );
}

function ProductView({ doc }) {
  return (
    <div className="product">
      <h1>{doc.title}</h1>
      <p className="price">{doc.price}</p>
      <button type="button" className="buy">Add to basket</button>
      <Sections sections={doc.sections} />
      <h2>Specifications</h2>
      <table className="specs">
        <tbody>{doc.specs.map(([k, v], i) => <tr key={i}><th>{k}</th><td>{v}</td></tr>)}</tbody>
      </table>
      <h2>Reviews</h2>
      <ul className="reviews">
        {doc.reviews.map((r, i) => (
          <li key={i}><p className="stars">{r.stars} out of 5 stars</p><p>{r.text}</p><p className="reviewer">{r.author}</p></li>
        ))}
      </ul>
    </div>
  );
}

function DashboardView({ doc }) {
  return (
    <div className="dashboard">
      <h1>{doc.title}</h1>
      <p className="dek">{doc.dek}</p>
      <ul className="cards">
        {doc.cards.map(([k, v], i) => <li key={i}><span className="label">{k}</span> <strong>{v}</strong></li>)}
      </ul>
      <Sections sections={doc.sections} />
      <table className="data">
        <caption>{doc.table.caption}</caption>
        <thead><tr>{doc.table.head.map((c, i) => <th key={i}>{c}</th>)}</tr></thead>
        <tbody>{doc.table.rows.map((row, i) => <tr key={i}>{row.map((c, j) => <td key={j}>{c}</td>)}</tr>)}</tbody>
      </table>
    </div>
  );
}

export function Page({ doc }) {
  switch (doc.genre) {
    case 'article': return <ArticleView doc={doc} />;
    case 'docs': return <DocsView doc={doc} />;
    case 'product': return <ProductView doc={doc} />;
    default: return <DashboardView doc={doc} />;
  }
}

export function Chrome({ site, children }) {
  return (
    <div className="app">
      <header className="site-header">
        <a className="brand" href="/">{site}</a>
        <nav aria-label="Main"><a href="/latest/">Latest</a> <a href="/topics/">Topics</a> <a href="/about/">About</a></nav>
      </header>
      <main className="content">{children}</main>
      <footer className="site-footer"><p>© 2025 {site}</p></footer>
    </div>
  );
}

export function App({ doc }) {
  return <Chrome site={doc.site}><Page doc={doc} /></Chrome>;
}
