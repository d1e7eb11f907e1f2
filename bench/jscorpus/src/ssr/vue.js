// Build-time server rendering with Vue (bundled for Node by build.mjs).
import { createSSRApp, h } from 'vue';
import { renderToString } from 'vue/server-renderer';
import { App } from '../vue/views.js';

export const render = (doc) => renderToString(createSSRApp({ render: () => h(App, { doc }) }));
