// An analytics-like snippet: queues events and keeps them in memory (it
// sends nothing anywhere).
const queue = (window.dataLayer = window.dataLayer || []);
const t0 = performance.now();
queue.push({ event: 'page_view', path: location.pathname, referrer: document.referrer });
window.addEventListener('load', () => queue.push({ event: 'timing', load_ms: Math.round(performance.now() - t0) }));
document.addEventListener('visibilitychange', () => queue.push({ event: 'visibility', state: document.visibilityState }));
