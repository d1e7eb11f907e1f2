use clap::Parser;
use oxwright_jobs::{BlockResource, ContentMode, LinkStyle, Viewport};

use super::*;

#[derive(Debug, Parser)]
struct Cli {
    #[command(flatten)]
    fetch: FetchArgs,
}

fn url() -> url::Url {
    "https://a.example/".parse().unwrap()
}

fn parse(args: &[&str]) -> Result<FetchSpec, clap::Error> {
    let mut all = vec!["x"];
    all.extend_from_slice(args);
    Cli::try_parse_from(all).map(|cli| cli.fetch.spec_with(url(), &FetchDefaults::default()))
}

#[test]
fn flags_with_a_syntax_of_their_own_build_the_spec() {
    let spec = parse(&[
        "--include",
        "article",
        "--include",
        ".post",
        "--exclude",
        ".ad",
        "--keep-overlays",
        "--header",
        "X-Team: blue: green",
        "--cookie",
        "s=a=b",
        "--user-agent",
        "Bot/1",
        "--locale",
        "de-DE",
        "--timezone",
        "Asia/Tokyo",
        "--viewport",
        "800x600",
        "--mobile",
        "--basic-auth",
        "ada:pa:ss",
        "--basic-auth-host",
        "a.example:8443",
        "--headed",
        "--retry-count",
        "4",
    ])
    .unwrap();
    assert_eq!(spec.include, ["article", ".post"]);
    assert_eq!(spec.exclude, [".ad"]);
    assert!(spec.keep_overlays && spec.mobile && !spec.headless);
    assert_eq!(spec.retry_count, 4, "the option's own name is an alias");
    assert_eq!(spec.headers["X-Team"], "blue: green");
    assert_eq!(
        (spec.cookies[0].name.as_str(), spec.cookies[0].value.as_str()),
        ("s", "a=b")
    );
    assert_eq!(
        spec.viewport,
        Some(Viewport {
            width: 800,
            height: 600
        })
    );
    let auth = spec.basic_auth.unwrap();
    assert_eq!((auth.username.as_str(), auth.password.as_str()), ("ada", "pa:ss"));
    assert_eq!(auth.host.as_deref(), Some("a.example:8443"));
    for bad in [
        &["--viewport", "800"][..],
        &["--viewport", "0x5"],
        &["--header", "novalue"],
        &["--cookie", "x"],
        &["--action", "clik: button \"Go\""],
        &["--action", "fill: textbox \"Password\" = {{PASSWORD}}"],
        &["--basic-auth-host", "a.example"],
        &["--timeout-ms", "0"],
        &["--timeout-ms", "600001"],
        &["--retries", "11"],
        &["--wait-ms", "soon"],
    ] {
        assert!(parse(bad).is_err(), "{bad:?}");
    }
}

#[test]
fn every_kind_of_option_is_a_flag_of_its_type() {
    let spec = parse(&[
        "--timeout-ms",
        "5000",
        "--block",
        "image,font",
        "--include",
        "main, article",
        "--include",
        "aside",
        "--content",
        "full",
        "--link-style",
        "text",
        "--action",
        "click: button \"Accept\"",
        "--action",
        " wait: text \"Item 40\" ",
        "--max-age-ms",
        "60000",
    ])
    .unwrap();
    assert_eq!(spec.timeout_ms, 5000);
    assert_eq!(spec.block_resources, [BlockResource::Image, BlockResource::Font]);
    assert_eq!(spec.include, ["main, article", "aside"]);
    assert_eq!(spec.content, ContentMode::Full);
    assert_eq!(spec.link_style, LinkStyle::Text);
    assert_eq!(
        spec.actions,
        ["click: button \"Accept\"", "wait: text \"Item 40\""]
    );
    assert_eq!(spec.max_age_ms, 60_000);
    for bad in [
        &["--content", "most"][..],
        &["--block", "image,sound"],
        &["--link-style", "footnotes"],
    ] {
        let err = parse(bad).unwrap_err().to_string();
        assert!(
            err.contains(bad[1].split(',').next_back().unwrap()),
            "{bad:?}: {err}"
        );
    }
}

#[test]
fn no_flag_leaves_every_option_at_the_jobs_default() {
    assert_eq!(parse(&[]).unwrap(), FetchSpec::new(url()));
}

