#!/usr/bin/env node
// Builds the JavaScript-rendered dev corpus: `node build.mjs OUTDIR`.
//
// Writes OUTDIR/<id>/index.html (or OUTDIR/<id>.html) for each page with its
// own bundle (esbuild), the JSON its scripts fetch under OUTDIR/api/, shared
// assets under OUTDIR/assets/, an index.html listing every page, and
// OUTDIR/truth.jsonl: one line per page with the snippets a reader must
// find and whether the served HTML (scripts not run, <noscript> ignored)
// already holds them all. Everything is deterministic and offline.

import { createRequire } from 'node:module';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import * as esbuild from 'esbuild';
import { compile } from 'svelte/compiler';

import { allText, makeDoc, rng, sentences, TOPIC_COUNTS } from './src/prose.mjs';
import { servedText } from './src/served.mjs';
import { esc, renderDocHTML } from './src/vanilla/render.mjs';

const HERE = dirname(fileURLToPath(import.meta.url));
const SRC = join(HERE, 'src');

if (process.argv.length !== 3 || process.argv[2].startsWith('-')) {
  console.error('usage: node build.mjs OUTDIR');
  process.exit(2);
}
const OUT = resolve(process.argv[2]);

// ------------------------------------------------------------------ pages
//
// group: a client-only app, b fetched article, c server-rendered + hydrated,
// d noscript wall, e static with incidental scripts, f tricky.
// style: `dir` serves /<id>/ (index.html + app.js), `html` serves /<id>.html
// (bundle under /assets/).

const RECIPES = [
  // a: client-only single-page apps into an empty mount point
  ...['article', 'docs', 'product', 'dashboard'].map((genre) => ({ group: 'a', kind: 'spa-react', genre, make: spaReact })),
  ...['article', 'docs', 'product', 'dashboard'].map((genre) => ({ group: 'a', kind: 'spa-vue', genre, make: spaVue })),
  ...['article', 'docs', 'product', 'dashboard'].map((genre) => ({ group: 'a', kind: 'spa-svelte', genre, make: spaSvelte })),
  ...['docs', 'dashboard'].map((genre) => ({ group: 'a', kind: 'spa-preact', genre, make: spaPreact })),
  ...['article', 'product'].map((genre) => ({ group: 'a', kind: 'spa-lit', genre, make: spaLit })),

  // b: the document is fetched as JSON after load
  { group: 'b', kind: 'fetch-vanilla', genre: 'article', make: fetchVanillaEmptyArticle },
  { group: 'b', kind: 'fetch-vanilla-loading', genre: 'article', style: 'html', make: fetchVanillaLoadingMain },
  { group: 'b', kind: 'fetch-vanilla-spinner', genre: 'product', make: fetchVanillaSpinner },
  { group: 'b', kind: 'fetch-react', genre: 'article', make: fetchReact },
  { group: 'b', kind: 'fetch-react-skeleton', genre: 'docs', make: fetchReactSkeleton },
  { group: 'b', kind: 'fetch-vue', genre: 'article', make: fetchVue },
  { group: 'b', kind: 'fetch-vue-main', genre: 'article', style: 'html', make: fetchVueMain },
  { group: 'b', kind: 'fetch-svelte', genre: 'dashboard', make: fetchSvelte },
  { group: 'b', kind: 'fetch-preact', genre: 'article', make: fetchPreact },
  { group: 'b', kind: 'fetch-lit', genre: 'article', make: fetchLit },

  // c: server-rendered at build time, hydrated in the page
  ...['article', 'docs', 'product'].map((genre) => ({ group: 'c', kind: 'ssr-react', genre, make: ssrReact })),
  ...['article', 'dashboard', 'docs'].map((genre) => ({ group: 'c', kind: 'ssr-vue', genre, make: ssrVue })),
  ...['article', 'product'].map((genre) => ({ group: 'c', kind: 'ssr-svelte', genre, make: ssrSvelte })),
  ...['article', 'dashboard'].map((genre) => ({ group: 'c', kind: 'ssr-preact', genre, make: ssrPreact })),

  // d: <noscript> fallbacks and "please enable JavaScript" walls
  { group: 'd', kind: 'noscript-react', genre: 'article', make: noscriptReact },
  { group: 'd', kind: 'noscript-vue', genre: 'docs', make: noscriptVue },
  { group: 'd', kind: 'js-wall-vanilla', genre: 'article', style: 'html', make: jsWallVanilla },
  { group: 'd', kind: 'noscript-summary', genre: 'article', make: noscriptSummary },
  { group: 'd', kind: 'noscript-full-copy', genre: 'article', make: noscriptFullCopy },
  { group: 'd', kind: 'js-wall-svelte', genre: 'product', make: jsWallSvelte },
  { group: 'd', kind: 'noscript-preact', genre: 'dashboard', make: noscriptPreact },
  { group: 'd', kind: 'noscript-lit', genre: 'article', make: noscriptLit },

  // e: static articles with incidental scripts
  { group: 'e', kind: 'static-analytics', genre: 'article', style: 'html', make: staticAnalytics },
  { group: 'e', kind: 'static-comments', genre: 'article', make: staticComments },
  { group: 'e', kind: 'static-react-island', genre: 'article', make: staticReactIsland },
  { group: 'e', kind: 'static-consent', genre: 'article', style: 'html', make: staticConsent },
  { group: 'e', kind: 'static-docs-search', genre: 'docs', make: staticDocsSearch },
  { group: 'e', kind: 'static-product-recs', genre: 'product', style: 'html', make: staticProductRecs },
  { group: 'e', kind: 'static-empty-root', genre: 'article', make: staticEmptyRoot },
  { group: 'e', kind: 'static-noscript-pixel', genre: 'article', style: 'html', make: staticNoscriptPixel },
  { group: 'e', kind: 'static-vue-related', genre: 'article', make: staticVueRelated },
  { group: 'e', kind: 'static-brief', genre: 'article', short: true, make: staticBrief },
  { group: 'e', kind: 'static-noscript-notice', genre: 'article', make: staticNoscriptNotice },

  // f: tricky
  { group: 'f', kind: 'delayed-insert', genre: 'article', make: delayedInsert },
  { group: 'f', kind: 'delayed-insert-loading', genre: 'article', style: 'html', make: delayedInsertLoading },
  { group: 'f', kind: 'shadow-lit', genre: 'article', make: shadowLit },
  { group: 'f', kind: 'shadow-vanilla', genre: 'article', make: shadowVanilla },
  { group: 'f', kind: 'rich-shell-fetch', genre: 'article', make: richShellFetch },
  { group: 'f', kind: 'ssr-partial', genre: 'article', style: 'html', make: ssrPartial },
  { group: 'f', kind: 'script-redirect', genre: null, target: 'e-static-analytics-article', make: scriptRedirect },
  { group: 'f', kind: 'script-redirect-spa', genre: null, target: 'a-spa-react-article', make: scriptRedirectSpa },
  { group: 'f', kind: 'meta-refresh', genre: null, target: 'c-ssr-react-article', make: metaRefresh },
];

