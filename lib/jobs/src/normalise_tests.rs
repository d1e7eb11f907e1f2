//! Each normalisation rule on its own, spellings that must meet, and the
//! trap guard's two caps.

use super::*;

fn norm(s: &str) -> String {
    norm_with(s, &NormaliseRules::default())
}

fn norm_with(s: &str, rules: &NormaliseRules) -> String {
    normalise(&Url::parse(s).unwrap(), rules).into()
}

#[test]
fn scheme_and_host_lowercase_and_the_default_port_dropped() {
    assert_eq!(norm("HTTP://Example.COM:80/"), "http://example.com/");
    assert_eq!(norm("https://Example.com:443/A"), "https://example.com/A");
    assert_eq!(norm("http://example.com:443/"), "http://example.com:443/");
    assert_eq!(norm("https://example.com:8443"), "https://example.com:8443/");
    assert_eq!(norm("http://example.com"), "http://example.com/");
}

#[test]
fn international_hosts_take_their_ascii_form() {
    assert_eq!(
        norm("https://Bücher.Example/ä"),
        "https://xn--bcher-kva.example/%C3%A4"
    );
    assert_eq!(
        norm("https://xn--bcher-kva.example/%c3%a4"),
        "https://xn--bcher-kva.example/%C3%A4"
    );
    assert_eq!(norm("https://ＥＸＡＭＰＬＥ.com/"), "https://example.com/");
}

#[test]
fn dot_segments_are_resolved() {
    assert_eq!(norm("http://example.com/a/./b/../c"), "http://example.com/a/c");
    assert_eq!(norm("http://example.com/../../a"), "http://example.com/a");
    assert_eq!(norm("http://example.com/a/%2E%2E/b"), "http://example.com/b");
    assert_eq!(norm("http://example.com/a/%2e/b/"), "http://example.com/a/b/");
}

#[test]
fn escapes_of_unreserved_characters_are_decoded() {
    assert_eq!(norm("http://example.com/%7Euser"), "http://example.com/~user");
    assert_eq!(
        norm("http://example.com/%7euser"),
        norm("http://example.com/~user")
    );
    assert_eq!(
        norm("http://example.com/%41%62%2D%5F%2e%30"),
        "http://example.com/Ab-_.0"
    );
    assert_eq!(norm("http://example.com/?q=%7E%61"), "http://example.com/?q=~a");
}

#[test]
fn other_escapes_are_uppercased_not_decoded() {
    assert_eq!(norm("http://example.com/a%2fb"), "http://example.com/a%2Fb");
    assert_eq!(
        norm("http://example.com/%e3%83%84"),
        "http://example.com/%E3%83%84"
    );
    assert_eq!(
        norm("http://example.com/?a=%3d%26"),
        "http://example.com/?a=%3D%26"
    );
    // A stray percent sign is not an escape.
    assert_eq!(norm("http://example.com/100%25"), "http://example.com/100%25");
    assert_eq!(norm("http://example.com/?p=5%"), "http://example.com/?p=5%");
}

#[test]
fn empty_query_and_fragment_are_dropped() {
    assert_eq!(norm("http://example.com/a?"), "http://example.com/a");
    assert_eq!(norm("http://example.com/a#top"), "http://example.com/a");
    assert_eq!(norm("http://example.com/a?#"), "http://example.com/a");
    assert_eq!(norm("http://example.com/a?&&"), "http://example.com/a");
    assert_eq!(
        norm("http://example.com/a?x=1&&y=2&"),
        "http://example.com/a?x=1&y=2"
    );
}

#[test]
fn tracking_parameters_are_dropped() {
    let u = "https://example.com/p?id=7&utm_source=news&utm_medium=mail&UTM_Campaign=x&gclid=1&fbclid=2\
             &mc_cid=3&mc_eid=4&msclkid=5&_ga=6&yclid=7&igshid=8";
    assert_eq!(norm(u), "https://example.com/p?id=7");
    assert_eq!(
        norm("https://example.com/p?utm_source=x"),
        "https://example.com/p"
    );
    // Names that only look alike stay.
    assert_eq!(
        norm("https://example.com/p?utmost=1&gclid2=1"),
        "https://example.com/p?gclid2=1&utmost=1"
    );
    // An escaped name is read as its decoded form.
    assert_eq!(
        norm("https://example.com/p?utm%5fsource=x&a=1"),
        "https://example.com/p?a=1"
    );
}

#[test]
fn more_parameters_can_be_dropped_or_tracking_kept() {
    let rules = NormaliseRules {
        drop_params: vec!["sessionid".into(), "sort_*".into()],
        ..NormaliseRules::default()
    };
    assert_eq!(
        norm_with(
            "https://example.com/p?SessionID=a&sort_by=x&sort_dir=up&page=2",
            &rules
        ),
        "https://example.com/p?page=2"
    );
    let keep = NormaliseRules {
        keep_tracking: true,
        ..NormaliseRules::default()
    };
    assert_eq!(
        norm_with("https://example.com/p?utm_source=x", &keep),
        "https://example.com/p?utm_source=x"
    );
}

#[test]
fn parameters_are_sorted_by_name_keeping_repeats_in_order() {
    assert_eq!(
        norm("http://example.com/?b=1&a=2&c=3"),
        "http://example.com/?a=2&b=1&c=3"
    );
    assert_eq!(
        norm("http://example.com/?t=2&a=1&t=1"),
        "http://example.com/?a=1&t=2&t=1"
    );
    assert_eq!(
        norm("http://example.com/?flag&a=1"),
        "http://example.com/?a=1&flag"
    );
    let unsorted = NormaliseRules {
        sort_query: false,
        ..NormaliseRules::default()
    };
    assert_eq!(
        norm_with("http://example.com/?b=1&a=2", &unsorted),
        "http://example.com/?b=1&a=2"
    );
}

