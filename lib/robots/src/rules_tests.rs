//! The matching cases of RFC 9309 and of Google's reference parser's test
//! suite, read through [`Robots`] with the token `oxwright`.

use super::*;

fn robots(body: &str) -> Robots {
    robots_for("oxwright", body)
}

fn robots_for(token: &str, body: &str) -> Robots {
    let base = Url::parse("https://site.example/robots.txt").unwrap();
    Robots::parse(body.as_bytes(), &base, token, 200)
}

fn ok(r: &Robots, path: &str) -> bool {
    r.allowed(&Url::parse(&format!("https://site.example{path}")).unwrap())
}

#[test]
fn the_longest_match_wins() {
    let r = robots("User-agent: *\nDisallow: /x/\nAllow: /x/page\n");
    assert!(ok(&r, "/x/page"));
    assert!(ok(&r, "/x/pages/deeper"));
    assert!(!ok(&r, "/x/other"));
    let r = robots("User-agent: *\nAllow: /x/\nDisallow: /x/page\n");
    assert!(!ok(&r, "/x/page"));
    assert!(ok(&r, "/x/other"));
    // A wildcard pattern counts its own length.
    let r = robots("User-agent: *\nAllow: /page\nDisallow: /*.html\n");
    assert!(!ok(&r, "/page.html"));
    assert!(ok(&r, "/page"));
    let r = robots("User-agent: *\nAllow: /x/page.\nDisallow: /*.html\n");
    assert!(ok(&r, "/x/page.html"));
    assert!(!ok(&r, "/x/y.html"));
}

#[test]
fn allow_beats_disallow_of_equal_length() {
    let r = robots("User-agent: *\nDisallow: /x/page.html\nAllow: /x/page.html\n");
    assert!(ok(&r, "/x/page.html"));
    let r = robots("User-agent: *\nAllow: /x/page.html\nDisallow: /x/page.html\n");
    assert!(ok(&r, "/x/page.html"));
    let r = robots("User-agent: *\nDisallow: /\nAllow: /\n");
    assert!(ok(&r, "/anything"));
}

#[test]
fn star_matches_any_run_of_characters() {
    let r = robots("User-agent: *\nDisallow: /fish*\nDisallow: /*/private/\n");
    for path in [
        "/fish",
        "/fish.html",
        "/fish/salmon.html",
        "/fishheads",
        "/fish.php?id=1",
    ] {
        assert!(!ok(&r, path), "{path}");
    }
    for path in ["/Fish.asp", "/catfish", "/?id=fish", "/desert/fish"] {
        assert!(ok(&r, path), "{path}");
    }
    assert!(!ok(&r, "/a/private/b"));
    assert!(ok(&r, "/private/b"));
}

#[test]
fn dollar_anchors_the_end() {
    let r = robots("User-agent: *\nDisallow: /*.php$\n");
    assert!(!ok(&r, "/filename.php"));
    assert!(!ok(&r, "/folder/filename.php"));
    assert!(ok(&r, "/filename.php?parameters"));
    assert!(ok(&r, "/filename.php/"));
    assert!(ok(&r, "/windows.PHP"));
    let r = robots("User-agent: *\nAllow: /$\nDisallow: /\n");
    assert!(ok(&r, "/"));
    assert!(!ok(&r, "/page.html"));
}

#[test]
fn the_query_is_matched_the_fragment_is_not() {
    let r = robots("User-agent: *\nDisallow: /*?\nDisallow: /a$\n");
    assert!(!ok(&r, "/search?q=x"));
    assert!(ok(&r, "/search"));
    assert!(!ok(&r, "/a#frag"), "a fragment never reaches the server");
}

#[test]
fn the_group_for_the_token_else_star() {
    let body = "User-agent: *\nDisallow: /\n\nUser-agent: oxwright\nDisallow: /private\n";
    let r = robots(body);
    assert!(ok(&r, "/public"));
    assert!(!ok(&r, "/private"));
    let other = robots_for("otherbot", body);
    assert!(!ok(&other, "/public"));
    // No group at all for the token and no `*`: everything allowed.
    let r = robots("User-agent: otherbot\nDisallow: /\n");
    assert!(ok(&r, "/"));
}

#[test]
fn user_agent_matching_ignores_case() {
    let body = "User-Agent: OxWright\nDisallow: /x\n";
    assert!(!ok(&robots(body), "/x"));
    assert!(!ok(&robots_for("OXWRIGHT", body), "/x"));
    let r = robots("user-agent: *\nDISALLOW: /x\n");
    assert!(!ok(&r, "/x"));
}