const SITES = {
  article: ['The Harbour Gazette', 'Northern Ledger', 'Field Notes Weekly', 'The Civic Review', 'Coastline Journal', 'Meridian Post', 'The Long Read Quarterly'],
  product: ['Fernhill Supply Co.', 'Outpost Goods', 'Keel and Kettle', 'Larder and Loom'],
};

// ------------------------------------------------------------------ helpers

const DEFINE = {
  'process.env.NODE_ENV': '"production"',
  __VUE_OPTIONS_API__: 'true',
  __VUE_PROD_DEVTOOLS__: 'false',
  __VUE_PROD_HYDRATION_MISMATCH_DETAILS__: 'false',
};

/** esbuild plugin: compiles .svelte files with Svelte's compiler. */
const sveltePlugin = (generate) => ({
  name: 'svelte',
  setup(build) {
    build.onLoad({ filter: /\.svelte$/ }, (args) => {
      const source = readFileSync(args.path, 'utf8');
      const { js } = compile(source, { filename: args.path, generate, dev: false });
      return { contents: js.code, loader: 'js', resolveDir: dirname(args.path) };
    });
  },
});

/** Bundles `code` (JSX allowed; imports resolve from src/) into `outfile`. */
async function bundle(code, outfile, { fw = 'vanilla', format = 'iife' } = {}) {
  await esbuild.build({
    stdin: { contents: code, resolveDir: SRC, loader: 'jsx', sourcefile: `${basename(outfile, '.js')}.entry.jsx` },
    bundle: true,
    minify: true,
    format,
    target: 'es2020',
    platform: 'browser',
    outfile,
    jsx: 'automatic',
    jsxImportSource: fw === 'preact' ? 'preact' : 'react',
    define: DEFINE,
    plugins: [sveltePlugin('client')],
    legalComments: 'none',
    charset: 'utf8',
    logLevel: 'warning',
  });
}

/** Loads the build-time server renderers (React, Vue, Svelte, Preact). */
async function loadRenderers(tmp) {
  const require = createRequire(import.meta.url);
  const out = {};
  for (const [name, entry, fw] of [
    ['react', 'ssr/react.jsx', 'react'],
    ['preact', 'ssr/preact.jsx', 'preact'],
    ['vue', 'ssr/vue.js', 'vue'],
    ['svelte', 'ssr/svelte.js', 'svelte'],
  ]) {
    const outfile = join(tmp, `${name}.cjs`);
    await esbuild.build({
      entryPoints: [join(SRC, entry)],
      bundle: true,
      platform: 'node',
      format: 'cjs',
      target: 'node18',
      outfile,
      jsx: 'automatic',
      jsxImportSource: fw === 'preact' ? 'preact' : 'react',
      define: DEFINE,
      plugins: [sveltePlugin('server')],
      logLevel: 'warning',
    });
    out[name] = require(outfile).render;
  }
  return out;
}

const json = (value) => JSON.stringify(value);
/** JSON safe inside a <script> element. */
const scriptJson = (value) => JSON.stringify(value).replace(/</g, '\\u003c');

/** A whole HTML document. */
function htmlDoc({ title, head = '', body, lang = 'en', bodyClass = '' }) {
  return `<!doctype html>
<html lang="${lang}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${esc(title)}</title>
<link rel="stylesheet" href="/assets/site.css">
${head}</head>
<body${bodyClass ? ` class="${bodyClass}"` : ''}>
${body}
</body>
</html>
`;
}

/** The site chrome of a static page around `inner`. */
function chrome(site, inner) {
  return `<div class="app">
<header class="site-header"><a class="brand" href="/">${esc(site)}</a>
<nav aria-label="Main"><a href="/latest/">Latest</a> <a href="/topics/">Topics</a> <a href="/about/">About</a></nav></header>
<main class="content">
${inner}
</main>
<footer class="site-footer"><p>© 2025 ${esc(site)}</p></footer>
</div>`;
}

const script = (src, { module = false, defer = false } = {}) =>
  `<script${module ? ' type="module"' : ''}${defer ? ' defer' : ''} src="${src}"></script>`;