#[test]
fn ignore_query_drops_it_whole() {
    let rules = NormaliseRules {
        ignore_query: true,
        ..NormaliseRules::default()
    };
    assert_eq!(
        norm_with("http://example.com/a?b=1&c=2#f", &rules),
        "http://example.com/a"
    );
}

#[test]
fn spellings_of_one_document_meet() {
    let spellings = [
        "HTTP://WWW.Example.COM:80/a/./b/../%7Euser/page?utm_source=x&y=2&x=1#section",
        "http://www.example.com/a/~user/page?x=1&y=2",
        "http://www.example.com/a/%7euser/page?y=2&x=1&fbclid=abc",
        "http://www.example.com:80/a/c/../%7Euser/./page?x=1&&y=2&",
    ];
    let first = norm(spellings[0]);
    assert_eq!(first, "http://www.example.com/a/~user/page?x=1&y=2");
    for s in spellings {
        assert_eq!(norm(s), first, "{s}");
    }
}

#[test]
fn normalising_twice_changes_nothing() {
    for s in [
        "HTTP://Example.COM:80/a/./b/../c?b=%7e&a=%2f#x",
        "https://Bücher.example/ツ?q=ä&utm_term=1",
        "http://example.com/a%2Fb/%2E%2E/c?",
        "http://example.com/?a=1&a=0&b",
    ] {
        let once = normalise(&Url::parse(s).unwrap(), &NormaliseRules::default());
        let twice = normalise(&once, &NormaliseRules::default());
        assert_eq!(once, twice, "{s}");
    }
}

#[test]
fn rules_have_documented_defaults_and_refuse_unknown_keys() {
    let rules: NormaliseRules = serde_json::from_str("{}").unwrap();
    assert_eq!(rules, NormaliseRules::default());
    assert!(rules.sort_query && !rules.ignore_query && !rules.keep_tracking);
    assert!(serde_json::from_str::<NormaliseRules>(r#"{"ignore_qeury": true}"#).is_err());
    let limits: TrapLimits = serde_json::from_str("{}").unwrap();
    assert_eq!(limits.max_url_len, 2_048);
    assert_eq!(limits.max_query_variants, 50);
}

#[test]
fn the_guard_turns_away_overlong_urls() {
    let mut g = TrapGuard::default();
    assert_eq!(g.limits(), TrapLimits::default());
    let base = "https://example.com/";
    let fits = Url::parse(&format!("{base}{}", "a".repeat(2_048 - base.len()))).unwrap();
    assert_eq!(fits.as_str().len(), 2_048);
    assert!(g.admit(&fits).is_ok());
    let over = Url::parse(&format!("{base}{}", "a".repeat(2_049 - base.len()))).unwrap();
    let err = g.admit(&over).unwrap_err();
    assert_eq!(
        err,
        Trap::TooLong {
            len: 2_049,
            limit: 2_048
        }
    );
    assert_eq!(err.kind(), crate::ErrorKind::ResourceLimit);
}

#[test]
fn the_guard_caps_query_variants_per_path() {
    let mut g = TrapGuard::new(TrapLimits::default());
    let u = |q: &str| Url::parse(&format!("https://example.com/calendar{q}")).unwrap();
    assert!(g.admit(&u("")).is_ok(), "no query is one variant");
    for day in 1..50 {
        assert!(g.admit(&u(&format!("?day={day}"))).is_ok(), "{day}");
    }
    assert_eq!(g.variants_of(&u("")), 50);
    let err = g.admit(&u("?day=50")).unwrap_err();
    assert_eq!(
        err,
        Trap::TooManyVariants {
            path: "https://example.com/calendar".into(),
            limit: 50
        }
    );
    // Seen variants stay admitted; other paths have their own count.
    assert!(g.admit(&u("?day=7")).is_ok());
    assert!(g.admit(&u("")).is_ok());
    assert!(
        g.admit(&Url::parse("https://example.com/other?day=50").unwrap())
            .is_ok()
    );
    assert!(
        g.admit(&Url::parse("https://www.example.com/calendar?day=50").unwrap())
            .is_ok()
    );
    assert_eq!(g.variants_of(&u("?anything")), 50);
}

#[test]
fn the_guard_counts_normalised_spellings_once() {
    let mut g = TrapGuard::new(TrapLimits {
        max_url_len: 2_048,
        max_query_variants: 1,
    });
    let rules = NormaliseRules::default();
    let a = normalise(
        &Url::parse("https://example.com/p?b=1&a=1&utm_source=x").unwrap(),
        &rules,
    );
    let b = normalise(&Url::parse("https://EXAMPLE.com/p?a=1&b=1#top").unwrap(), &rules);
    assert!(g.admit(&a).is_ok());
    assert!(g.admit(&b).is_ok());
    assert!(
        g.admit(&normalise(
            &Url::parse("https://example.com/p?a=2").unwrap(),
            &rules
        ))
        .is_err()
    );
}

#[test]
fn escape_normalisation_keeps_bytes_it_does_not_decode() {
    assert_eq!(normalise_escapes(b"/%7e%2f%zz%4"), b"/~%2F%zz%4");
    assert_eq!(normalise_escapes(b"\xff%41"), b"\xffA");
}