#[test]
fn a_user_agent_line_matches_by_its_product_token() {
    let r = robots(
        "User-agent: oxwright/1.0 (+https://oxwright.example/bot)\nDisallow: /a\n\nUser-agent: *\nDisallow: /\n",
    );
    assert!(!ok(&r, "/a"));
    assert!(ok(&r, "/b"));
    // Google's case: "FOO BAR" is the group of "Foo".
    let r = robots_for("Foo", "User-Agent: FOO BAR\nAllow: /x/\nDisallow: /\n");
    assert!(ok(&r, "/x/y"));
    assert!(!ok(&r, "/a"));
    // A longer token is another crawler.
    let r = robots("User-agent: oxwright-images\nDisallow: /\n");
    assert!(ok(&r, "/"));
    // `* something` is still the global group.
    let r = robots("User-agent: * # everyone\nDisallow: /g\n");
    assert!(!ok(&r, "/g"));
}

#[test]
fn groups_for_the_token_are_merged() {
    let body = "User-agent: oxwright\nDisallow: /a\n\nUser-agent: other\nDisallow: /c\n\n\
                User-agent: oxwright\nDisallow: /b\n";
    let r = robots(body);
    assert!(!ok(&r, "/a"));
    assert!(!ok(&r, "/b"));
    assert!(ok(&r, "/c"));
    let r = robots("User-agent: a\nUser-agent: oxwright\nUser-agent: b\nDisallow: /x\n");
    assert!(!ok(&r, "/x"));
}

#[test]
fn rule_paths_are_case_sensitive() {
    let r = robots("User-agent: *\nDisallow: /X/\n");
    assert!(ok(&r, "/x/a"));
    assert!(!ok(&r, "/X/a"));
}

#[test]
fn an_empty_disallow_allows_everything() {
    let r = robots("User-agent: *\nDisallow:\n");
    assert!(ok(&r, "/"));
    assert!(ok(&r, "/anything"));
    assert!(ok(&robots(""), "/anything"));
}

#[test]
fn non_ascii_rules_match_percent_encoded_paths() {
    let r = robots("User-agent: *\nDisallow: /\nAllow: /foo/bar/ツ\n");
    assert!(ok(&r, "/foo/bar/%E3%83%84"));
    assert!(
        ok(&r, "/foo/bar/ツ"),
        "the URL parser encodes the path as the rule is encoded"
    );
    let r = robots("User-agent: *\nDisallow: /\nAllow: /foo/bar/%E3%83%84\n");
    assert!(ok(&r, "/foo/bar/%E3%83%84"));
    assert!(ok(&r, "/foo/bar/%e3%83%84"), "hex case does not matter");
}

#[test]
fn escaped_unreserved_characters_match_their_plain_form() {
    // RFC 9309's table: `/foo/bar/%62%61%7A` is matched as `/foo/bar/baz`.
    let r = robots("User-agent: *\nDisallow: /\nAllow: /foo/bar/%62%61%7A\n");
    assert!(ok(&r, "/foo/bar/baz"));
    assert!(ok(&r, "/foo/bar/%62%61%7a"));
    let r = robots("User-agent: *\nDisallow: /%7Ejoe/\n");
    assert!(!ok(&r, "/~joe/index.html"));
    let r = robots("User-agent: *\nDisallow: /~joe/\n");
    assert!(!ok(&r, "/%7ejoe/index.html"));
    // A reserved character stays escaped: `%2F` is not a path separator.
    let r = robots("User-agent: *\nDisallow: /a/b\n");
    assert!(ok(&r, "/a%2Fb"));
}

#[test]
fn crawl_delay_of_the_matching_group() {
    let body = "User-agent: *\nCrawl-delay: 10\n\nUser-agent: oxwright\nCrawl-delay: 2.5\nDisallow: /x\n";
    assert_eq!(robots(body).crawl_delay(), Some(Duration::from_millis(2500)));
    assert_eq!(
        robots_for("other", body).crawl_delay(),
        Some(Duration::from_secs(10))
    );
    assert_eq!(robots("User-agent: *\nDisallow: /\n").crawl_delay(), None);
    assert_eq!(robots("User-agent: *\nCrawl-delay: inf\n").crawl_delay(), None);
    assert_eq!(robots("User-agent: *\nCrawl-delay: soon\n").crawl_delay(), None);
}

#[test]
fn sitemaps_belong_to_no_group() {
    let r =
        robots("User-agent: other\nSitemap: /s1.xml\nDisallow: /\n\nSitemap: https://cdn.example/s2.xml\n");
    let got: Vec<&str> = r.sitemaps().iter().map(Url::as_str).collect();
    assert_eq!(got, ["https://site.example/s1.xml", "https://cdn.example/s2.xml"]);
}

#[test]
fn robots_txt_itself_is_always_allowed() {
    assert!(ok(&robots("User-agent: *\nDisallow: /\n"), "/robots.txt"));
    let r = Robots::unreachable("HTTP 503");
    assert!(ok(&r, "/robots.txt"));
    assert!(!ok(&r, "/"));
    assert!(ok(&Robots::unavailable("HTTP 404"), "/anything"));
}

