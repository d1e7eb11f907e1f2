// A Preact app that fetches its document after load.
import { useEffect, useState } from 'preact/hooks';
import { Chrome, Page } from './views.jsx';

export function FetchApp({ url, site }) {
  const [doc, setDoc] = useState(null);
  useEffect(() => {
    fetch(url).then((r) => r.json()).then(setDoc);
  }, [url]);
  return <Chrome site={site}>{doc ? <Page doc={doc} /> : <div className="spinner" aria-busy="true" />}</Chrome>;
}