const ANALYTICS = `<script>window.dataLayer=window.dataLayer||[];function gtag(){dataLayer.push(arguments)}gtag('js',new Date());gtag('config','G-CORPUS01');</script>
<script async src="/assets/analytics.js"></script>
`;

// ------------------------------------------------------------------ recipes
//
// Each returns { html, js?: { code, fw, format }, files?: { relpath: text } }.
// `p` is the page: id, doc, site, jsUrl, apiUrl, title.

function spaReact(p) {
  return {
    html: htmlDoc({ title: p.site, body: `<div id="root"></div>\n${script(p.jsUrl)}` }),
    js: { fw: 'react', code: `import { createRoot } from 'react-dom/client';\nimport { App } from './jsx/views.jsx';\nconst DOC = ${json(p.doc)};\ncreateRoot(document.getElementById('root')).render(<App doc={DOC} />);\n` },
  };
}

function spaVue(p) {
  return {
    html: htmlDoc({ title: p.site, head: script(p.jsUrl, { module: true }), body: '<div id="app"></div>' }),
    js: { fw: 'vue', format: 'esm', code: `import { createApp, h } from 'vue';\nimport { App } from './vue/views.js';\nconst DOC = ${json(p.doc)};\ncreateApp({ render: () => h(App, { doc: DOC }) }).mount('#app');\n` },
  };
}

function spaSvelte(p) {
  return {
    html: htmlDoc({ title: p.site, head: script(p.jsUrl, { module: true }), body: '<div id="app"></div>' }),
    js: { fw: 'svelte', format: 'esm', code: `import { mount } from 'svelte';\nimport App from './svelte/App.svelte';\nconst DOC = ${json(p.doc)};\nmount(App, { target: document.getElementById('app'), props: { doc: DOC } });\n` },
  };
}

function spaPreact(p) {
  return {
    html: htmlDoc({ title: p.site, head: script(p.jsUrl, { defer: true }), body: '<div id="root"></div>' }),
    js: { fw: 'preact', code: `import { render } from 'preact';\nimport { App } from './jsx/views.jsx';\nconst DOC = ${json(p.doc)};\nrender(<App doc={DOC} />, document.getElementById('root'));\n` },
  };
}

function spaLit(p) {
  const tag = p.doc.genre === 'product' ? 'shop-app' : 'news-app';
  return {
    html: htmlDoc({ title: p.site, head: script(p.jsUrl, { module: true }), body: `<${tag}></${tag}>` }),
    js: { fw: 'lit', format: 'esm', code: `import { defineDocElement } from './lit/elements.js';\ndefineDocElement('${tag}', ${json(p.doc)});\n` },
  };
}

function fetchVanillaEmptyArticle(p) {
  return {
    html: htmlDoc({ title: p.site, head: script(p.jsUrl, { defer: true }), body: chrome(p.site, '<article id="story" class="story"></article>') }),
    js: { code: `import { fetchInto } from './vanilla/widgets.js';\nfetchInto('#story', ${json(p.apiUrl)}, { articleTag: false });\n` },
    api: p.doc,
  };
}

function fetchVanillaLoadingMain(p) {
  return {
    html: htmlDoc({
      title: p.site,
      body: `<header class="site-header"><a class="brand" href="/">${esc(p.site)}</a></header>\n<main id="content"><p class="loading">Loading…</p></main>\n${script(p.jsUrl)}`,
    }),
    js: { code: `import { fetchInto } from './vanilla/widgets.js';\nfetchInto('#content', ${json(p.apiUrl)});\n` },
    api: p.doc,
  };
}

function fetchVanillaSpinner(p) {
  return {
    html: htmlDoc({
      title: p.site,
      head: script(p.jsUrl, { defer: true }),
      body: `<header class="site-header"><a class="brand" href="/">${esc(p.site)}</a> <a href="/basket/">Basket</a></header>\n<main id="content" aria-busy="true"><div class="spinner"></div></main>`,
    }),
    js: { code: `import { fetchInto } from './vanilla/widgets.js';\nfetchInto('#content', ${json(p.apiUrl)});\n` },
    api: p.doc,
  };
}

function fetchReact(p) {
  return {
    html: htmlDoc({ title: p.site, body: `<div id="root"></div>\n${script(p.jsUrl)}` }),
    js: { fw: 'react', code: `import { createRoot } from 'react-dom/client';\nimport { FetchApp } from './jsx/react-fetch.jsx';\ncreateRoot(document.getElementById('root')).render(<FetchApp url={${json(p.apiUrl)}} site={${json(p.site)}} placeholder />);\n` },
    api: p.doc,
  };
}

function fetchReactSkeleton(p) {
  return {
    html: htmlDoc({ title: p.site, head: script(p.jsUrl, { defer: true }), body: '<div id="root"><div class="skeleton"><p>Loading documentation…</p></div></div>' }),
    js: { fw: 'react', code: `import { createRoot } from 'react-dom/client';\nimport { FetchApp } from './jsx/react-fetch.jsx';\ncreateRoot(document.getElementById('root')).render(<FetchApp url={${json(p.apiUrl)}} site={${json(p.site)}} />);\n` },
    api: p.doc,
  };
}

function fetchVue(p) {
  return {
    html: htmlDoc({ title: p.site, head: script(p.jsUrl, { module: true }), body: '<div id="app"></div>' }),
    js: { fw: 'vue', format: 'esm', code: `import { createApp, h } from 'vue';\nimport { FetchApp } from './vue/views.js';\ncreateApp({ render: () => h(FetchApp, { url: ${json(p.apiUrl)}, site: ${json(p.site)} }) }).mount('#app');\n` },
    api: p.doc,
  };
}

