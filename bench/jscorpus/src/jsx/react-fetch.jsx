// A React app that fetches its document after load.
import { useEffect, useState } from 'react';
import { Chrome, Page } from './views.jsx';

export function FetchApp({ url, site, placeholder }) {
  const [doc, setDoc] = useState(null);
  const [error, setError] = useState(null);
  useEffect(() => {
    fetch(url)
      .then((r) => (r.ok ? r.json() : Promise.reject(new Error(`HTTP ${r.status}`))))
      .then(setDoc, (e) => setError(String(e)));
  }, [url]);
  return (
    <Chrome site={site}>
      {error ? <p className="error">Could not load this page: {error}</p> : doc ? <Page doc={doc} /> : placeholder ? <p className="loading">Loading…</p> : null}
    </Chrome>
  );
}
