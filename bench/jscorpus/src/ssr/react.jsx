// Build-time server rendering with React (bundled for Node by build.mjs).
import { renderToString } from 'react-dom/server';
import { App } from '../jsx/views.jsx';

export const render = async (doc) => renderToString(<App doc={doc} />);