function fetchVueMain(p) {
  return {
    html: htmlDoc({ title: p.site, head: script(p.jsUrl, { module: true }), body: '<div id="app"><main><p class="loading">Loading…</p></main></div>' }),
    js: { fw: 'vue', format: 'esm', code: `import { createApp, h } from 'vue';\nimport { FetchApp } from './vue/views.js';\ncreateApp({ render: () => h(FetchApp, { url: ${json(p.apiUrl)}, site: ${json(p.site)} }) }).mount('#app');\n` },
    api: p.doc,
  };
}

function fetchSvelte(p) {
  return {
    html: htmlDoc({ title: p.site, head: script(p.jsUrl, { module: true }), body: '<div id="app"></div>' }),
    js: { fw: 'svelte', format: 'esm', code: `import { mount } from 'svelte';\nimport FetchApp from './svelte/FetchApp.svelte';\nmount(FetchApp, { target: document.getElementById('app'), props: { url: ${json(p.apiUrl)}, site: ${json(p.site)} } });\n` },
    api: p.doc,
  };
}

function fetchPreact(p) {
  return {
    html: htmlDoc({ title: p.site, body: `<div id="root"></div>\n${script(p.jsUrl)}` }),
    js: { fw: 'preact', code: `import { render } from 'preact';\nimport { FetchApp } from './jsx/preact-fetch.jsx';\nrender(<FetchApp url={${json(p.apiUrl)}} site={${json(p.site)}} />, document.getElementById('root'));\n` },
    api: p.doc,
  };
}

function fetchLit(p) {
  return {
    html: htmlDoc({ title: p.site, head: script(p.jsUrl, { module: true }), body: '<story-loader></story-loader>' }),
    js: { fw: 'lit', format: 'esm', code: `import { defineFetchElement } from './lit/elements.js';\ndefineFetchElement('story-loader', ${json(p.apiUrl)}, ${json(p.site)});\n` },
    api: p.doc,
  };
}

const dataScript = (doc) => `<script id="__DATA__" type="application/json">${scriptJson(doc)}</script>`;

async function ssrReact(p, r) {
  const markup = await r.react(p.doc);
  return {
    html: htmlDoc({ title: p.doc.title, body: `<div id="root">${markup}</div>\n${dataScript(p.doc)}\n${script(p.jsUrl)}` }),
    js: { fw: 'react', code: `import { hydrateRoot } from 'react-dom/client';\nimport { App } from './jsx/views.jsx';\nconst doc = JSON.parse(document.getElementById('__DATA__').textContent);\nhydrateRoot(document.getElementById('root'), <App doc={doc} />);\n` },
  };
}

async function ssrVue(p, r) {
  const markup = await r.vue(p.doc);
  return {
    html: htmlDoc({ title: p.doc.title, head: script(p.jsUrl, { module: true }), body: `<div id="app">${markup}</div>\n${dataScript(p.doc)}` }),
    js: { fw: 'vue', format: 'esm', code: `import { createSSRApp, h } from 'vue';\nimport { App } from './vue/views.js';\nconst doc = JSON.parse(document.getElementById('__DATA__').textContent);\ncreateSSRApp({ render: () => h(App, { doc }) }).mount('#app');\n` },
  };
}

async function ssrSvelte(p, r) {
  const markup = await r.svelte(p.doc);
  return {
    html: htmlDoc({ title: p.doc.title, head: script(p.jsUrl, { module: true }), body: `<div id="app">${markup}</div>\n${dataScript(p.doc)}` }),
    js: { fw: 'svelte', format: 'esm', code: `import { hydrate } from 'svelte';\nimport App from './svelte/App.svelte';\nconst doc = JSON.parse(document.getElementById('__DATA__').textContent);\nhydrate(App, { target: document.getElementById('app'), props: { doc } });\n` },
  };
}

async function ssrPreact(p, r) {
  const markup = await r.preact(p.doc);
  return {
    html: htmlDoc({ title: p.doc.title, head: script(p.jsUrl, { defer: true }), body: `<div id="root">${markup}</div>\n${dataScript(p.doc)}` }),
    js: { fw: 'preact', code: `import { hydrate } from 'preact';\nimport { App } from './jsx/views.jsx';\nconst doc = JSON.parse(document.getElementById('__DATA__').textContent);\nhydrate(<App doc={doc} />, document.getElementById('root'));\n` },
  };
}

function noscriptReact(p) {
  const page = spaReact(p);
  page.html = htmlDoc({ title: p.site, body: `<noscript>You need to enable JavaScript to run this app.</noscript>\n<div id="root"></div>\n${script(p.jsUrl)}` });
  return page;
}

function noscriptVue(p) {
  const page = spaVue(p);
  page.html = htmlDoc({
    title: p.site,
    head: script(p.jsUrl, { module: true }),
    body: `<noscript><strong>We're sorry but ${esc(p.site)} doesn't work properly without JavaScript enabled. Please enable it to continue.</strong></noscript>\n<div id="app"></div>`,
  });
  return page;
}

function jsWallVanilla(p) {
  return {
    html: htmlDoc({
      title: p.site,
      body: chrome(p.site, '<div class="js-required"><h2>JavaScript required</h2><p>Please enable JavaScript in your browser to read this article.</p></div>\n<article id="story" class="story"></article>') + `\n${script(p.jsUrl)}`,
    }),
    js: { code: `import { insertDoc, removeWall } from './vanilla/widgets.js';\nremoveWall('.js-required');\ninsertDoc('#story', ${json(p.doc)}, { articleTag: false });\n` },
  };
}

