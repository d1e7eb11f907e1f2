use super::*;
use serde_json::json;

const LISTING: &str = r#"<!doctype html><html><head><title>Shop</title>
<script>var cards = "<div class='card'>not a card</div>";</script></head>
<body><main>
<div class="card" data-id="p1">
  <h2>  Blue   Kettle </h2>
  <span class="price">Now $24.50 only</span>
  <a href="/p/1">details</a>
  <div class="maker"><b>Acme</b> <i>Ltd</i></div>
  <ul><li class="tag">Kitchen</li><li class="tag">STEEL</li></ul>
  <div class="review"><p>Good <em>kettle</em>, loud.</p><span class="by">ann</span></div>
  <div class="review"><p>Loud</p></div>
</div>
<div class="card" data-id="p2">
  <h2>Red Mug</h2>
  <a href="/p/2">details</a>
  <style>.x{}</style>
</div>
</main></body></html>"#;

fn schema(v: Value) -> CssSchema {
    CssSchema::from_value(&v).unwrap()
}

#[test]
fn every_field_type_reads_as_crawl4ai_reads_it() {
    let s = schema(json!({
        "name": "Products",
        "baseSelector": "div.card",
        "baseFields": [{"name": "id", "type": "attribute", "attribute": "data-id"}],
        "fields": [
            {"name": "title", "selector": "h2", "type": "text"},
            {"name": "price", "selector": ".price", "type": "regex", "pattern": "\\$([0-9.]+)", "default": "n/a"},
            {"name": "link", "selector": "a", "type": "attribute", "attribute": "href"},
            {"name": "maker", "selector": ".maker", "type": "nested", "fields": [
                {"name": "name", "selector": "b", "type": "text", "transform": "uppercase"},
                {"name": "html", "selector": "i", "type": "html"}
            ]},
            {"name": "tags", "selector": "li.tag", "type": "list", "fields": [
                {"name": "tag", "type": "text", "transform": "lowercase"}
            ]},
            {"name": "reviews", "selector": ".review", "type": "nested_list", "fields": [
                {"name": "body", "selector": "p", "type": "text"},
                {"name": "by", "selector": ".by", "type": "text"}
            ]},
            {"name": "stock", "selector": ".stock", "type": "text"}
        ]
    }));
    let out = extract_css(&s, LISTING);
    assert_eq!(
        out.records,
        vec![
            json!({
                "id": "p1", "title": "Blue Kettle", "price": "24.50", "link": "/p/1",
                "maker": {"name": "ACME", "html": "<i>Ltd</i>"},
                "tags": [{"tag": "kitchen"}, {"tag": "steel"}],
                "reviews": [{"body": "Good kettle, loud.", "by": "ann"}, {"body": "Loud"}]
            }),
            json!({
                "id": "p2", "title": "Red Mug", "price": "n/a", "link": "/p/2",
                "maker": {}, "tags": [], "reviews": []
            }),
        ]
    );
    assert_eq!(
        out.warnings,
        vec!["extract_css: fields[6].selector \".stock\" matched in none of the 2 records".to_string()]
    );
}

#[test]
fn no_match_is_no_records_and_a_warning_and_empty_records_are_left_out() {
    let s = schema(json!({"baseSelector": "article", "fields": [{"name": "t", "type": "text"}]}));
    let out = extract_css(&s, LISTING);
    assert!(out.records.is_empty());
    assert_eq!(
        out.warnings,
        vec!["extract_css: baseSelector \"article\" matched nothing: no records".to_string()]
    );
    // A card whose only field is missing, with no default, is no record.
    let s = schema(json!({"baseSelector": "div.card", "fields": [
        {"name": "price", "selector": ".price", "type": "text"}
    ]}));
    let out = extract_css(&s, LISTING);
    assert_eq!(out.records, vec![json!({"price": "Now $24.50 only"})]);
}

#[test]
fn text_leaves_out_scripts_and_styles_and_a_regex_without_group_gives_its_match() {
    let s = schema(json!({"baseSelector": "div.card", "fields": [
        {"name": "all", "type": "text"},
        {"name": "digits", "selector": ".price", "type": "regex", "pattern": "[0-9]+"}
    ]}));
    let out = extract_css(&s, LISTING);
    assert_eq!(out.records[1]["all"], "Red Mug details");
    assert_eq!(out.records[0]["digits"], "24");
    assert!(!out.records[1].as_object().unwrap().contains_key("digits"));
}
