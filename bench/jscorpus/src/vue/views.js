// Views of a page document for Vue 3, as render functions (h), so the same
// components render on the server (renderToString) and hydrate in the page.
import { h, ref, onMounted, defineComponent } from 'vue';

const sections = (list) =>
  list.map((s) =>
    h('section', [
      s.heading ? h('h2', s.heading) : null,
      ...s.paragraphs.map((p) => h('p', p)),
      s.code ? h('pre', [h('code', s.code)]) : null,
      s.list ? h('ul', s.list.map((li) => h('li', li))) : null,
    ]),
  );

const views = {
  article: (doc) =>
    h('article', { class: 'story' }, [
      h('header', { class: 'story-header' }, [
        h('h1', doc.title),
        doc.dek ? h('p', { class: 'dek' }, doc.dek) : null,
        h('p', { class: 'byline' }, [`${doc.byline} · `, h('time', doc.date)]),
      ]),
      ...sections(doc.sections),
    ]),
  docs: (doc) =>
    h('div', { class: 'docs-layout' }, [
      h('nav', { class: 'docs-nav', 'aria-label': 'Documentation' }, [
        h('ul', doc.nav.map((n) => h('li', [h('a', { href: '#' + n.toLowerCase().replace(/ /g, '-') }, n)]))),
      ]),
      h('article', { class: 'docs-body' }, [h('h1', doc.title), h('p', { class: 'dek' }, doc.dek), ...sections(doc.sections)]),
    ]),
  product: (doc) =>
    h('div', { class: 'product' }, [
      h('h1', doc.title),
      h('p', { class: 'price' }, doc.price),
      h('button', { type: 'button', class: 'buy' }, 'Add to basket'),
      ...sections(doc.sections),
      h('h2', 'Specifications'),
      h('table', { class: 'specs' }, [h('tbody', doc.specs.map(([k, v]) => h('tr', [h('th', k), h('td', v)])))]),
      h('h2', 'Reviews'),
      h('ul', { class: 'reviews' }, doc.reviews.map((r) =>
        h('li', [h('p', { class: 'stars' }, `${r.stars} out of 5 stars`), h('p', r.text), h('p', { class: 'reviewer' }, r.author)]))),
    ]),
  dashboard: (doc) =>
    h('div', { class: 'dashboard' }, [
      h('h1', doc.title),
      h('p', { class: 'dek' }, doc.dek),
      h('ul', { class: 'cards' }, doc.cards.map(([k, v]) => h('li', [h('span', { class: 'label' }, k), ' ', h('strong', v)]))),
      ...sections(doc.sections),
      h('table', { class: 'data' }, [
        h('caption', doc.table.caption),
        h('thead', [h('tr', doc.table.head.map((c) => h('th', c)))]),
        h('tbody', doc.table.rows.map((row) => h('tr', row.map((c) => h('td', c))))),
      ]),
    ]),
};

export const Page = defineComponent({
  props: { doc: Object },
  setup: (props) => () => views[props.doc.genre](props.doc),
});

const chrome = (site, inner) =>
  h('div', { class: 'app' }, [
    h('header', { class: 'site-header' }, [
      h('a', { class: 'brand', href: '/' }, site),
      h('nav', { 'aria-label': 'Main' }, [h('a', { href: '/latest/' }, 'Latest'), ' ', h('a', { href: '/topics/' }, 'Topics'), ' ', h('a', { href: '/about/' }, 'About')]),
    ]),
    h('main', { class: 'content' }, [inner]),
    h('footer', { class: 'site-footer' }, [h('p', `© 2025 ${site}`)]),
  ]);

export const App = defineComponent({
  props: { doc: Object },
  setup: (props) => () => chrome(props.doc.site, h(Page, { doc: props.doc })),
});

/** Fetches its document after mount; shows "Loading…" until then. */
export const FetchApp = defineComponent({
  props: { url: String, site: String },
  setup(props) {
    const doc = ref(null);
    onMounted(async () => {
      const res = await fetch(props.url);
      doc.value = await res.json();
    });
    return () => chrome(props.site, doc.value ? h(Page, { doc: doc.value }) : h('p', { class: 'loading' }, 'Loading…'));
  },
});

/** A small "related stories" list (an incidental widget on static pages). */
export const Related = defineComponent({
  props: { items: Array },
  setup: (props) => () =>
    h('div', { class: 'related' }, [h('h2', 'Related stories'), h('ul', props.items.map((t) => h('li', [h('a', { href: '#' }, t)])))]),
});