function noscriptSummary(p) {
  const lead = p.doc.sections[0].paragraphs[0];
  return {
    html: htmlDoc({
      title: p.doc.title,
      head: script(p.jsUrl, { defer: true }),
      body: `<noscript><h1>${esc(p.doc.title)}</h1><p>${esc(lead)}</p><p>Enable JavaScript to read the full story.</p></noscript>\n<div id="root"></div>`,
    }),
    js: spaReact(p).js,
  };
}

function noscriptFullCopy(p) {
  return {
    html: htmlDoc({
      title: p.doc.title,
      head: script(p.jsUrl, { module: true }),
      body: `<noscript>${renderDocHTML(p.doc)}</noscript>\n<div id="app"></div>`,
    }),
    js: spaSvelte(p).js,
  };
}

function jsWallSvelte(p) {
  return {
    html: htmlDoc({
      title: p.site,
      head: script(p.jsUrl, { module: true }),
      body: `<div id="app"><div class="js-wall"><p>This shop needs JavaScript to show products and prices. Please turn it on and reload the page.</p></div></div>\n<noscript><p>JavaScript is switched off in your browser.</p></noscript>`,
    }),
    js: { fw: 'svelte', format: 'esm', code: `import { mount } from 'svelte';\nimport App from './svelte/App.svelte';\nconst target = document.getElementById('app');\ntarget.textContent = '';\nmount(App, { target, props: { doc: ${json(p.doc)} } });\n` },
  };
}

function noscriptPreact(p) {
  const page = spaPreact(p);
  page.html = htmlDoc({
    title: p.site,
    head: script(p.jsUrl, { defer: true }),
    body: `<noscript><p>This dashboard needs JavaScript. Try the <a href="/lite/">lite version</a> instead.</p></noscript>\n<div id="root"></div>`,
  });
  return page;
}

function noscriptLit(p) {
  return {
    html: htmlDoc({ title: p.site, head: script(p.jsUrl, { module: true }), body: '<noscript>Enable JavaScript to view this page.</noscript>\n<story-viewer></story-viewer>' }),
    js: { fw: 'lit', format: 'esm', code: `import { defineDocElement } from './lit/elements.js';\ndefineDocElement('story-viewer', ${json(p.doc)});\n` },
  };
}

function staticArticle(p, { after = '', head = '', bodyEnd = '' } = {}) {
  return htmlDoc({
    title: p.doc.title,
    head: `<meta name="description" content="${esc(p.doc.dek || p.doc.title)}">\n${head}`,
    body: chrome(p.site, renderDocHTML(p.doc) + after) + (bodyEnd ? `\n${bodyEnd}` : ''),
  });
}

function staticAnalytics(p) {
  return { html: staticArticle(p, { head: ANALYTICS }) };
}

function staticComments(p, _r, ctx) {
  return {
    html: staticArticle(p, {
      head: script(p.jsUrl, { defer: true }),
      after: '\n<section class="comments"><h2>Comments</h2><div id="comments"></div><noscript>Please enable JavaScript to view the comments.</noscript></section>',
    }),
    js: { code: `import { comments } from './vanilla/widgets.js';\ncomments('#comments', ${json(`/api/comments/${p.id}.json`)});\n` },
    files: { [`api/comments/${p.id}.json`]: json(ctx.comments(p.id)) },
  };
}

function staticReactIsland(p) {
  return {
    html: staticArticle(p, { after: '\n<div id="share-root"></div>', bodyEnd: script(p.jsUrl) }),
    js: {
      fw: 'react',
      code: `import { useState } from 'react';\nimport { createRoot } from 'react-dom/client';\nfunction Share() {\n  const [likes, setLikes] = useState(12);\n  return <div className="share"><button onClick={() => setLikes(likes + 1)}>Like ({likes})</button> <button>Share</button></div>;\n}\ncreateRoot(document.getElementById('share-root')).render(<Share />);\n`,
    },
  };
}

function staticConsent(p) {
  return {
    html: staticArticle(p, { head: ANALYTICS + script(p.jsUrl, { defer: true }) }),
    js: { code: `import { consentBanner } from './vanilla/widgets.js';\nconsentBanner();\n` },
  };
}

function staticDocsSearch(p) {
  return {
    html: htmlDoc({
      title: p.doc.title,
      head: script(p.jsUrl, { defer: true }),
      body: chrome(p.site, `<div id="search"></div>\n${renderDocHTML(p.doc)}`),
    }),
    js: {
      fw: 'preact',
      code: `import { render } from 'preact';\nimport { useState } from 'preact/hooks';\nfunction Search() {\n  const [q, setQ] = useState('');\n  return <form role="search" className="doc-search"><input value={q} onInput={(e) => setQ(e.currentTarget.value)} placeholder="Search the docs" /></form>;\n}\nrender(<Search />, document.getElementById('search'));\n`,
    },
  };
}

function staticProductRecs(p, _r, ctx) {
  return {
    html: htmlDoc({
      title: p.doc.title,
      head: script(p.jsUrl, { defer: true }),
      body: chrome(p.site, `${renderDocHTML(p.doc)}\n<section id="recs"></section>`),
    }),
    js: { code: `import { recommendations } from './vanilla/widgets.js';\nrecommendations('#recs', ${json(`/api/recs/${p.id}.json`)});\n` },
    files: { [`api/recs/${p.id}.json`]: json(ctx.recs(p.id)) },
  };
}