#[test]
fn only_the_first_500_kib_are_read() {
    let mut body = String::from("User-agent: *\nDisallow: /early\n");
    while body.len() < MAX_ROBOTS_BYTES {
        body.push_str("# filler filler filler filler filler filler filler\n");
    }
    body.push_str("Disallow: /late\n");
    let r = robots(&body);
    assert!(!ok(&r, "/early"));
    assert!(ok(&r, "/late"));
}

#[test]
fn a_file_the_parser_refuses_allows_nothing() {
    let mut body = b"Sitemap: /s.xml\nUser-agent: *\nDisallow: /*".to_vec();
    body.extend(std::iter::repeat_n(b"A*", 20_000).flatten());
    body.extend(b"$\n");
    let r = Robots::parse(
        &body,
        &Url::parse("https://site.example/robots.txt").unwrap(),
        "oxwright",
        200,
    );
    assert!(
        matches!(r.source(), RobotsSource::Unparsable { .. }),
        "{:?}",
        r.source()
    );
    assert!(!ok(&r, "/"));
    assert_eq!(r.sitemaps().len(), 1);
}

#[test]
fn agent_lines_are_cut_to_their_token_and_nothing_else_changes() {
    let body = b"User-agent: Bot/2.1\r\nuseragent:x y\rDisallow: /a b\n\nUser agent : *\n# c\n";
    assert_eq!(
        String::from_utf8(agent_lines_to_tokens(body)).unwrap(),
        "User-agent: Bot\r\nUser-agent: x\rDisallow: /a b\n\nUser-agent: *\n# c\n"
    );
    let other_word = b"User-agentish: x/1\n";
    assert_eq!(agent_lines_to_tokens(other_word), other_word);
    let plain = b"User-agent: oxwright\nDisallow: /\n";
    assert_eq!(agent_lines_to_tokens(plain), plain);
}

#[test]
fn product_tokens() {
    assert!(is_product_token("oxwright"));
    assert!(is_product_token("Ox_Wright-bot"));
    assert!(!is_product_token("oxwright/1.0"));
    assert!(!is_product_token(""));
    assert!(!is_product_token("ox wright"));
}

#[test]
fn google_groups_with_rules_in_between() {
    let body = "allow: /foo/bar/\n\nuser-agent: FooBot\ndisallow: /\nallow: /x/\nuser-agent: BarBot\n\
                disallow: /\nallow: /y/\n\n\nallow: /w/\nuser-agent: BazBot\n\nuser-agent: FooBot\n\
                allow: /z/\ndisallow: /\n";
    let foo = robots_for("FooBot", body);
    assert!(ok(&foo, "/x/b"));
    assert!(ok(&foo, "/z/d"));
    assert!(!ok(&foo, "/y/c"));
    assert!(!ok(&foo, "/foo/bar/"), "a rule before any group belongs to none");
    let bar = robots_for("BarBot", body);
    assert!(ok(&bar, "/y/c"));
    assert!(ok(&bar, "/w/a"));
    assert!(!ok(&bar, "/z/d"));
    let baz = robots_for("BazBot", body);
    assert!(ok(&baz, "/z/d"));
}

#[test]
fn google_special_characters() {
    let r = robots("User-agent: *\nDisallow: /foo/bar/quz\nAllow: /foo/*/qux\n");
    assert!(!ok(&r, "/foo/bar/quz"));
    assert!(ok(&r, "/foo/quz"));
    assert!(ok(&r, "/foo//quz"));
    assert!(ok(&r, "/foo/bax/quz"));
    let r = robots("User-agent: *\nDisallow: /foo/bar$\nAllow: /foo/bar/qux\n");
    assert!(!ok(&r, "/foo/bar"));
    assert!(ok(&r, "/foo/bar/qux"));
    assert!(ok(&r, "/foo/bar/"));
    assert!(ok(&r, "/foo/bar/baz"));
    let r = robots("User-agent: *\n# Disallow: /\nDisallow: /foo/quz#qux\nAllow: /\n");
    assert!(ok(&r, "/foo/bar"));
    assert!(!ok(&r, "/foo/quz"));
}

#[test]
fn google_global_group_only_when_no_group_names_the_token() {
    let body = "user-agent: *\nallow: /\nuser-agent: FooBot\ndisallow: /\n";
    assert!(!ok(&robots_for("FooBot", body), "/x/y"));
    assert!(ok(&robots_for("BarBot", body), "/x/y"));
    let body =
        "user-agent: FooBot\nallow: /\nuser-agent: BarBot\ndisallow: /\nuser-agent: BazBot\ndisallow: /\n";
    assert!(ok(&robots_for("QuxBot", body), "/x/y"));
}
