//! The suite's pages: plain HTML, one document per case's needs.

/// The suite's documents: `(path, html)`. `other_origin` is the base URL of
/// a second origin serving the same documents (for cross-origin frames).
pub fn pages(other_origin: &str) -> Vec<(String, String)> {
    let page = |title: &str, body: &str| {
        format!(
            "<!doctype html><html><head><meta charset=utf-8><title>{title}</title></head><body>{body}</body></html>"
        )
    };
    vec![
        ("/suite/data".into(), "SUITE-DATA-BODY".into()),
        (
            "/suite/drag".into(),
            page(
                "Suite drag",
                r#"<h1>Drag</h1>
<style>.box { display: inline-block; width: 120px; height: 60px; margin: 20px; border: 1px solid #888; }</style>
<div class="box" id="card" draggable="true">Card</div><div class="box" id="bin">Bin</div>
<p id="dropped">Nothing dropped</p>
<div class="box" id="knob">Knob</div><div class="box" id="end">End</div>
<p id="released">Nothing released</p>
<script>
const $ = (id) => document.getElementById(id);
$('card').addEventListener('dragstart', (e) => e.dataTransfer.setData('text/plain', 'card-42'));
$('bin').addEventListener('dragover', (e) => e.preventDefault());
$('bin').addEventListener('drop', (e) => { e.preventDefault(); $('dropped').textContent = 'Dropped ' + e.dataTransfer.getData('text/plain'); });
// A pointer-driven drag: pressed on the knob, moved, released over the end.
let moves = -1;
$('knob').addEventListener('mousedown', () => { moves = 0; });
document.addEventListener('mousemove', () => { if (moves >= 0) moves++; });
document.addEventListener('mouseup', (e) => {
  if (moves < 0) return;
  const over = document.elementFromPoint(e.clientX, e.clientY);
  $('released').textContent = 'Released over ' + (over ? over.id : 'nothing') + (moves > 0 ? ' after moving' : ' without moving');
  moves = -1;
});
</script>"#,
            ),
        ),
        (
            "/suite/clicks".into(),
            page(
                "Suite clicks",
                r#"<h1>Clicks</h1>
<button id="b" type="button">Press me</button>
<p id="log">No click yet</p>
<script>
const b = document.getElementById('b'), log = document.getElementById('log');
const say = (kind, e) => {
  log.textContent = 'Saw ' + kind + ' of button ' + e.button + (e.shiftKey ? ' with shift' : '')
    + (e.ctrlKey ? ' with control' : '') + (e.altKey ? ' with alt' : '') + (e.metaKey ? ' with meta' : '');
};
b.addEventListener('click', (e) => say('click', e));
b.addEventListener('contextmenu', (e) => { e.preventDefault(); say('contextmenu', e); });
b.addEventListener('auxclick', (e) => { if (e.button === 1) say('auxclick', e); });
</script>"#,
            ),
        ),
        (
            "/suite/index".into(),
            page(
                "Suite index",
                r#"<h1>Suite index</h1>
<p>Unique paragraph text</p>
<nav><a href="/suite/form">Form page</a> <a href="/suite/done">Done page</a></nav>
<button id="plain" type="button">Plain button</button>
<button type="button" data-testid="primary">Primary</button>
<button type="button">Twin</button><button type="button">Twin</button>
<button type="button" style="display:none">Hidden button</button>
<input type="search" placeholder="Search the suite">"#,
            ),
        ),
        (
            "/suite/form".into(),
            page(
                "Suite form",
                r#"<h1>Form</h1>
<form action="/suite/done" method="get">
<label for="email">Email</label><input id="email" name="email" type="email">
<label><input type="checkbox" name="subscribe" value="yes"> Subscribe</label>
<label for="country">Country</label>
<select id="country" name="country"><option value="us">United States</option><option value="jp">Japan</option></select>
<label for="pw">Password</label><input id="pw" name="pw" type="password">
<button type="submit">Send</button>
</form>"#,
            ),
        ),
        (
            "/suite/table".into(),
            page(
                "Suite table",
                r#"<h1>Orders</h1>
<table id="orders"><caption>Orders</caption>
<thead><tr><th>Order</th><th>Total</th></tr></thead>
<tbody><tr><td>A-1</td><td>$10.00</td></tr><tr><td>B-2</td><td>$7.50</td></tr></tbody>
</table>
<table id="bare"><tr><td>x</td><td>1</td></tr><tr><td>y</td><td>2</td></tr></table>"#,
            ),
        ),
        (
            "/suite/tabs".into(),
            page(
                "Suite tabs",
                // As jQuery UI's tabs widget leaves its markup.
                r##"<div id="tabs" class="ui-tabs">
<ul role="tablist" class="ui-tabs-nav">
<li role="tab" tabindex="0" aria-controls="tab-billing" aria-selected="true"><a href="#tab-billing" role="presentation" tabindex="-1" id="ui-id-1">Billing</a></li>
<li role="tab" tabindex="-1" aria-controls="tab-shipping" aria-selected="false"><a href="#tab-shipping" role="presentation" tabindex="-1" id="ui-id-2">Shipping</a></li>
</ul>
<div id="tab-billing" role="tabpanel"><p>Billing address</p></div>
<div id="tab-shipping" role="tabpanel"><p>Shipping address</p></div>
</div>
<h2 role="none" aria-describedby="tabs">Described heading</h2>
<h2 role="presentation">Plain heading</h2>
<a role="presentation">Not focusable</a>"##,
            ),
        ),
        (
            "/suite/done".into(),
            page("Suite done", "<h1>Done</h1><p>Thanks</p>"),
        ),
        (
            "/suite/shadow".into(),
            page(
                "Suite shadow",
                r#"<h1>Shadow</h1><x-widget></x-widget><p id="out">idle</p>
<script>
customElements.define('x-widget', class extends HTMLElement {
  connectedCallback() {
    const root = this.attachShadow({ mode: 'open' });
    root.innerHTML = '<p>Inside shadow</p><button type="button">Shadow button</button>';
    root.querySelector('button').addEventListener('click', () => { document.getElementById('out').textContent = 'Shadow clicked'; });
  }
});
</script>"#,
            ),
        ),
        (
            "/suite/frames".into(),
            page(
                "Suite frames",
                &format!(
                    r#"<h1>Frames</h1><iframe title="Same origin" src="/suite/inner" width="400" height="120"></iframe>
<iframe title="Other origin" src="{other_origin}/suite/inner-x" width="400" height="120"></iframe>"#
                ),
            ),
        ),
        (
            "/suite/inner".into(),
            page(
                "Inner",
                r#"<button type="button" onclick="this.textContent='Inner clicked'">Inner button</button>"#,
            ),
        ),
        (
            "/suite/inner-x".into(),
            page(
                "Inner other",
                r#"<button type="button" onclick="this.textContent='Remote clicked'">Remote button</button>"#,
            ),
        ),
        (
            "/suite/scripted".into(),
            page(
                "Suite scripted",
                r#"<h1>Scripted</h1><p id="out">idle</p>
<button type="button" onclick="alert('Hi there'); document.getElementById('out').textContent = 'after alert'">Alert</button>
<script>console.log('hello from suite'); setTimeout(() => { const p = document.createElement('p'); p.textContent = 'Late text'; document.body.appendChild(p); }, 300);</script>"#,
            ),
        ),
        (
            "/suite/late".into(),
            page(
                "Suite late",
                r##"<h1 id="top">Late</h1>
<a href="#bottom">To the bottom</a>
<button type="button" onclick="setTimeout(() => { const t = Date.now(); while (Date.now() - t < 150) {} location.assign('/suite/done'); }, 0)">Go later</button>
<button type="button" onclick="requestAnimationFrame(() => requestAnimationFrame(() => location.assign('/suite/done')))">Go after two frames</button>
<div style="height:3000px"></div><p id="bottom">Bottom</p>"##,
            ),
        ),
    ]
}