function staticEmptyRoot(p) {
  return {
    html: staticArticle(p, { after: '\n<div id="root"></div>', head: script(p.jsUrl, { defer: true }) }),
    js: { code: `import { newsletter } from './vanilla/widgets.js';\nnewsletter('#root');\n` },
  };
}

function staticNoscriptPixel(p) {
  return {
    html: staticArticle(p, {
      head: ANALYTICS,
      bodyEnd: '<noscript><img src="/assets/pixel.gif" width="1" height="1" alt=""></noscript>',
    }),
  };
}

function staticVueRelated(p, _r, ctx) {
  return {
    html: staticArticle(p, { after: '\n<aside id="related"></aside>', head: script(p.jsUrl, { module: true }) }),
    js: { fw: 'vue', format: 'esm', code: `import { createApp, h } from 'vue';\nimport { Related } from './vue/views.js';\ncreateApp({ render: () => h(Related, { items: ${json(ctx.related(p.id))} }) }).mount('#related');\n` },
  };
}

function staticBrief(p) {
  return { html: staticArticle(p, { head: ANALYTICS }) };
}

function staticNoscriptNotice(p) {
  return {
    html: staticArticle(p, {
      head: ANALYTICS + script(p.jsUrl, { defer: true }),
      bodyEnd: '<noscript><div class="notice"><p>For the best experience on this site, please enable JavaScript in your browser.</p></div></noscript>',
    }),
    js: { code: `import { consentBanner } from './vanilla/widgets.js';\nconsentBanner();\n` },
  };
}

function delayedInsert(p) {
  return {
    html: htmlDoc({ title: p.site, head: script(p.jsUrl, { defer: true }), body: chrome(p.site, '<article id="story" class="story"></article>') }),
    js: { code: `import { insertAfterLoad } from './vanilla/widgets.js';\ninsertAfterLoad('#story', ${json(p.doc)}, 800, { articleTag: false });\n` },
  };
}

function delayedInsertLoading(p) {
  return {
    html: htmlDoc({ title: p.site, body: chrome(p.site, '<div id="story"><p class="loading">Loading…</p></div>') + `\n${script(p.jsUrl)}` }),
    js: { code: `import { insertAfterLoad } from './vanilla/widgets.js';\ninsertAfterLoad('#story', ${json(p.doc)}, 800);\n` },
  };
}

function shadowLit(p) {
  return {
    html: htmlDoc({ title: p.site, head: script(p.jsUrl, { module: true }), body: chrome(p.site, '<story-card></story-card>') }),
    js: { fw: 'lit', format: 'esm', code: `import { defineDocElement } from './lit/elements.js';\ndefineDocElement('story-card', ${json(p.doc)}, { shadow: true, bare: true });\n` },
  };
}

function shadowVanilla(p) {
  return {
    html: htmlDoc({ title: p.site, head: script(p.jsUrl, { defer: true }), body: chrome(p.site, '<article-view></article-view>') }),
    js: { code: `import { defineShadowArticle } from './vanilla/widgets.js';\ndefineShadowArticle('article-view', ${json(p.doc)});\n` },
  };
}

// A server-rendered shell that is mostly navigation, teasers and footer
// (a few hundred words), around an empty <article> the script fills.
function richShellFetch(p, _r, ctx) {
  const sections = ['News', 'Climate', 'Cities', 'Science', 'Culture', 'Food', 'Travel'];
  const menu = sections
    .map((name) => `<li><a href="/${name.toLowerCase()}/">${name}</a><ul>${['Latest', 'Features', 'Opinion', 'Photo essays'].map((x) => `<li><a href="/${name.toLowerCase()}/${x.toLowerCase().replace(' ', '-')}/">${x}</a></li>`).join('')}</ul></li>`)
    .join('');
  const teasers = ctx.teasers(p.id, 6)
    .map((t) => `<li><a href="/story/${t.slug}/"><h3>${esc(t.title)}</h3></a><p>${esc(t.dek)}</p></li>`)
    .join('');
  const about = `${esc(p.site)} is an independent, reader-funded publication covering community projects, local history and the people who keep old crafts alive. Our reporters work from six regional desks, and every story is checked by an editor before it is published. We do not run sponsored content, and we correct our mistakes openly on our corrections page.`;
  return {
    html: htmlDoc({
      title: p.site,
      head: script(p.jsUrl, { defer: true }),
      body: `<header class="site-header"><a class="brand" href="/">${esc(p.site)}</a>
<nav aria-label="Sections"><ul class="mega-menu">${menu}</ul></nav></header>
<div class="layout">
<main class="content"><article id="story" class="story"></article></main>
<aside class="most-read"><h2>Most read this week</h2><ol>${teasers}</ol></aside>
</div>
<footer class="site-footer"><section><h2>About us</h2><p>${about}</p></section>
<section><h2>Newsletters</h2><p>Sign up for the morning briefing, the weekend long read and our monthly letter from the regional desks.</p></section>
<ul><li><a href="/contact/">Contact</a></li><li><a href="/jobs/">Jobs</a></li><li><a href="/privacy/">Privacy</a></li><li><a href="/terms/">Terms</a></li><li><a href="/corrections/">Corrections</a></li></ul></footer>`,
    }),
    js: { code: `import { fetchInto } from './vanilla/widgets.js';\nfetchInto('#story', ${json(p.apiUrl)}, { articleTag: false });\n` },
    api: p.doc,
  };
}