#[test]
fn a_typed_flag_wins_over_the_config_and_the_config_over_the_default() {
    let defaults: FetchDefaults = toml::from_str("link_style = \"text\"\nretry_count = 5").unwrap();
    let typed = Cli::try_parse_from(["x", "--link-style", "inline"]).unwrap();
    let spec = typed.fetch.spec_with(url(), &defaults);
    assert_eq!(spec.link_style, LinkStyle::Inline);
    assert_eq!(spec.retry_count, 5);
    let untyped = Cli::try_parse_from(["x"]).unwrap();
    assert_eq!(
        untyped.fetch.spec_with(url(), &defaults).link_style,
        LinkStyle::Text
    );
    // A flag typed at its default still wins.
    let back = Cli::try_parse_from(["x", "--retries", "2"]).unwrap();
    assert_eq!(back.fetch.spec_with(url(), &defaults).retry_count, 2);
}

/// `--help` gives each option's default as the job's schema (and so the
/// OpenAPI document, the manual's table and the example config) states it.
#[test]
fn help_states_each_default_the_schema_states() {
    let help = <Cli as clap::CommandFactory>::command()
        .render_long_help()
        .to_string();
    let flat = help.split_whitespace().collect::<Vec<_>>().join(" ");
    let schema = oxwright_jobs::schema::fetch_options_schema();
    let mut stated = 0;
    for option in all() {
        let Some(text) = option.default_text() else {
            continue;
        };
        assert_eq!(
            schema["properties"][&option.name]["default"],
            option.default().cloned().unwrap(),
            "{}",
            option.name
        );
        let summary = option.summary().split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            flat.contains(&format!("{summary} [default: {text}]")),
            "--{} does not state its default {text}: {flat}",
            option.long()
        );
        stated += 1;
    }
    assert!(stated >= 15, "{stated}");
}

#[test]
fn a_value_is_read_by_its_options_type() {
    let number = serde_json::json!({"type": "integer"});
    assert_eq!(typed(&number, &["12".into()]), Ok(Value::from(12)));
    assert!(typed(&number, &["twelve".into()]).is_err());
    let list = serde_json::json!({"type": "array", "items": {"type": "string"}});
    assert_eq!(
        typed(&list, &["a, b".into(), "c".into()]),
        Ok(serde_json::json!(["a, b", "c"]))
    );
    let object = serde_json::json!({"type": "object"});
    assert_eq!(
        typed(&object, &[r#"{"width": 3}"#.into()]),
        Ok(serde_json::json!({"width": 3}))
    );
}

#[test]
fn a_saved_login_gives_its_live_cookies_beside_the_cookie_flags() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.json");
    let future = chrono::Utc::now().timestamp() + 3600;
    std::fs::write(
        &path,
        serde_json::to_vec(&json!({
            "cookies": [
                {"name": "sid", "value": "s3ss10n-value", "domain": ".a.example", "path": "/app",
                 "expires": future, "httpOnly": true, "secure": true, "sameSite": "Lax"},
                {"name": "lang", "value": "de", "domain": "a.example", "path": "/", "expires": -1,
                 "httpOnly": false, "secure": false, "sameSite": "Lax"},
                {"name": "old", "value": "gone", "domain": "a.example", "path": "/", "expires": 1000,
                 "httpOnly": false, "secure": false, "sameSite": "Lax"}
            ],
            "origins": [{"origin": "https://a.example", "localStorage": [{"name": "k", "value": "v"}]}]
        }))
        .unwrap(),
    )
    .unwrap();
    let spec = parse(&["--cookie", "ab=1", "--storage-state", path.to_str().unwrap()]).unwrap();
    let cookies: Vec<_> = spec
        .cookies
        .iter()
        .map(|c| (c.name.as_str(), c.domain.as_deref(), c.path.as_deref(), c.secure))
        .collect();
    assert_eq!(
        cookies,
        [
            ("ab", None, None, false),
            ("sid", Some(".a.example"), Some("/app"), true),
            ("lang", Some("a.example"), Some("/"), false),
        ],
        "the expired cookie is left out"
    );
    std::fs::write(&path, b"{\"cookies\": [{\"name\": \"x\"}]}").unwrap();
    let err = parse(&["--storage-state", path.to_str().unwrap()])
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("storage state") && err.contains("state.json"),
        "{err}"
    );
}
