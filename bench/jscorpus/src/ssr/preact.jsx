// Build-time server rendering with Preact (bundled for Node by build.mjs).
import { renderToString } from 'preact-render-to-string';
import { App } from '../jsx/views.jsx';

export const render = async (doc) => renderToString(<App doc={doc} />);