// The first sections are server-rendered; the rest of the article is
// fetched after load (a "lazy body").
function ssrPartial(p) {
  const served = { ...p.doc, sections: p.doc.sections.slice(0, 2) };
  const inner = renderDocHTML(served, { articleTag: false });
  return {
    html: htmlDoc({
      title: p.doc.title,
      body: chrome(p.site, `<article class="story">${inner}\n<div id="rest"><p class="loading">Loading the rest of the article…</p></div></article>`) + `\n${script(p.jsUrl)}`,
    }),
    js: { code: `import { fetchRest } from './vanilla/widgets.js';\nfetchRest('#rest', ${json(`/api/${p.id}-rest.json`)});\n` },
    files: { [`api/${p.id}-rest.json`]: json({ sections: p.doc.sections.slice(2) }) },
  };
}

function scriptRedirect(p) {
  return {
    html: htmlDoc({
      title: 'Moved',
      head: `<script>location.replace(${json(p.targetPath)});</script>\n`,
      body: `<p>This article has moved. You are being redirected to its new address.</p>`,
    }),
  };
}

function scriptRedirectSpa(p) {
  return {
    html: htmlDoc({ title: 'Moved', body: `<p>Redirecting…</p>\n${script(p.jsUrl)}` }),
    js: { code: `const to = new URL(${json(p.targetPath)}, location.href);\nif (to.href !== location.href) location.replace(to.href);\n` },
  };
}

function metaRefresh(p) {
  return {
    html: htmlDoc({
      title: 'Moved',
      head: `<meta http-equiv="refresh" content="0; url=${p.targetPath}">\n`,
      body: `<p>This page has moved to <a href="${p.targetPath}">its new address</a>.</p>`,
    }),
  };
}

const norm = (s) => s.replace(/\s+/g, ' ').trim();

// ------------------------------------------------------------------ main

async function main() {
  if (existsSync(OUT) && readdirSync(OUT).length > 0) {
    if (!existsSync(join(OUT, 'truth.jsonl'))) {
      console.error(`${OUT} is not empty and holds no truth.jsonl: refusing to overwrite it`);
      process.exit(2);
    }
    rmSync(OUT, { recursive: true, force: true });
  }
  mkdirSync(join(OUT, 'assets'), { recursive: true });

  // Pages with their documents.
  const counters = { article: 0, docs: 0, product: 0, dashboard: 0 };
  const pages = [];
  for (const recipe of RECIPES) {
    let id = `${recipe.group}-${recipe.kind}${recipe.genre ? `-${recipe.genre}` : ''}`;
    if (pages.some((q) => q.id === id)) throw new Error(`duplicate page id ${id}`);
    const style = recipe.style || 'dir';
    const page = {
      ...recipe,
      id,
      style,
      path: style === 'dir' ? `/${id}/` : `/${id}.html`,
      jsUrl: style === 'dir' ? `/${id}/app.js` : `/assets/${id}.js`,
      apiUrl: `/api/${id}.json`,
    };
    if (recipe.genre) {
      const index = counters[recipe.genre]++;
      if (index >= TOPIC_COUNTS[recipe.genre]) throw new Error(`more ${recipe.genre} pages than topics`);
      const doc = makeDoc(recipe.genre, id, index);
      if (recipe.short) doc.sections = doc.sections.slice(0, 3);
      const r = rng(`site:${id}`);
      doc.site =
        recipe.genre === 'docs' ? `${doc.title.split(' ')[0]} docs`
        : recipe.genre === 'dashboard' ? `${doc.title.split(':')[0]} Operations`
        : r.pick(SITES[recipe.genre]);
      page.doc = doc;
      page.site = doc.site;
    }
    pages.push(page);
  }

  // Expected snippets: 2–4 sentences of the page's prose found on no other page.
  const texts = new Map(pages.filter((p) => p.doc).map((p) => [p.id, norm(allText(p.doc))]));
  for (const page of pages.filter((p) => p.doc)) {
    const others = [...texts].filter(([id]) => id !== page.id).map(([, t]) => t);
    let pool = page.doc.sections.flatMap((s, i) => (page.kind === 'noscript-summary' && i === 0 ? [] : [s]));
    // Distinctive: not on any other page even with the numbers taken out
    // ("at least 5 years" and "at least 12 years" are one sentence).
    const digitless = (t) => t.replace(/[0-9][0-9,.]*/g, '#');
    const othersDigitless = others.map(digitless);
    const candidates = sentences({ sections: pool }).filter(
      (s) =>
        s.split(' ').length >= 8 &&
        !/["{}<>&*_#\[\]\\`]/.test(s) &&
        !/^\d/.test(s) &&
        !othersDigitless.some((t) => t.includes(digitless(s))),
    );
    const want = 2 + (rng(`n:${page.id}`).int(0, 2));
    const n = Math.min(want, candidates.length);
    if (n < 2) throw new Error(`${page.id}: only ${candidates.length} distinctive sentences`);
    page.expected = [...new Set(Array.from({ length: n }, (_, k) => candidates[Math.round((k * (candidates.length - 1)) / Math.max(1, n - 1))]))];
  }
  for (const page of pages.filter((p) => p.target)) {
    const target = pages.find((q) => q.id === page.target);
    if (!target) throw new Error(`${page.id}: no page ${page.target}`);
    page.targetPath = target.path;
    page.expected = target.expected;
  }

  // Incidental data of the static pages.
  const ctx = {
    comments: (id) => {
      const r = rng(`comments:${id}`);
      const lines = [
        'Great piece, thanks for writing it.', 'I visited last year and can confirm every word.',
        'Would love a follow-up on how the funding question turns out.', 'My grandfather did this work for forty years.',
        'Shared this with our local council.', 'The photographs in the print edition were wonderful.',
      ];
      return r.sample(lines, r.int(3, 5)).map((text) => ({ author: r.pick(['amelia_r', 'kofi.b', 'jt1984', 'marisol', 'northwind', 'pete_h']), text }));
    },
    recs: (id) => {
      const r = rng(`recs:${id}`);
      return r.sample(['Canvas Tote Bag', 'Enamel Camp Mug', 'Linen Tea Towel', 'Beeswax Candle', 'Wool Beanie', 'Field Notebook'], 4).map((name) => ({ name, price: `€${r.int(9, 49)}.00` }));
    },
    teasers: (id, n) => {
      const others = pages.filter((p) => p.genre === 'article' && p.id !== id && p.doc);
      return rng(`teasers:${id}`).sample(others, n).map((p) => ({ slug: p.id, title: p.doc.title, dek: p.doc.dek }));
    },
    related: (id) => {
      const others = pages.filter((p) => p.genre === 'article' && p.id !== id && p.doc);
      return rng(`related:${id}`).sample(others, 3).map((p) => p.doc.title);
    },
  };

  // Build-time server renderers.
  const tmp = mkdtempSync(join(tmpdir(), 'jscorpus-ssr-'));
  let renderers;
  try {
    renderers = await loadRenderers(tmp);
  } finally {
    // The renderers are loaded into this process; their files can go.
    process.on('exit', () => rmSync(tmp, { recursive: true, force: true }));
  }

  // Pages, bundles and data.
  const truth = [];
  for (const page of pages) {
    const built = await page.make(page, renderers, ctx);
    const htmlPath = page.style === 'dir' ? join(OUT, page.id, 'index.html') : join(OUT, `${page.id}.html`);
    mkdirSync(dirname(htmlPath), { recursive: true });
    writeFileSync(htmlPath, built.html);
    if (built.js) {
      const jsPath = join(OUT, page.jsUrl.slice(1));
      await bundle(built.js.code, jsPath, { fw: built.js.fw, format: built.js.format });
    }
    if (built.api) {
      mkdirSync(join(OUT, 'api'), { recursive: true });
      writeFileSync(join(OUT, page.apiUrl.slice(1)), json(built.api));
    }
    for (const [rel, text] of Object.entries(built.files || {})) {
      mkdirSync(dirname(join(OUT, rel)), { recursive: true });
      writeFileSync(join(OUT, rel), text);
    }
    const served = servedText(built.html);
    const found = page.expected.map((s) => served.includes(norm(s)));
    const words = page.doc ? norm(allText(page.doc)).split(' ').length : 0;
    if (page.genre === 'article' && words < 150) throw new Error(`${page.id}: only ${words} words`);
    truth.push({
      id: page.id,
      path: page.path,
      group: page.group,
      kind: page.kind,
      genre: page.genre || 'redirect',
      expected: page.expected,
      served_sufficient: found.every(Boolean),
      served_found: found.filter(Boolean).length,
      served_words: served ? served.split(' ').length : 0,
      doc_words: words,
      ...(page.target ? { redirects_to: page.targetPath } : {}),
    });
  }

  // Shared assets.
  writeFileSync(join(OUT, 'assets', 'site.css'), readFileSync(join(SRC, 'site.css')));
  // A 1×1 transparent GIF for the noscript pixel.
  const gif = Buffer.from('R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7', 'base64');
  writeFileSync(join(OUT, 'assets', 'pixel.gif'), gif);
  // Browsers ask for /favicon.ico: a 1×1 GIF keeps that from being a 404.
  writeFileSync(join(OUT, 'favicon.ico'), gif);
  await bundle(readFileSync(join(SRC, 'vanilla', 'analytics.js'), 'utf8'), join(OUT, 'assets', 'analytics.js'));
  writeFileSync(
    join(OUT, 'index.html'),
    htmlDoc({
      title: 'oxwright JS corpus',
      body: `<h1>oxwright JS corpus</h1>\n<ul>\n${truth.map((t) => `<li><a href="${t.path}">${t.id}</a> (${t.group}, ${t.kind}, served ${t.served_sufficient ? 'sufficient' : 'insufficient'})</li>`).join('\n')}\n</ul>`,
    }),
  );
  writeFileSync(join(OUT, 'truth.jsonl'), truth.map((t) => JSON.stringify(t)).join('\n') + '\n');

  // Report.
  const byGroup = new Map();
  const byKind = new Map();
  for (const t of truth) {
    for (const [map, key] of [[byGroup, t.group], [byKind, `${t.group} ${t.kind}`]]) {
      const row = map.get(key) || { pages: 0, sufficient: 0 };
      row.pages++;
      if (t.served_sufficient) row.sufficient++;
      map.set(key, row);
    }
  }
  console.log(`${truth.length} pages in ${OUT}`);
  console.log('group  pages  served_sufficient');
  for (const [g, row] of [...byGroup].sort()) console.log(`${g.padEnd(6)} ${String(row.pages).padStart(5)}  ${String(row.sufficient).padStart(17)}`);
  console.log('\nkind                            pages  served_sufficient');
  for (const [k, row] of byKind) console.log(`${k.padEnd(31)} ${String(row.pages).padStart(5)}  ${String(row.sufficient).padStart(17)}`);
  const total = truth.filter((t) => t.served_sufficient).length;
  console.log(`\nserved_sufficient: ${total} of ${truth.length}`);
}

await main();
